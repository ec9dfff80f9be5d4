"""Every preset as a library user composes it, with default settings, against the preset's
tuned evaluation layout: seconds per generation side by side, and what the automatic choice
costs.

For each preset two worker processes build the preset's `Trainer` (`evolax.config.
build_trainer`, with JAX given one CPU device per core by `evolax.use_cpu_cores()`):

- `default`: the library's defaults, `mesh="auto"` and `pop_chunk="auto"`, placed as
  `evolax.train` places them: the layout is measured once the state is made
  (`evolax.placement.place`), with an empty cache folder;
- `tuned`: the layout the presets set by hand at 0.1.0: MNIST on one CPU device one individual
  at a time, image approximation in groups of 16, everything else the whole population at
  once over the most devices that split it (as the CLI did).

Each worker reports the time from `Trainer.init` to the end of its first generation (tuning,
compilation and one generation), the tuning's own seconds, and then seconds per generation
over alternating timing rounds (`side_by_side.py`). The tuning's share is taken of a
100-generation run's wall time: of `evolax train PRESET --generations 100` (with its own
tuning, from a fresh cache), timed from the command's start, where that takes under
`--cli-limit` seconds by the estimate; else of the estimate, the worker's first-generation
time plus 99 median generations (which leaves out the command's start, tests and
checkpoints). Writes `benchmarks/results/default_layout.json` and `docs/results/default_layout.md`.

    python benchmarks/default_layout.py                   # every preset (about 25 minutes)
    python benchmarks/default_layout.py cartpole_easy mnist
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from results_table import RESULTS, previous_rows, write_results
from side_by_side import serve, time_workers

#: The layouts the presets set by hand at 0.1.0: (CPU devices, pop_chunk); None: as the CLI
#: did (all devices that split the population, the whole of each device's share at once).
TUNED = {"mnist": (1, 1), "image_approximation": (None, 16)}
#: Presets too big for 2 cores (a generation of `ant` is 16 million Brax steps, about 23
#: minutes; of `seq2seq` about 60 s) are measured at these sizes.
SIZED = {
    "ant": {"algorithm.pop_size": 64, "trainer.n_repeats": 2, "task.max_steps": 200},
    "seq2seq": {"algorithm.pop_size": 128},
}
#: Generations per timing round and rounds, per preset (cheap presets: more).
ROUNDS = {
    "cartpole_easy": (10, 3),
    "cartpole_hard": (10, 3),
    "image_approximation": (10, 3),
    "mnist": (2, 2),
    "waterworld": (1, 2),
    "waterworld_ma": (2, 2),
    "ant": (1, 2),
    "seq2seq": (1, 1),
}


def worker(preset: str, mode: str) -> None:
    import evolax

    devices = TUNED.get(preset, (None, None))[0] if mode == "tuned" else None
    evolax.use_cpu_cores(devices)
    import jax

    from evolax.config import build_trainer, resolve
    from evolax.layout import Layout
    from evolax.placement import choose_layout
    from evolax.rollout.teams import agents_per_unit
    from evolax.sharding import default_mesh
    from side_by_side import evolax_timer

    config = resolve(preset, [f"{k}={v}" for k, v in SIZED.get(preset, {}).items()])
    trainer = build_trainer(config)
    if mode == "tuned":
        group = agents_per_unit(trainer.task)
        mesh = default_mesh(trainer.algorithm.pop_size, trainer.n_repeats, group)
        n_devices = 1 if mesh is None else mesh.size
        local = trainer.algorithm.pop_size // n_devices if trainer.split == "pop" else None
        chunk = TUNED.get(preset, (None, None))[1] or local or trainer.algorithm.pop_size
        trainer = trainer.with_layout(Layout(n_devices, chunk))
    start = time.perf_counter()
    state = trainer.init(jax.random.key(config["run"]["seed"]))
    choice = choose_layout(trainer, state)
    trainer = trainer.with_layout(choice.layout)

    def info() -> dict:  # after serve's first (compiling) generation
        return {
            "first_generation_s": time.perf_counter() - start,
            "tuning_s": choice.tuning_seconds,
            "layout": [choice.layout.devices, choice.layout.pop_chunk],
            "source": choice.source,
            "candidates": [[c.devices, c.pop_chunk, s] for c, s in choice.timings],
        }

    serve(evolax_timer(trainer, state), info)


def cli_run(preset: str, cache: str) -> tuple[float, dict]:
    """Wall seconds of `evolax train PRESET --generations 100` and its summary.json."""
    with tempfile.TemporaryDirectory() as run_dir:
        env = {**os.environ, "XDG_CACHE_HOME": cache}
        command = ["evolax", "train", "--config", preset, "--generations", "100"]
        command += [f"{key}={value}" for key, value in SIZED.get(preset, {}).items()]
        command += ["--no-progress", "--run-dir", f"{run_dir}/run"]
        begin = time.perf_counter()
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - begin
        return wall, json.loads((Path(run_dir) / "run" / "summary.json").read_text())


def measure(preset: str, cli_limit: float) -> dict:
    generations, rounds = ROUNDS.get(preset, (2, 2))
    infos: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as cache:  # the default measures: nothing cached
        os.environ["XDG_CACHE_HOME"] = cache
        os.environ.pop("EVOLAX_MEASURE_LAYOUT", None)
        workers = {mode: ["--worker", preset, mode] for mode in ("tuned", "default")}
        times = time_workers(__file__, workers, generations, rounds, infos)
    per_gen = {mode: statistics.median(t) for mode, t in times.items()}
    estimate = infos["default"]["first_generation_s"] + 99 * per_gen["default"]
    run = {"wall_s": estimate, "tuning_s": infos["default"]["tuning_s"], "measured": False}
    if estimate < cli_limit:
        with tempfile.TemporaryDirectory() as cache:
            wall, summary = cli_run(preset, cache)
        run = {"wall_s": wall, "tuning_s": summary["layout_tuning_s"], "measured": True}
        run["layout"] = [summary["layout"]["devices"], summary["layout"]["pop_chunk"]]
    return {
        "preset": preset,
        "seconds_per_generation": per_gen,
        "all_rounds": times,
        "default_over_tuned": per_gen["default"] / per_gen["tuned"],
        "run_100_generations": run,
        "tuning_share_of_100_generations": run["tuning_s"] / run["wall_s"],
        "workers": infos,
        "generations_per_round": generations,
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| preset | tuned layout | s/gen | default layout (chosen) | s/gen | default / tuned "
        "| tuning s | 100-gen run s | tuning share |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        tuned, default = row["workers"]["tuned"], row["workers"]["default"]
        per_gen, run = row["seconds_per_generation"], row["run_100_generations"]
        wall = f"{run['wall_s']:.0f}" + ("" if run["measured"] else " (est.)")
        sized = ", ".join(
            f"{k.rpartition('.')[2]} {v}" for k, v in SIZED.get(row["preset"], {}).items()
        )
        name = row["preset"] + (f" ({sized})" if sized else "")
        lines.append(
            f"| {name} | {tuned['layout'][0]} dev x {tuned['layout'][1]} "
            f"| {per_gen['tuned']:.3f} | {default['layout'][0]} dev x {default['layout'][1]} "
            f"| {per_gen['default']:.3f} | {row['default_over_tuned']:.2f} "
            f"| {run['tuning_s']:.1f} | {wall} "
            f"| {100 * row['tuning_share_of_100_generations']:.1f}% |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="*", help="presets to measure (default: all)")
    parser.add_argument(
        "--cli-limit", type=float, default=200.0, help="longest estimated CLI run to time (s)"
    )
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(*args.worker)
    from evolax.config import presets

    out = RESULTS / "default_layout.json"
    rows = {row["preset"]: row for row in previous_rows(out)}  # presets not measured again stay
    for preset in args.presets or presets():
        rows[preset] = measure(preset, args.cli_limit)
        ordered = [rows[p] for p in presets() if p in rows]
        write_results(out, "default_layout", ordered, table)  # after every preset
    print(table(ordered))


if __name__ == "__main__":
    main()
