"""The ``evolax`` command line: train, eval, plot, render, bench, configs, describe."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import os
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from evolax import __version__
from evolax.config import (
    build_trainer,
    dump,
    presets,
    resolve,
    run_settings,
)
from evolax.data.mnist import DATA_DIR_ENV as DATA_ENV
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


class _Parser(argparse.ArgumentParser):
    """Usage mistakes in one line that points to ``--help``, not the whole usage text."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


# Shorthand flags: --FLAG VALUE sets the field at PATH (any field can be set as PATH=VALUE).
# Flags that name a component come first, so that the others set the new one's fields.
SHORTHANDS: dict[str, tuple[str, str]] = {
    "algo": ("algorithm.name", "algorithm: a registered name or package.module:Class"),
    "policy": ("policy.name", "policy: a registered name or package.module:Class"),
    "optimizer": ("algorithm.optimizer.name", "centre optimizer (adam, sgd, clipup, ...)"),
    "pop_size": ("algorithm.pop_size", "population size"),
    "center_lr": ("algorithm.optimizer.learning_rate", "centre learning rate"),
    "max_speed": ("algorithm.optimizer.max_speed", "clipup: speed limit"),
    "std_lr": ("algorithm.std_lr", "standard-deviation learning rate"),
    "init_std": ("algorithm.init_std", "initial standard deviation"),
    "std_max_change": ("algorithm.std_max_change", "bound on the relative std change"),
    "top_directions": ("algorithm.top_directions", "ars: directions kept (b)"),
    "grid_shape": ("algorithm.grid_shape", "map_elites: cells per descriptor, e.g. 32,32"),
    "hidden_sizes": ("policy.hidden_sizes", "MLP widths, e.g. 64,64"),
    "output_activation": ("policy.output_activation", "MLP output activation"),
    "hidden_size": ("policy.hidden_size", "LSTM width (seq2seq policy)"),
    "hard": ("task.hard", "cart-pole: hard initial states (true or false)"),
    "max_steps": ("task.max_steps", "episode length limit"),
    "batch_size": ("task.batch_size", "supervised tasks: training batch size"),
    "data_dir": ("task.data.data_dir", "mnist: folder with the dataset files"),
    "n_digits": ("task.n_digits", "seq2seq: digits per operand"),
    "n_triangles": ("task.n_triangles", "image_approximation: triangles"),
    "canvas_size": ("task.size", "image_approximation: height,width"),
    "target": ("task.target", "image_approximation: target image file"),
    "n_agents": ("task.n_agents", "waterworld_ma: agents per pool"),
    "n_repeats": ("trainer.n_repeats", "episodes per individual"),
    "pop_chunk": ("trainer.pop_chunk", "individuals evaluated at a time (default: timed)"),
    "init_scale": ("trainer.init_scale", "scale of the initial parameters (0: zero)"),
    "normalize_obs": ("trainer.normalize_obs", "normalise observations (true or false)"),
    "generations": ("run.generations", "generation to train up to"),
    "seed": ("run.seed", "random seed"),
    "seeds": ("run.seeds", "train this many seeds (seed, seed + 1, ...) as one vmapped program"),
    "log_interval": ("run.log_interval", "generations per compiled chunk"),
    "test_interval": ("run.test_interval", "generations between tests"),
    "test_episodes": ("run.test_episodes", "episodes per test"),
    "checkpoint_interval": ("run.checkpoint_interval", "generations between checkpoints"),
    "keep_checkpoints": ("run.keep_checkpoints", "recent checkpoints to keep"),
    "cpu_devices": ("run.cpu_devices", "on a CPU host: XLA devices (default: 1 per core)"),
}
_LIST_FLAGS = {"hidden_sizes", "grid_shape", "canvas_size"}  # comma-separated values
# what a resumed run may change (results do not depend on the device count)
_RESUMABLE = {"run.generations", "run.cpu_devices"}
# a task's name stands for its preset: `evolax train cartpole`
_TASK_PRESETS = {"cartpole": "cartpole_easy", "brax": "ant"}


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
        description="Train a policy. The configuration is a preset (`evolax configs` lists "
        "them) or a YAML file, then FIELD=VALUE overrides of any field (algorithm.pop_size=32, "
        "task.name=gymnax:Pendulum-v1), then the shorthand flags. `evolax describe NAME` "
        "lists a component's fields.",
    )
    p.add_argument(
        "settings",
        nargs="*",
        metavar="CONFIG|FIELD=VALUE",
        help="a preset name, a task name (its preset) or a YAML file; then dotted overrides",
    )
    p.add_argument("--config", help="a preset name or YAML file (or give it first)")
    p.add_argument("--print-config", action="store_true", help="print the resolved configuration")
    p.add_argument("--resume", type=Path, metavar="RUN_DIR", help="continue the run in RUN_DIR")
    for name, (path, help_text) in SHORTHANDS.items():
        flag = "--" + name.replace("_", "-")
        if path in ("task.hard", "trainer.normalize_obs"):
            p.add_argument(
                flag, nargs="?", const="true", metavar="BOOL", help=f"{help_text} [{path}]"
            )
        else:
            p.add_argument(flag, metavar="VALUE", help=f"{help_text} [{path}]")
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

    p = command(
        "plot",
        help="write a run's learning curves as a PNG (and a multi-objective run's last "
        "population, pareto_front.png, or a quality-diversity run's archive, archive.png)",
    )
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    p.add_argument("--out", type=Path, help="PNG path (default: RUN_DIR/learning_curves.png)")

    p = command(
        "bench",
        help="benchmark algorithms on a suite of test functions (COCO's measures)",
        description="Run algorithms on the 24 BBOB functions (every function, instance and "
        "seed of one algorithm in one compiled program) and write COCO's measures: the "
        "expected running time to a precision and the ECDF of targets reached against "
        "evaluations, as tables (JSON, Markdown) and a plot. Each algorithm starts from the "
        "defaults of the benchmark (pop_size 4 + 3 ln d rounded up to even, init_std 2, "
        "x0 uniform in [-4, 4]^d); ALGO.FIELD=VALUE overrides them.",
    )
    p.add_argument("suite", choices=["bbob"], help="the suite")
    p.add_argument(
        "settings",
        nargs="*",
        metavar="ALGO|ALGO.FIELD=VALUE",
        help="algorithm names (`evolax describe` lists them), then overrides of their fields",
    )
    p.add_argument("--dim", type=_positive_int, default=10, help="dimension (default 10)")
    p.add_argument("--seeds", type=_positive_int, default=5, help="runs per instance (5)")
    p.add_argument(
        "--instances", type=_int_list, default=[1], help="COCO instances, e.g. 1-5 (default 1)"
    )
    p.add_argument(
        "--functions", type=_int_list, default=list(range(1, 25)), help="e.g. 1-5,8 (all 24)"
    )
    p.add_argument(
        "--budget", type=float, default=1000.0, help="evaluations per dimension (default 1000)"
    )
    p.add_argument("--target", type=float, default=1e-8, help="precision of the ERT table")
    p.add_argument("--out", type=Path, default=Path("bench"), help="output folder (./bench)")
    command("configs", help="list the presets")
    p = command("describe", help="list the components, or one component's fields")
    p.add_argument(
        "name", nargs="?", help="a component (pgpe, cartpole, adam, package.module:Class)"
    )
    return parser


def _int_list(text: str) -> list[int]:
    """``"1-5,8"`` -> ``[1, 2, 3, 4, 5, 8]``."""
    values: list[int] = []
    try:
        for part in text.split(","):
            low, _, high = part.partition("-")
            values += range(int(low), int(high or low) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers like 1-5,8, got {text!r}") from None
    return values


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


def _assignments(args: argparse.Namespace) -> list[str]:
    """The dotted overrides given: FIELD=VALUE arguments, then the shorthand flags."""
    given = [a for a in args.settings if "=" in a]
    for name, (path, _) in SHORTHANDS.items():
        text = getattr(args, name)
        if text is not None:
            flag = "--" + name.replace("_", "-")
            if name in _LIST_FLAGS and not text.lstrip().startswith("["):
                text = f"[{text}]"  # 64,64: a list
            given.append(f"{path}={text}")
            if not text.strip():
                raise ValueError(f"{flag}: expected a value")
    return given


def _source(args: argparse.Namespace) -> str | None:
    """The preset or file the configuration starts from (a task name stands for its preset)."""
    sources = [a for a in args.settings if "=" not in a] + ([args.config] if args.config else [])
    if len(sources) > 1:
        raise ValueError(f"give one preset or file, got {sources}")
    source = sources[0] if sources else None
    return _TASK_PRESETS.get(source, source) if source else None


def _record_data_dir(config: dict[str, Any]) -> None:
    """Record ``$EVOLAX_DATA_DIR`` where a dataset's folder is left to it, so that eval,
    render and resume find the data without the variable."""
    for value in list(config.values()):
        if isinstance(value, dict):
            if value.get("data_dir", False) is None and os.environ.get(DATA_ENV):
                value["data_dir"] = os.environ[DATA_ENV]
            _record_data_dir(value)


def _train(args: argparse.Namespace) -> int:
    import jax

    from evolax.runner import POPULATION_METRICS, train
    from evolax.runs import read_config

    overrides = _assignments(args)
    source = None if args.resume is not None else _source(args)
    config_dir = str(Path(source).resolve().parent) if source and Path(source).is_file() else None
    if args.resume is not None:
        changed = sorted({a.partition("=")[0] for a in overrides} - _RESUMABLE)
        if changed or _source(args) or args.run_dir:
            raise ValueError(
                "--resume continues a run as configured; only run.generations and "
                f"run.cpu_devices may change (got {changed or 'a config or --run-dir'})"
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
        _check_run_dir(run_dir)
    # JAX has not initialised its backends yet: request the CPU devices, then join the run
    request_cpu_devices(run.cpu_devices or os.cpu_count() or 1)
    distributed = initialize_distributed(args.coordinator, args.num_processes, args.process_id)
    from evolax.tasks import MultiAgentTask

    trainer = build_trainer(config)
    if args.devices is not None:
        task = trainer.task
        group = task.n_agents if isinstance(task, MultiAgentTask) else 1
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
            f"{_score(s['final_test_std'])} over {run.test_episodes} episodes; best "
            f"{_score(s['best_test_mean'])}"
        )
    suffix = "_median" if "seeds" in s else ""
    ends = [
        f"{name.replace('_', ' ')} {_score(s[f'final_{name}{suffix}'])}"
        for name in POPULATION_METRICS
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


def _eval(args: argparse.Namespace) -> int:
    import jax
    import numpy as np

    from evolax.placement import tester
    from evolax.runs import load_run

    config, trainer, state, meta = load_run(args.run_dir, args.checkpoint)
    loaded = meta["checkpoint"]  # the latest where best was asked for but is missing or bad
    run = run_settings(config)
    episodes = args.episodes or run.test_episodes
    key = jax.random.fold_in(jax.random.key(args.seed), EVAL_STREAM)
    seeds = run.seed_list
    task_name = config["task"]["name"]
    test = tester(trainer, episodes, batched=not isinstance(seeds, int))
    if isinstance(seeds, int):
        scores = np.asarray(test(state, key))
        print(
            f"{task_name} ({loaded} solution, generation "
            f"{int(state.generation)}): mean {scores.mean():.2f} +- {scores.std():.2f}, min "
            f"{scores.min():.2f}, max {scores.max():.2f} over {episodes} episodes"
        )
        return 0
    # every seed's solution, on the same episodes
    all_scores = np.asarray(test(state, key))  # the same episodes for every seed
    generations = np.asarray(state.generation)
    for seed, generation, scores in zip(seeds, generations, all_scores, strict=True):
        print(
            f"{task_name} seed {seed} ({loaded} solution, generation "
            f"{int(generation)}): mean {scores.mean():.2f} +- {scores.std():.2f} over "
            f"{episodes} episodes"
        )
    q25, median, q75 = np.percentile(all_scores.mean(axis=1), [25, 50, 75])
    print(f"median over {len(seeds)} seeds: {median:.2f} (IQR {q25:.2f} to {q75:.2f})")
    return 0


def _render(args: argparse.Namespace) -> int:
    import jax
    import numpy as np

    from evolax.render import render_episode
    from evolax.runner import seed_slice
    from evolax.runs import load_run

    config, trainer, state, meta = load_run(args.run_dir, args.checkpoint)
    seeds = run_settings(config).seed_list
    if not isinstance(seeds, int):  # several seeds: the best-scoring one's solution
        index = int(np.argmax(np.nan_to_num(np.array(meta["best_test_mean"], float), nan=-np.inf)))
        state = seed_slice(state, index)
        print(f"drawing seed {seeds[index]}, the best-scoring of the run's seeds")
    task = trainer.evaluation_task
    # one-step (supervised) tasks are drawn as a still of the predictions
    default = "episode.html" if hasattr(task, "render_html") else "episode.gif"
    out = args.out or args.run_dir / (default if task.max_steps > 1 else "predictions.png")
    params, stats = trainer.solution(state)
    export = getattr(trainer.policy, "export", None)  # a NEAT network's
    if export is not None:  # its drawing and its genes, beside the episode's file
        from evolax.render import plot_network

        network = export(params)
        folder = Path(out).parent
        (folder / "network.json").write_text(json.dumps(network, indent=1))
        print(f"wrote {plot_network(network, folder / 'network.png')} and network.json")
    key = jax.random.fold_in(jax.random.key(args.seed), EVAL_STREAM)
    try:
        frames, episode_return = render_episode(
            trainer.policy, task, params, key, out, obs_stats=stats
        )
    except NotImplementedError as error:  # the task cannot draw itself: the user's choice
        if export is not None:
            print(f"no episode drawn: {error}")
            return 0
        raise ValueError(str(error)) from error
    print(f"wrote {out}: {frames} frame(s), episode return {episode_return:.4g}")
    return 0


def _plot(args: argparse.Namespace) -> int:
    from evolax.render import plot_learning_curves

    out = args.out or args.run_dir / "learning_curves.png"
    plot_learning_curves(args.run_dir / "metrics.jsonl", out)
    print(f"wrote {out}")
    front = args.run_dir / "pareto_front.json"  # a multi-objective run's last population
    if front.exists():
        from evolax.render import plot_pareto_front

        print(f"wrote {plot_pareto_front(front, Path(out).with_name('pareto_front.png'))}")
    archive = args.run_dir / "archive.json"  # a quality-diversity run's elites
    if archive.exists():
        from evolax.render import plot_archive

        print(f"wrote {plot_archive(archive, Path(out).with_name('archive.png'))}")
    return 0


def bench_algorithms(settings: list[str], dim: int) -> dict[str, Any]:
    """The algorithms ``evolax bench bbob`` runs: ``settings`` are algorithm names, then
    ``ALGO.FIELD=VALUE`` overrides of the benchmark's defaults (``pop_size`` 4 + 3 ln ``dim``
    rounded up to even, ``init_std`` 2)."""
    from evolax import schema
    from evolax.algorithms import REGISTRY
    from evolax.algorithms.cma_family import default_pop_size
    from evolax.config import REGISTRIES, override

    names = [a for a in settings if "=" not in a]
    if not names:
        raise ValueError(f"name at least one algorithm to benchmark ({', '.join(REGISTRY)})")
    if len(set(names)) < len(names):
        raise ValueError(f"each algorithm once, got {names}")
    pop = default_pop_size(dim) + default_pop_size(dim) % 2
    specs: dict[str, Any] = {}
    for name in names:
        target, _ = schema.find(name, REGISTRY, "algorithm")
        fields = {f.name for f in schema.fields(target)}
        specs[name] = {"name": name, "pop_size": pop}
        if "init_std" in fields:
            specs[name]["init_std"] = 2.0
    for assignment in [a for a in settings if "=" in a]:
        label = assignment.partition(".")[0]
        if label not in specs:
            raise ValueError(f"{assignment}: {label} is not one of the algorithms given {names}")
        specs = override(specs, assignment)
    return {name: schema.build(spec, REGISTRY, REGISTRIES, name) for name, spec in specs.items()}


def _bench(args: argparse.Namespace) -> int:
    from evolax.coco import bbob_runs, write_report

    algorithms = bench_algorithms(args.settings, args.dim)
    results = {}
    for name, algorithm in algorithms.items():
        start = time.perf_counter()
        results[name] = bbob_runs(
            algorithm,
            args.dim,
            functions=args.functions,
            instances=args.instances,
            seeds=args.seeds,
            budget=args.budget,
        )
        print(f"{name}: {time.perf_counter() - start:.1f} s", flush=True)
    write_report(results, args.out, target=args.target)
    print(f"wrote {args.out}/bbob.json, bbob.md and bbob_ecdf.png")
    return 0


def _configs(args: argparse.Namespace) -> int:
    del args
    for name in presets():
        config = resolve(name)
        parts = [f"{s} {config[s]['name']}" for s in ("algorithm", "policy", "task")]
        print(f"{name}: {', '.join(parts)}; {config['run']['generations']} generations")
    return 0


def _describe(args: argparse.Namespace) -> int:
    from evolax import schema
    from evolax.config import REGISTRIES

    if args.name is None:
        for kind, registry in REGISTRIES.items():
            title = getattr(kind, "__name__", str(kind))
            print(f"{title}: {', '.join(registry)}")
        print("(any other by import path: package.module:Name; `evolax describe NAME`)")
        return 0
    everything = {k: v for registry in REGISTRIES.values() for k, v in registry.items()}
    target, preset = schema.find(args.name, everything, "describe")
    summary = (inspect.getdoc(target) or "").split("\n\n")[0]
    print(f"{args.name}: {target.__module__}:{target.__qualname__}\n  {' '.join(summary.split())}")
    for f in schema.fields(target):
        if f.name in preset:
            continue
        shown = schema.plain(f.default, REGISTRIES)
        default = f"default {f.default!r}" if shown is NotImplemented else f"default {shown!r}"
        if f.default is schema.REQUIRED:
            default = "required"
        elif f.factory or shown is NotImplemented:
            default = "default: see below"
        print(f"  {f.name}: {schema.type_name(f.annotation)} ({default})")
        if f.doc:
            print(f"      {f.doc}")
    return 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line's arguments; FIELD=VALUE overrides may come after flags."""
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    overrides = [a for a in extra if "=" in a and not a.startswith("-")]
    if extra and (args.command not in ("train", "bench") or len(overrides) < len(extra)):
        parser.error(f"unrecognized arguments: {' '.join(a for a in extra if a not in overrides)}")
    if overrides:
        args.settings += overrides
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``evolax`` command."""
    args = parse_args(argv)
    if args.command != "train":  # `train` requests its configuration's CPU devices itself
        # One XLA CPU device per core, so that the population can be split across cores (JAX
        # has not initialised its backends yet; an explicit device count in XLA_FLAGS wins).
        request_cpu_devices(os.cpu_count() or 1)
    commands = {
        "train": _train,
        "eval": _eval,
        "render": _render,
        "plot": _plot,
        "bench": _bench,
        "configs": _configs,
        "describe": _describe,
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
