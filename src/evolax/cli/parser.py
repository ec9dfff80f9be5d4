"""The ``evolax`` argument parser: the subcommands, their flags and the fields flags set."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from evolax import __version__


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
    "loggers": ("run.loggers", "also log to these trackers: tensorboard, wandb, mlflow"),
    "seeds": ("run.seeds", "train this many seeds (seed, seed + 1, ...) as one vmapped program"),
    "log_interval": ("run.log_interval", "generations per compiled chunk"),
    "test_interval": ("run.test_interval", "generations between tests"),
    "test_episodes": ("run.test_episodes", "episodes per test"),
    "checkpoint_interval": ("run.checkpoint_interval", "generations between checkpoints"),
    "keep_checkpoints": ("run.keep_checkpoints", "recent checkpoints to keep"),
    "cpu_devices": ("run.cpu_devices", "on a CPU host: XLA devices (default: 1 per core)"),
}
_LIST_FLAGS = {"hidden_sizes", "grid_shape", "canvas_size", "loggers"}  # comma-separated values
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
    p.add_argument(
        "--tensorboard",
        action="store_true",
        help="also write TensorBoard events (--loggers tensorboard)",
    )
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


def assignments(args: argparse.Namespace) -> list[str]:
    """The dotted overrides given: FIELD=VALUE arguments, then the shorthand flags; a field
    given twice (by a flag and FIELD=VALUE, or twice either way) with two values is an error
    naming both."""
    given = [(a, a) for a in args.settings if "=" in a]  # (assignment, as the user wrote it)
    for name, (path, _) in SHORTHANDS.items():
        text = getattr(args, name)
        if text is not None:
            flag = "--" + name.replace("_", "-")
            if not text.strip():
                raise ValueError(f"{flag}: expected a value")
            if name in _LIST_FLAGS and not text.lstrip().startswith("["):
                text = f"[{text}]"  # 64,64: a list
            given.append((f"{path}={text}", f"{flag} {getattr(args, name)}"))
    seen: dict[str, tuple[Any, str]] = {}
    for assignment, written in given:
        field, _, text = assignment.partition("=")
        value = _value(text)
        if field.strip() in seen and seen[field.strip()][0] != value:
            raise ValueError(
                f"{field.strip()} is given twice, as {seen[field.strip()][1]} and as {written}: "
                "give it once"
            )
        seen.setdefault(field.strip(), (value, written))
    return [assignment for assignment, _ in given]


def _value(text: str) -> Any:
    """An override's value as it will be read (YAML), to tell two spellings of one apart."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def config_source(args: argparse.Namespace) -> str | None:
    """The preset or file the configuration starts from (a task name stands for its preset)."""
    sources = [a for a in args.settings if "=" not in a] + ([args.config] if args.config else [])
    if len(sources) > 1:
        raise ValueError(f"give one preset or file, got {sources}")
    source = sources[0] if sources else None
    return _TASK_PRESETS.get(source, source) if source else None
