"""``evolax train``: train a policy from a preset or file and overrides, or resume a run."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import Any

from evolax import __version__
from evolax.cli.common import check_run_dir, over_episodes, print_if
from evolax.cli.parser import assignments, config_source
from evolax.config import build_trainer, dump, resolve, run_settings
from evolax.data.mnist import DATA_DIR_ENV as DATA_ENV
from evolax.runlock import RunLock
from evolax.sharding import initialize_distributed, request_cpu_devices


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


def _score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.5g}"


def _record_data_dir(config: dict[str, Any]) -> None:
    """Record ``$EVOLAX_DATA_DIR`` where a dataset's folder is left to it, so that eval,
    render and resume find the data without the variable."""
    for value in list(config.values()):
        if isinstance(value, dict):
            if value.get("data_dir", False) is None and os.environ.get(DATA_ENV):
                value["data_dir"] = os.environ[DATA_ENV]
            _record_data_dir(value)


def command(args: argparse.Namespace) -> int:
    """Train as ``args`` say (or resume ``--resume``'s run); the exit status."""
    import jax

    from evolax.checkpoint import CheckpointStore
    from evolax.runner import RESUMABLE, check_resumable
    from evolax.runs import read_config

    overrides = assignments(args)
    source = None if args.resume is not None else config_source(args)
    config_dir = str(Path(source).resolve().parent) if source and Path(source).is_file() else None
    if args.resume is not None:
        fields = {a.partition("=")[0] for a in overrides}
        changed = sorted(f for f in fields if not f.startswith(RESUMABLE))
        if changed or config_source(args) or args.run_dir:
            raise ValueError(
                f"--resume continues a run as configured; only {', '.join(RESUMABLE)} may "
                f"change (got {changed or 'a config or --run-dir'})"
            )
        config = resolve(read_config(args.resume), overrides)
        run_dir = args.resume
    else:
        if config_dir:  # user modules beside the file
            sys.path.insert(0, config_dir)
        config = resolve(source, overrides)
    if args.print_config:
        print(dump(config), end="")
        return 0
    run = run_settings(config)
    if args.resume is None:
        _record_data_dir(config)
        last = run.seed + run.seeds - 1
        which = f"seeds{run.seed}-{last}" if run.seeds > 1 else f"seed{run.seed}"
        label = Path(source or "cartpole_easy").stem
        name = f"{label}-{config['algorithm']['name']}-{which}".replace(":", "_")
        run_dir = args.run_dir or Path("runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
        check_run_dir(run_dir)
    # JAX has not initialised its backends yet: the CPU devices asked for (importing evolax
    # asked for one per core), then join the run
    if run.cpu_devices:
        request_cpu_devices(run.cpu_devices)
    distributed = initialize_distributed(args.coordinator, args.num_processes, args.process_id)
    # one writer per run folder, refused at once if another process holds it
    lock = RunLock(run_dir) if jax.process_index() == 0 else None
    try:
        if args.resume is not None and lock is not None:  # before any work: the same run?
            store = CheckpointStore(run_dir, keep=run.keep_checkpoints)
            try:
                check_resumable(store, config)
            finally:
                store.close()
        return _train(args, config, run_dir, config_dir, distributed)
    finally:
        if lock is not None:
            lock.release()


def _train(
    args: argparse.Namespace,
    config: dict[str, Any],
    run_dir: Path,
    config_dir: str | None,
    distributed: bool,
) -> int:
    """Build the trainer and train, in a held run folder; the exit status."""
    import jax

    from evolax.rollout.teams import agents_per_unit
    from evolax.runner import train

    run = run_settings(config)
    trainer = build_trainer(config)
    if args.devices is not None:
        group = agents_per_unit(trainer.task)
        mesh = _mesh(args.devices, trainer.algorithm.pop_size, trainer.n_repeats, group)
        trainer = dataclasses.replace(trainer, mesh=mesh)  # checked again, tasks not rebuilt
    n_devices = len(jax.devices()) if args.devices is None else args.devices
    import_paths = config.get("host", {}).get("import_paths", [])
    if config_dir:
        import_paths = [config_dir]
    config["host"] = {"devices": n_devices, "processes": jax.process_count()}
    if import_paths:  # eval, render and resume import user modules from there too
        config["host"]["import_paths"] = import_paths
    leader = jax.process_index() == 0
    where = f"{jax.process_count()} processes, " if distributed else ""
    print_if(
        leader,
        f"evolax {__version__}: {'resuming' if args.resume else 'training'} "
        f"{config['task']['name']} up to generation {run.generations} "
        f"on {where}{n_devices} {jax.devices()[0].platform} device(s) -> {run_dir}",
    )
    result = train(
        trainer,
        run.generations,
        **run.train_kwargs(),
        run_dir=run_dir,
        config=config,
        progress=not args.no_progress,
        resume=args.resume is not None,
        tensorboard=args.tensorboard,
    )
    s = result.summary
    if "seeds" in s:
        scores = (
            f"final test score over {len(s['seeds'])} seeds: median "
            f"{_score(s['final_test_median'])} (IQR {_score(s['final_test_q25'])} to "
            f"{_score(s['final_test_q75'])}); best: median {_score(s['best_test_median'])}"
        )
    else:
        scores = (
            f"final test score {_score(s['final_test_mean'])} +- "
            f"{_score(s['final_test_std'])} "
            f"{over_episodes(run.test_episodes, trainer.evaluation_task)}; best "
            f"{_score(s['best_test_mean'])}"
        )
    suffix = "_median" if "seeds" in s else ""
    ends = [
        f"{name.replace('_', ' ')} {_score(s[f'final_{name}{suffix}'])}"
        for name in trainer.algorithm.summary_metrics
        if f"final_{name}{suffix}" in s
    ]
    if ends:
        scores += "\nlast generation's " + ("median " if "seeds" in s else "") + ", ".join(ends)
    print_if(
        leader,
        f"done: generation {s['generations']} after {s['total_wall_time_s']:.1f} s "
        f"({s['generations_per_s']:.2f} gen/s; this session: compile {s['compile_s']:.1f} s, "
        f"run {s['run_s']:.1f} s, tests {s['test_s']:.1f} s, checkpoints "
        f"{s['checkpoint_s']:.1f} s; {s['env_steps_per_s']:.3g} env steps/s)\n"
        f"{scores}\nrun folder: {run_dir} (metrics.jsonl, summary.json, checkpoints/, best/)",
    )
    return 0
