"""Pictures of a training run: episodes (GIFs, HTML viewers, or stills of one-step tasks) and
learning curves.

Everything here runs on the host. Pillow and matplotlib are imported when first needed.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

# the text helpers lived here once: still importable from evolax.render
from evolax.drawing import CHAR_SIZE as CHAR_SIZE
from evolax.drawing import draw_text as draw_text
from evolax.drawing import text_image as text_image
from evolax.normalize import ObsStats
from evolax.policies.base import Policy
from evolax.policies.team import Team, replicate
from evolax.rollout import NormalizeObs, initial_states, transition
from evolax.tasks.base import MultiAgentTask, Task
from evolax.types import Params, PRNGKey
from evolax.validation import check_positive_int


@eqx.filter_jit
def _episode(
    policy: Policy, task: Task, params: Params, key: PRNGKey, obs_stats: ObsStats | None
) -> tuple[Any, Float[Array, " steps"], Int[Array, ""]]:
    if obs_stats is not None:  # the statistics fixed: their sums are never read
        task = NormalizeObs(task, obs_stats, obs_stats.mean)
    # the first episode `evaluate` runs for `key` (its repeat 0), one step at a time
    task_state, policy_state, step_key = jax.tree.map(
        operator.itemgetter(0), initial_states(policy, task, key, 1)
    )
    params = policy.prepare(params)

    def body(carry, t):
        task_state, policy_state, alive = carry
        task_state, policy_state, reward, done = transition(
            policy, task, params, step_key, t, task_state, policy_state
        )
        return (task_state, policy_state, alive & ~done), (task_state, reward, alive)

    carry = (task_state, policy_state, jnp.ones([], bool))
    steps = jnp.arange(task.max_steps, dtype=jnp.int32)
    _, (states, rewards, alive) = jax.lax.scan(body, carry, steps)
    states = jax.tree.map(
        lambda first, rest: jnp.concatenate([first[None], rest]), task_state, states
    )
    if obs_stats is not None:
        states = states.inner
    return states, rewards, jnp.sum(alive, dtype=jnp.int32)


def episode_states(
    policy: Policy,
    task: Task,
    params: Params,
    key: PRNGKey,
    obs_stats: ObsStats | None = None,
) -> tuple[Any, Float[Array, " max_steps"], Int[Array, ""]]:
    """Run one episode of one individual and keep every task state (jitted ``lax.scan``).

    The episode is the first one :func:`evolax.evaluate` runs for ``key`` (same reset, policy
    and per-step keys), so ``rewards[:length].sum()`` is ``evaluate``'s return for
    ``n_repeats=1``. The scan always runs ``task.max_steps`` steps; states and rewards after
    the episode's end (index ``length`` of the rewards on) are past ``done`` and mean nothing.

    Args:
        policy: the policy network.
        task: the task.
        params: ONE genome pytree (no population axis).
        key: PRNG key of the episode.
        obs_stats: if given, the policy sees ``obs_stats.normalize(obs)``.

    Returns:
        ``(states, rewards, length)``: the task states stacked on a leading axis of
        ``max_steps + 1`` (the initial state first), ``f32[max_steps]`` rewards (on a
        :class:`~evolax.tasks.MultiAgentTask`, where every agent plays ``params``,
        ``f32[max_steps, n_agents]``), and the number
        of steps until the first ``done`` inclusive (``max_steps`` if none), ``i32[]``.
    """
    if isinstance(task, MultiAgentTask):  # every agent plays `params`
        policy = Team(policy, task.n_agents)
        params = replicate(params, task.n_agents)
    return _episode(policy, task, params, key, obs_stats)


def save_gif(frames: Sequence[np.ndarray], path: str | Path, fps: int = 50) -> Path:
    """Write ``frames`` (each ``uint8[H, W, 3]``, one size) as a GIF that loops forever.

    Pillow merges a frame identical to the one before it into that frame (adding its
    duration), so the file can hold fewer frames than given. Parent folders are created.

    Returns:
        The path written.
    """
    from PIL import Image

    check_positive_int("fps", fps)
    if len(frames) == 0:
        raise ValueError("frames must not be empty")
    arrays = [np.asarray(frame) for frame in frames]
    for i, frame in enumerate(arrays):
        if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
            raise ValueError(
                f"frames[{i}] must be a uint8 array of shape (H, W, 3), got {frame.dtype} "
                f"{frame.shape}"
            )
        if frame.shape != arrays[0].shape:
            raise ValueError(
                f"frames[{i}] has shape {frame.shape}, frames[0] has shape {arrays[0].shape}"
            )
    images = [Image.fromarray(frame, mode="RGB") for frame in arrays]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    images[0].save(
        path,
        format="GIF",
        save_all=True,
        append_images=images[1:],
        duration=max(1, round(1000 / fps)),
        loop=0,
    )
    return path


def check_drawable(task: Task, path: str | Path) -> None:
    """Before any episode runs: raise ``NotImplementedError`` where ``task`` cannot draw the
    picture ``path`` asks for (``.html``: ``render_html``; else ``render``)."""
    if Path(path).suffix.lower() == ".html":
        if getattr(task, "render_html", None) is None:
            raise NotImplementedError(
                f"{type(task).__name__} has no HTML viewer (render_html); write a .gif or .png"
            )
    elif not task.can_render:
        raise NotImplementedError(f"{type(task).__name__} has no renderer")


def render_episode(
    policy: Policy,
    task: Task,
    params: Params,
    key: PRNGKey,
    path: str | Path,
    obs_stats: ObsStats | None = None,
    every: int = 2,
    fps: int = 50,
) -> tuple[int, float]:
    """Draw one episode (see :func:`episode_states`) with ``task.render``.

    A ``.png`` path gets the episode's last state as a still (what a one-step task such as
    MNIST is rendered as: the batch with the policy's predictions); a ``.html`` path the
    page ``task.render_html(states)`` returns for every state ``0 .. length`` (an interactive
    viewer: :class:`~evolax.tasks.brax.Brax` writes Brax's); any other path a GIF of the states
    ``0, every, 2 * every, ...`` and always the last one (index ``length``).

    Returns:
        ``(n_frames, episode_return)``; for a ``.html`` page ``n_frames`` is ``length + 1``.

    Raises:
        NotImplementedError: if the task has no ``render`` (or, for ``.html``, no
            ``render_html``).
    """
    from PIL import Image

    check_positive_int("every", every)
    check_positive_int("fps", fps)
    check_drawable(task, path)
    suffix = Path(path).suffix.lower()
    render_html = getattr(task, "render_html", None)
    states, rewards, length = jax.device_get(episode_states(policy, task, params, key, obs_stats))
    length = int(length)
    # the agents' mean on a multi-agent task
    episode_return = float(np.mean(np.sum(np.asarray(rewards)[:length], axis=0, dtype=np.float64)))
    if suffix == ".html":
        episode = [jax.tree.map(operator.itemgetter(i), states) for i in range(length + 1)]
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(render_html(episode), encoding="utf-8")  # type: ignore[misc]
        return len(episode), episode_return
    indices = [length] if suffix == ".png" else range(0, length + 1, every)
    if indices[-1] != length:
        indices = [*indices, length]
    frames = [task.render(jax.tree.map(operator.itemgetter(i), states)) for i in indices]
    if len(indices) == 1:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(frames[0], mode="RGB").save(path)
    else:
        save_gif(frames, path, fps=fps)
    return len(frames), episode_return


def _read_metrics(metrics_path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    if not metrics_path.is_file():
        raise FileNotFoundError(f"no metrics file at {metrics_path} (expected a metrics.jsonl)")
    train_rows, test_rows = [], []
    with metrics_path.open(encoding="utf-8") as file:
        for line_number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{metrics_path}:{line_number} is not JSON: {error}") from error
            kind = row.get("kind") if isinstance(row, dict) else None
            if kind == "train":
                train_rows.append(row)
            elif kind == "test":
                test_rows.append(row)
    if not train_rows:
        raise ValueError(f"{metrics_path} has no rows with kind 'train'")
    return _last_per_generation(train_rows), _last_per_generation(test_rows)


def _last_per_generation(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows sorted by generation (and seed, in a run of several); a generation logged twice (a
    resumed run) keeps its last row."""
    last = {(row["generation"], row.get("seed", 0)): row for row in rows}
    return [last[k] for k in sorted(last)]


def _quartiles(rows: list[dict[str, Any]], name: str) -> tuple[np.ndarray, ...]:
    """Per generation, over the seeds' rows: generation, 25th, 50th, 75th percentile of ``name``
    and the median wall time."""
    generations = sorted({row["generation"] for row in rows})
    by_generation: dict[int, list[dict[str, Any]]] = {g: [] for g in generations}
    for row in rows:
        by_generation[row["generation"]].append(row)
    values = [[float(r[name]) for r in by_generation[g]] for g in generations]
    q25, q50, q75 = np.array([np.percentile(v, [25, 50, 75]) for v in values]).T
    wall = np.array(
        [np.median([float(r["wall_time"]) for r in by_generation[g]]) for g in generations]
    )
    return np.array(generations, float), q25, q50, q75, wall


def _plot_seeds(ax, train_rows, test_rows, x_name: str) -> None:
    """Median over seeds, with the interquartile range as a band."""
    n_seeds = len({row["seed"] for row in train_rows})
    for rows, name, color, label in [
        (train_rows, "fitness_mean", "tab:blue", "train mean"),
        (train_rows, "fitness_max", "tab:green", "train max"),
        (test_rows, "test_mean", "tab:red", "test mean"),
    ]:
        if not rows:
            continue
        generation, q25, q50, q75, wall = _quartiles(rows, name)
        x = generation if x_name == "generation" else wall
        marker = "o" if name == "test_mean" else None
        ax.fill_between(x, q25, q75, color=color, alpha=0.2, linewidth=0)
        ax.plot(x, q50, color=color, marker=marker, markersize=4, label=f"{label}: median")
    ax.plot([], [], color="gray", alpha=0.4, linewidth=6, label=f"IQR over {n_seeds} seeds")


def _column(rows: list[dict[str, Any]], name: str) -> np.ndarray:
    return np.array([float(row[name]) for row in rows])


def plot_learning_curves(
    metrics_path: str | Path, out_path: str | Path, *, title: str | None = None
) -> Path:
    """Plot a run's ``metrics.jsonl`` (as :func:`evolax.train` writes it) to a PNG.

    Two panels, score against generation and against wall time (s): train mean and max as
    lines over a band from train min to max, and the test mean with ``test_std`` error bars.
    For a run of several seeds (rows with a ``seed``), the median over seeds of the train mean,
    train max and test mean, each over its interquartile range.
    Rows of a kind other than ``train`` and ``test`` are ignored; a generation logged twice (a
    run resumed from an earlier checkpoint appends to the same file) keeps its last row.

    Args:
        metrics_path: the ``metrics.jsonl`` file.
        out_path: the PNG to write (parent folders are created).
        title: figure title; defaults to the name of the run folder.

    Returns:
        The path written.

    Raises:
        FileNotFoundError: if ``metrics_path`` does not exist.
        ValueError: if it has no train rows.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    metrics_path = Path(metrics_path)
    train_rows, test_rows = _read_metrics(metrics_path)

    figure = Figure(figsize=(12, 4.5))
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, 2, sharey=True)
    for ax, x_name, x_label in [
        (axes[0], "generation", "generation"),
        (axes[1], "wall_time", "wall time (s)"),
    ]:
        if "seed" in train_rows[0]:  # a run of several seeds
            _plot_seeds(ax, train_rows, test_rows, x_name)
            ax.set_xlabel(x_label)
            ax.set_title(f"score vs {x_label}")
            ax.grid(True, alpha=0.3)
            ax.legend(loc="lower right")
            continue
        x = _column(train_rows, x_name)
        ax.fill_between(
            x,
            _column(train_rows, "fitness_min"),
            _column(train_rows, "fitness_max"),
            color="tab:blue",
            alpha=0.2,
            linewidth=0,
            label="train min-max",
        )
        ax.plot(x, _column(train_rows, "fitness_mean"), color="tab:blue", label="train mean")
        ax.plot(x, _column(train_rows, "fitness_max"), color="tab:green", label="train max")
        if test_rows:
            ax.errorbar(
                _column(test_rows, x_name),
                _column(test_rows, "test_mean"),
                yerr=_column(test_rows, "test_std"),
                color="tab:red",
                marker="o",
                markersize=4,
                capsize=3,
                linestyle="-",
                label="test mean ± std",
            )
        ax.set_xlabel(x_label)
        ax.set_title(f"score vs {x_label}")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right")
    axes[0].set_ylabel("score")
    figure.suptitle(title if title is not None else f"learning curves: {metrics_path.parent.name}")
    figure.tight_layout()

    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out_path, dpi=120, format="png")
    return out_path


def plot_pareto_front(front_path: str | Path, out_path: str | Path) -> Path:
    """Plot a multi-objective run's last population (``pareto_front.json``, as
    :func:`evolax.train` writes it) to a PNG: one panel per pair of objectives, every member
    a point and the non-dominated ones (of each seed) marked.

    Returns:
        The path written.
    """
    import json

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    record = json.loads(Path(front_path).read_text())
    objectives = np.asarray(record["objectives"], np.float64)
    front = np.asarray(record["pareto_front"], bool)
    if objectives.ndim == 2:  # one seed
        objectives, front = objectives[None], front[None]
    seeds = record.get("seeds", [None])
    m = objectives.shape[-1]
    pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
    figure = Figure(figsize=(4.5 * len(pairs), 4.2))
    FigureCanvasAgg(figure)
    axes = np.atleast_1d(figure.subplots(1, len(pairs)))
    for ax, (i, j) in zip(axes, pairs, strict=True):
        for k, seed in enumerate(seeds):
            ok = np.all(np.isfinite(objectives[k]), axis=-1)
            label = "" if seed is None else f"seed {seed}"
            points = ax.scatter(
                objectives[k, ok & ~front[k], i], objectives[k, ok & ~front[k], j], s=10,
                alpha=0.35, label=f"{label} dominated".strip(),
            )  # fmt: skip
            ax.scatter(
                objectives[k, ok & front[k], i], objectives[k, ok & front[k], j], s=22,
                color=points.get_facecolor()[0][:3], edgecolor="black", linewidth=0.5,
                label=f"{label} non-dominated".strip(),
            )  # fmt: skip
        ax.set_xlabel(f"objective {i}")
        ax.set_ylabel(f"objective {j}")
        ax.grid(True, alpha=0.3)
    axes[0].legend(loc="best", fontsize="small")
    generation = record.get("generation")
    figure.suptitle(f"population at generation {generation} (both maximised)")
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out_path, dpi=120, format="png", bbox_inches="tight")
    return out_path


def plot_archive(archive_path: str | Path, out_path: str | Path) -> Path:
    """Plot a quality-diversity run's elites (``archive.json``, as :func:`evolax.train` writes
    it) over their first two descriptor dimensions, coloured by fitness: a heatmap of the
    cells for a grid archive, a scatter of the elites otherwise; one panel per seed.

    Returns:
        The path written.
    """
    import json

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    record = json.loads(Path(archive_path).read_text())
    runs = record["elites"] if "seeds" in record else [record["elites"]]
    seeds = record.get("seeds", [None])
    values = [f for run in runs for f in run["fitness"]]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    figure = Figure(figsize=(4.6 * len(runs), 4.2))
    FigureCanvasAgg(figure)
    axes = np.atleast_1d(figure.subplots(1, len(runs)))
    grid = record.get("grid_shape")
    image = None
    for ax, run, seed in zip(axes, runs, seeds, strict=True):
        fitness = np.asarray(run["fitness"], np.float64)
        descriptors = np.asarray(run["descriptors"], np.float64).reshape(len(fitness), -1)
        if descriptors.shape[1] < 2 and len(fitness):
            descriptors = np.concatenate([descriptors, np.zeros_like(descriptors)], axis=1)
        if grid is not None and len(grid) == 2:
            lo, hi = np.asarray(record["descriptor_low"]), np.asarray(record["descriptor_high"])
            cells = np.clip(
                ((descriptors[:, :2] - lo) / (hi - lo) * grid).astype(int), 0, np.asarray(grid) - 1
            )
            heat = np.full(grid, np.nan)
            heat[cells[:, 0], cells[:, 1]] = fitness
            extent = (lo[0], hi[0], lo[1], hi[1])
            image = ax.imshow(
                heat.T, origin="lower", extent=extent, vmin=low, vmax=high, cmap="viridis",
                aspect="auto", interpolation="nearest",
            )  # fmt: skip
        else:
            image = ax.scatter(
                descriptors[:, 0], descriptors[:, 1], c=fitness, s=8, vmin=low, vmax=high,
                cmap="viridis", marker="s",
            )  # fmt: skip
        coverage = len(fitness) / record["n_cells"]
        title = f"{len(fitness)} elites, coverage {coverage:.1%}"
        ax.set_title(title if seed is None else f"seed {seed}: {title}", fontsize="small")
        ax.set_xlabel("descriptor 0")
        ax.set_ylabel("descriptor 1")
    if image is not None:
        figure.colorbar(image, ax=list(axes), label="fitness")
    figure.suptitle(f"archive at generation {record.get('generation')}")
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out_path, dpi=120, format="png", bbox_inches="tight")
    return out_path


def plot_network(network: dict[str, Any], out_path: str | Path) -> Path:
    """Draw a NEAT network (:meth:`evolax.policies.NEATNetwork.export`'s dict): inputs on the
    left, outputs on the right, hidden nodes at their depth; enabled connections as arrows,
    blue positive and red negative, as thick as ``|weight|`` (disabled ones dotted).

    Returns:
        The path written.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    links = [(c["in"], c["out"]) for c in network["connections"] if c["enabled"]]
    depth = {i: 0 for i in network["inputs"]}
    ids = [*network["inputs"], *(n["id"] for n in network["nodes"])]
    for _ in ids:  # longest path from the inputs (bounded: a recurrent genome's cycles stop)
        for a, b in links:
            if a in depth and a != b and depth.get(b, -1) < depth[a] + 1 <= len(ids):
                depth[b] = depth[a] + 1
    last = max([depth.get(n, 1) for n in ids] + [1]) + 1
    column = {n: (last if n in network["outputs"] else depth.get(n, 1)) for n in ids}
    rows: dict[int, list[int]] = {}
    for n in ids:
        rows.setdefault(column[n], []).append(n)
    where = {
        n: (x, (k + 1) / (len(members) + 1))
        for x, members in rows.items()
        for k, n in enumerate(sorted(members))
    }
    figure = Figure(figsize=(2 + 1.5 * last, 4))
    FigureCanvasAgg(figure)
    ax = figure.subplots()
    scale = max([abs(c["weight"]) for c in network["connections"]] + [1e-9])
    for c in network["connections"]:
        (x0, y0), (x1, y1) = where[c["in"]], where[c["out"]]
        ax.annotate(
            "",
            xy=(x1, y1),
            xytext=(x0, y0),
            arrowprops={
                "arrowstyle": "->",
                "color": "tab:blue" if c["weight"] >= 0 else "tab:red",
                "lw": 0.5 + 3 * abs(c["weight"]) / scale,
                "linestyle": "-" if c["enabled"] else ":",
                "alpha": 0.9 if c["enabled"] else 0.4,
                "connectionstyle": "arc3,rad=0.4" if c["in"] == c["out"] else "arc3",
            },
        )
    kinds = {n["id"]: n["activation"] for n in network["nodes"]}
    for n, (x, y) in where.items():
        role = "input" if n in network["inputs"] else kinds.get(n, "")
        ax.scatter([x], [y], s=500, color="white", edgecolors="black", zorder=3)
        ax.text(x, y, str(n), ha="center", va="center", zorder=4, fontsize=8)
        ax.text(x, y - 0.07, role, ha="center", va="top", fontsize=6, color="gray")
    ax.set_xlim(-0.5, last + 0.5)
    ax.set_ylim(-0.05, 1.05)
    ax.axis("off")
    n_enabled = len(links)
    ax.set_title(f"{len(network['nodes'])} nodes, {n_enabled} enabled connections", fontsize=9)
    out = Path(out_path)
    figure.savefig(out, dpi=120, bbox_inches="tight")
    return out
