"""The ``evolax`` command line: train, eval, plot, render, configs."""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from evolax import __version__
from evolax.config import (
    ALGORITHMS,
    OPTIMIZERS,
    POLICIES,
    PRESETS,
    TASKS,
    build_trainer,
    resolve,
)
from evolax.data.mnist import DATA_DIR_ENV as DATA_ENV
from evolax.policies.mlp import OUTPUT_ACTIVATIONS
from evolax.sharding import initialize_distributed, request_cpu_devices

EVAL_STREAM = 2  # key stream of `evolax eval` / `render` episodes (training uses 0, tests 1)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def _sizes(text: str) -> list[int]:
    parts = text.split(",")
    try:
        sizes = [int(s) for s in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, e.g. 64,64, got {text!r}"
        ) from None
    if any(s <= 0 for s in sizes):
        raise argparse.ArgumentTypeError(f"sizes must be positive, got {text!r}")
    return sizes


class _Parser(argparse.ArgumentParser):
    """Usage mistakes in one line that points to ``--help``, not the whole usage text."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


# Flags that override configuration keys; their defaults are None ("not given").
_CONFIG_FLAGS: list[tuple[str, dict[str, Any]]] = [
    ("--hard", {"action": "store_const", "const": True, "help": "cart-pole: hard initial states"}),
    ("--max-steps", {"type": _positive_int, "help": "episode length limit"}),
    ("--batch-size", {"type": _positive_int, "help": "supervised tasks: training batch size"}),
    ("--data-dir", {"help": "folder with the dataset files (default: $EVOLAX_DATA_DIR, cache)"}),
    ("--policy", {"choices": sorted(POLICIES), "help": "policy network"}),
    ("--algo", {"choices": sorted(ALGORITHMS), "help": "algorithm"}),
    ("--pop-size", {"type": _positive_int, "help": "population size"}),
    (
        "--optimizer",
        {
            "choices": sorted(OPTIMIZERS),
            "help": "centre optimizer (evojax_adam: EvoJAX's PGPE's Adam)",
        },
    ),
    ("--center-lr", {"type": _finite_float, "help": "centre learning rate"}),
    ("--std-lr", {"type": _finite_float, "help": "standard-deviation learning rate"}),
    ("--init-std", {"type": _finite_float, "help": "initial standard deviation"}),
    ("--std-max-change", {"type": _finite_float, "help": "bound on the relative std change"}),
    ("--max-speed", {"type": _finite_float, "help": "clipup: speed limit (default 2 x center lr)"}),
    ("--hidden-sizes", {"type": _sizes, "help": "MLP widths, e.g. 64,64"}),
    ("--top-directions", {"type": _positive_int, "help": "ars: directions kept (b)"}),
    ("--grid-shape", {"type": _sizes, "help": "map_elites: cells per descriptor, e.g. 32,32"}),
    (
        "--output-activation",
        {"choices": sorted(OUTPUT_ACTIVATIONS), "help": "MLP output activation"},
    ),
    ("--hidden-size", {"type": _positive_int, "help": "LSTM width (seq2seq policy)"}),
    ("--n-digits", {"type": _positive_int, "help": "seq2seq: digits per operand"}),
    ("--n-triangles", {"type": _positive_int, "help": "image_approximation: triangles"}),
    ("--canvas-size", {"type": _sizes, "help": "image_approximation: height,width"}),
    ("--target", {"help": "image_approximation: target image file (default: a photograph)"}),
    ("--brax-env", {"help": "brax: environment name (ant, halfcheetah, humanoid, ...)"}),
    ("--brax-backend", {"help": "brax: physics backend (mjx, generalized, positional, spring)"}),
    ("--n-agents", {"type": _positive_int, "help": "waterworld_ma: agents per pool"}),
    ("--n-repeats", {"type": _positive_int, "help": "episodes per individual"}),
    (
        "--pop-chunk",
        {"type": _positive_int, "help": "individuals evaluated at a time (default: timed)"},
    ),
    ("--init-scale", {"type": _finite_float, "help": "scale of the initial parameters (0: zero)"}),
    (
        "--cpu-devices",
        {
            "type": _positive_int,
            "help": "on a CPU host: XLA devices to create (default: 1 per core)",
        },
    ),
    ("--normalize-obs", {"action": "store_const", "const": True, "help": "normalise obs"}),
    ("--generations", {"type": _positive_int, "help": "generation to train up to"}),
    ("--seed", {"type": int, "help": "random seed"}),
    (
        "--seeds",
        {
            "type": _positive_int,
            "help": "train this many seeds (--seed, --seed + 1, ...) as one vmapped program",
        },
    ),
    ("--log-interval", {"type": _positive_int, "help": "generations per compiled chunk"}),
    ("--test-interval", {"type": _positive_int, "help": "generations between tests"}),
    ("--test-episodes", {"type": _positive_int, "help": "episodes per test"}),
    ("--checkpoint-interval", {"type": _positive_int, "help": "generations between checkpoints"}),
    ("--keep-checkpoints", {"type": _positive_int, "help": "recent checkpoints to keep"}),
]
# what a resumed run may change (results do not depend on the device count)
_RESUMABLE = {"generations", "cpu_devices"}


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="evolax", description="Neuroevolution in JAX.")
    parser.add_argument("--version", action="version", version=f"evolax {__version__}")
    debug = _Parser(add_help=False)
    debug.add_argument("--debug", action="store_true", help="show the traceback of an error")
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        return commands.add_parser(name, parents=[debug], **kwargs)

    p = command(
        "train",
        help="train a policy (or resume a run)",
        description="Train a policy. Settings come from DEFAULTS, then the preset (--config, "
        "or the task's default preset), then the flags given. Run `evolax configs` to list them.",
    )
    p.add_argument("task", nargs="?", choices=sorted(TASKS), help="task (default: the preset's)")
    p.add_argument("--config", choices=sorted(PRESETS), help="named preset")
    p.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue the run in RUN_DIR")
    for flag, kwargs in _CONFIG_FLAGS:
        p.add_argument(flag, default=None, **kwargs)
    p.add_argument("--run-dir", type=Path, help="output folder (default: runs/NAME-TIME)")
    p.add_argument(
        "--devices",
        type=_positive_int,
        help="devices to split the population (or else its episodes) over (default: the faster "
        "of one device and the most that split either evenly, timed at the start; on CPU "
        "there is one device per core)",
    )
    p.add_argument("--tensorboard", action="store_true", help="also write TensorBoard events")
    p.add_argument(
        "--coordinator",
        metavar="HOST:PORT",
        help="multi-process run: address of process 0 (or set JAX_COORDINATOR_ADDRESS)",
    )
    p.add_argument(
        "--num-processes", type=_positive_int, help="multi-process run: number of processes"
    )
    p.add_argument("--process-id", type=int, help="multi-process run: this process, 0-based")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    for name, help_text in [
        ("eval", "score a run's saved solution on test episodes"),
        ("render", "draw a run's saved solution acting (a GIF, or a still of predictions)"),
    ]:
        p = command(name, help=help_text, description=help_text)
        p.add_argument("run_dir", type=Path, metavar="RUN_DIR")
        p.add_argument(
            "--checkpoint", choices=["best", "latest"], default="best", help="which solution"
        )
        p.add_argument("--seed", type=int, default=0, help="seed of the episodes")
        if name == "eval":
            p.add_argument(
                "--episodes",
                type=_positive_int,
                help="test episodes (default: the run's test_episodes)",
            )
        else:
            p.add_argument(
                "--out",
                type=Path,
                help="image path (default: RUN_DIR/episode.gif, or predictions.png for a "
                "one-step task)",
            )

    p = command("plot", help="write a run's learning curves as a PNG")
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    p.add_argument("--out", type=Path, help="PNG path (default: RUN_DIR/learning_curves.png)")

    command("configs", help="list the named presets")
    command("algos", help="list the algorithms (--algo NAME) and their settings")
    return parser


def print_if(condition: bool, text: str) -> None:
    if condition:
        print(text, flush=True)


def _fail(command: str, error: Exception) -> int:
    """Print ``error`` as one line; errors a user causes (flags, files, data, installs) carry
    their whole story in the message, anything else also names its type."""
    from evolax.checkpoint import CheckpointError

    message = " ".join(str(error).split()) or type(error).__name__
    if not isinstance(error, (ValueError, OSError, ImportError, CheckpointError)):
        message = f"{type(error).__name__}: {message} (--debug shows the traceback)"
    print(f"evolax {command}: error: {message}", file=sys.stderr)
    return 2


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    return f"evolax: warning: {' '.join(str(message).split())}\n"


def _mesh(devices: int, pop_size: int, n_repeats: int, group: int = 1):
    """A population mesh over ``devices`` devices, which must split the population into whole
    groups (``group``: individuals that share one environment) or else its ``n_repeats``
    episodes (see :func:`evolax.sharding.split_axis`)."""
    import jax

    from evolax.sharding import population_mesh, split_axis

    available = jax.devices()
    if devices > len(available):
        raise ValueError(f"--devices {devices} requested, but only {len(available)} available")
    split_axis(pop_size, n_repeats, devices, group)
    return population_mesh(available[:devices])


def _check_run_dir(run_dir: Path) -> None:
    """A run folder that can be made and written, before any work starts."""
    if run_dir.exists() and not run_dir.is_dir():
        raise ValueError(f"--run-dir {run_dir} is a file, expected a folder for the run")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"--run-dir {run_dir} cannot be made: {error.strerror}") from None
    if not os.access(run_dir, os.W_OK | os.X_OK):
        raise ValueError(f"--run-dir {run_dir} is not writable")


def _score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.5g}"


def _train(args: argparse.Namespace) -> int:
    import jax

    from evolax.runner import read_config, run_seeds, train

    overrides = {
        flag[2:].replace("-", "_"): getattr(args, flag[2:].replace("-", "_"))
        for flag, _ in _CONFIG_FLAGS
    }
    if args.resume is not None:
        changed = sorted(k for k, v in overrides.items() if v is not None and k not in _RESUMABLE)
        if changed or args.task or args.config or args.run_dir:
            raise ValueError(
                "--resume continues a run as configured; only --generations and "
                f"--cpu-devices may change (got {changed or 'a task, --config or --run-dir'})"
            )
        config = read_config(args.resume)
        config.update({k: overrides[k] for k in _RESUMABLE if overrides[k] is not None})
        run_dir = args.resume
    else:
        config = resolve(args.config, {**overrides, "task": args.task})
        name = f"{args.config or config['task'] + ('-hard' if config['hard'] else '')}"
        seeds = run_seeds(config)
        which = f"seed{seeds}" if isinstance(seeds, int) else f"seeds{seeds[0]}-{seeds[-1]}"
        name = f"{name}-{config['algo']}-{which}"
        run_dir = args.run_dir or Path("runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
        _check_run_dir(run_dir)
        if config["task"] == "mnist" and config["data_dir"] is None and os.environ.get(DATA_ENV):
            # recorded, so that eval, render and resume find the data without the variable
            config["data_dir"] = os.environ[DATA_ENV]
    # JAX has not initialised its backends yet: request the CPU devices, then join the run
    request_cpu_devices(config.get("cpu_devices") or os.cpu_count() or 1)
    distributed = initialize_distributed(args.coordinator, args.num_processes, args.process_id)
    from evolax.tasks import MultiAgentTask

    trainer = build_trainer(config)
    if args.devices is not None:
        task = trainer.task
        group = task.n_agents if isinstance(task, MultiAgentTask) else 1
        mesh = _mesh(args.devices, config["pop_size"], config["n_repeats"], group)
        trainer = dataclasses.replace(trainer, mesh=mesh)  # checked again, tasks not rebuilt
    n_devices = len(jax.devices()) if args.devices is None else args.devices
    config["devices"] = n_devices
    config["processes"] = jax.process_count()
    leader = jax.process_index() == 0
    where = f"{jax.process_count()} processes, " if distributed else ""
    print_if(
        leader,
        f"evolax {__version__}: {'resuming' if args.resume else 'training'} "
        f"{config['task']} up to generation {config['generations']} "
        f"on {where}{n_devices} {jax.devices()[0].platform} device(s) -> {run_dir}",
    )
    result = train(
        trainer,
        config["generations"],
        seed=run_seeds(config),
        log_interval=config["log_interval"],
        test_interval=config["test_interval"],
        n_test_episodes=config["test_episodes"],
        run_dir=run_dir,
        config=config,
        progress=not args.no_progress,
        checkpoint_interval=config["checkpoint_interval"],
        keep_checkpoints=config["keep_checkpoints"],
        resume=args.resume is not None,
        tensorboard=args.tensorboard,
    )
    s = result.summary
    if "seeds" in s:
        scores = (
            f"final test score over {len(s['seeds'])} seeds: median "
            f"{_score(s['final_test_median'])} (IQR {_score(s['final_test_q25'])}-"
            f"{_score(s['final_test_q75'])}); best: median {_score(s['best_test_median'])}"
        )
    else:
        scores = (
            f"final test score {_score(s['final_test_mean'])} +- "
            f"{_score(s['final_test_std'])} over {config['test_episodes']} episodes; best "
            f"{_score(s['best_test_mean'])}"
        )
    print_if(
        leader,
        f"done: generation {s['generations']} after {s['total_wall_time_s']:.1f} s "
        f"({s['generations_per_s']:.2f} gen/s; this session: compile {s['compile_s']:.1f} s, "
        f"run {s['run_s']:.1f} s, tests {s['test_s']:.1f} s, checkpoints "
        f"{s['checkpoint_s']:.1f} s; {s['env_steps_per_s']:.3g} env steps/s)\n"
        f"{scores}\nrun folder: {run_dir} (metrics.jsonl, summary.json, checkpoints/, best/)",
    )
    return 0


def _eval(args: argparse.Namespace) -> int:
    import equinox as eqx
    import jax
    import numpy as np

    from evolax.runner import run_seeds
    from evolax.runs import load_run

    config, trainer, state, meta = load_run(args.run_dir, args.checkpoint)
    loaded = meta["checkpoint"]  # the latest where best was asked for but is missing or bad
    episodes = args.episodes or config["test_episodes"]
    key = jax.random.fold_in(jax.random.key(args.seed), EVAL_STREAM)
    seeds = run_seeds(config)
    if isinstance(seeds, int):
        scores = np.asarray(eqx.filter_jit(trainer.test)(state, key, episodes))
        print(
            f"{config['task']} ({loaded} solution, generation "
            f"{int(state.generation)}): mean {scores.mean():.2f} +- {scores.std():.2f}, min "
            f"{scores.min():.2f}, max {scores.max():.2f} over {episodes} episodes"
        )
        return 0
    # every seed's solution, on the same episodes
    test = eqx.filter_jit(lambda state, key, n: jax.vmap(lambda s: trainer.test(s, key, n))(state))
    all_scores = np.asarray(test(state, key, episodes))
    generations = np.asarray(state.generation)
    for seed, generation, scores in zip(seeds, generations, all_scores, strict=True):
        print(
            f"{config['task']} seed {seed} ({loaded} solution, generation "
            f"{int(generation)}): mean {scores.mean():.2f} +- {scores.std():.2f} over "
            f"{episodes} episodes"
        )
    q25, median, q75 = np.percentile(all_scores.mean(axis=1), [25, 50, 75])
    print(f"median over {len(seeds)} seeds: {median:.2f} (IQR {q25:.2f}-{q75:.2f})")
    return 0


def _render(args: argparse.Namespace) -> int:
    import jax
    import numpy as np

    from evolax.render import render_episode
    from evolax.runner import run_seeds, seed_slice
    from evolax.runs import load_run

    config, trainer, state, meta = load_run(args.run_dir, args.checkpoint)
    seeds = run_seeds(config)
    if not isinstance(seeds, int):  # several seeds: the best-scoring one's solution
        index = int(np.argmax(np.nan_to_num(np.array(meta["best_test_mean"], float), nan=-np.inf)))
        state = seed_slice(state, index)
        print(f"drawing seed {seeds[index]}, the best-scoring of the run's seeds")
    task = trainer.evaluation_task
    # one-step (supervised) tasks are drawn as a still of the predictions
    default = "episode.html" if hasattr(task, "render_html") else "episode.gif"
    out = args.out or args.run_dir / (default if task.max_steps > 1 else "predictions.png")
    params, stats = trainer.solution(state)
    key = jax.random.fold_in(jax.random.key(args.seed), EVAL_STREAM)
    try:
        frames, episode_return = render_episode(
            trainer.policy, task, params, key, out, obs_stats=stats
        )
    except NotImplementedError as error:  # the task cannot draw itself: the user's choice
        raise ValueError(str(error)) from error
    print(f"wrote {out}: {frames} frame(s), episode return {episode_return:.4g}")
    return 0


def _plot(args: argparse.Namespace) -> int:
    from evolax.render import plot_learning_curves

    out = args.out or args.run_dir / "learning_curves.png"
    plot_learning_curves(args.run_dir / "metrics.jsonl", out)
    print(f"wrote {out}")
    return 0


def _configs(args: argparse.Namespace) -> int:
    del args
    for name, preset in PRESETS.items():
        settings = ", ".join(f"{k}={v}" for k, v in preset.items())
        print(f"{name}: {settings}")
    return 0


def _algos(args: argparse.Namespace) -> int:
    del args
    for name, entry in ALGORITHMS.items():
        summary = " ".join((entry.cls.__doc__ or "").strip().split("\n\n")[0].split())
        print(f"{name}: {entry.cls.__name__} - {summary}\n    reads: {', '.join(entry.keys)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``evolax`` command."""
    args = _parser().parse_args(argv)
    if args.command != "train":  # `train` requests its configuration's CPU devices itself
        # One XLA CPU device per core, so that the population can be split across cores (JAX
        # has not initialised its backends yet; an explicit device count in XLA_FLAGS wins).
        request_cpu_devices(os.cpu_count() or 1)
    commands = {
        "train": _train,
        "eval": _eval,
        "render": _render,
        "plot": _plot,
        "configs": _configs,
        "algos": _algos,
    }
    formatwarning, warnings.formatwarning = warnings.formatwarning, _one_line_warning
    try:
        return commands[args.command](args)
    except KeyboardInterrupt as interrupt:  # a stopped `train` says where to resume
        print(f"evolax {args.command}: {interrupt or 'interrupted'}", file=sys.stderr)
        return 130
    except Exception as error:
        if args.debug:
            raise
        return _fail(args.command, error)
    finally:
        warnings.formatwarning = formatwarning


if __name__ == "__main__":
    sys.exit(main())
