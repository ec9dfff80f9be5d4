"""The ``evolax`` command line."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import jax
import optax
from jax.sharding import Mesh

from evolax import __version__
from evolax.algorithms import PGPE, Algorithm
from evolax.optim import clipup
from evolax.policies import MLP
from evolax.runner import train
from evolax.sharding import check_divisible, population_mesh, request_cpu_devices
from evolax.tasks import CartPoleSwingUp, Task
from evolax.trainer import Trainer


def _cartpole(args: argparse.Namespace) -> Task:
    return CartPoleSwingUp(hard=args.hard, max_steps=args.max_steps)


TASKS: dict[str, Callable[[argparse.Namespace], Task]] = {"cartpole": _cartpole}

OPTIMIZERS: dict[str, Callable[[float], optax.GradientTransformation]] = {
    "adam": lambda lr: optax.adam(lr),
    "sgd": lambda lr: optax.sgd(lr),
    "clipup": lambda lr: clipup(lr, max_speed=2 * lr),
}


def _pgpe(args: argparse.Namespace) -> Algorithm:
    return PGPE(
        pop_size=args.pop_size,
        optimizer=OPTIMIZERS[args.optimizer](args.center_lr),
        init_std=args.init_std,
        std_lr=args.std_lr,
        std_max_change=args.std_max_change,
    )


ALGORITHMS: dict[str, Callable[[argparse.Namespace], Algorithm]] = {"pgpe": _pgpe}


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    if any(s <= 0 for s in sizes):
        raise argparse.ArgumentTypeError(f"sizes must be positive, got {text!r}")
    return sizes


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="evolax", description="Neuroevolution in JAX.")
    parser.add_argument("--version", action="version", version=f"evolax {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser(
        "train",
        help="train a policy on a task",
        description="Train a policy; defaults are EvoJAX's cart-pole benchmark configuration.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("task", choices=sorted(TASKS), help="task to train on")
    p.add_argument("--hard", action="store_true", help="cart-pole: hard initial states")
    p.add_argument("--max-steps", type=_positive_int, default=1000, help="episode length limit")
    p.add_argument("--algo", choices=sorted(ALGORITHMS), default="pgpe", help="algorithm")
    p.add_argument("--pop-size", type=_positive_int, default=64, help="population size")
    p.add_argument(
        "--optimizer", choices=sorted(OPTIMIZERS), default="adam", help="centre optimizer"
    )
    p.add_argument("--center-lr", type=float, default=0.05, help="centre learning rate")
    p.add_argument("--std-lr", type=float, default=0.1, help="standard-deviation learning rate")
    p.add_argument("--init-std", type=float, default=0.1, help="initial standard deviation")
    p.add_argument("--std-max-change", type=float, default=0.2, help="bound on relative std change")
    p.add_argument("--hidden-sizes", type=_sizes, default=(64, 64), help="MLP widths, e.g. 64,64")
    p.add_argument("--n-repeats", type=_positive_int, default=16, help="episodes per individual")
    p.add_argument("--normalize-obs", action="store_true", help="running observation normalisation")
    p.add_argument("--generations", type=_positive_int, default=1000, help="generations to train")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--log-interval", type=_positive_int, default=10, help="generations per chunk")
    p.add_argument("--test-interval", type=_positive_int, default=100, help="generations per test")
    p.add_argument("--test-episodes", type=_positive_int, default=100, help="episodes per test")
    p.add_argument("--run-dir", type=Path, default=None, help="output folder (default runs/NAME)")
    p.add_argument(
        "--devices",
        type=_positive_int,
        default=None,
        help="devices to split the population over (default: as many as divide the population; "
        "on CPU there is one device per core)",
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser


def _train(args: argparse.Namespace) -> int:
    name = f"{args.task}{'-hard' if args.hard else ''}-{args.algo}-seed{args.seed}"
    run_dir = args.run_dir or Path("runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    config = {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(args).items()}
    config["run_dir"] = str(run_dir)
    try:
        mesh = _mesh(args.devices, args.pop_size)
        trainer = Trainer(
            algorithm=ALGORITHMS[args.algo](args),
            policy=MLP(hidden_sizes=args.hidden_sizes, output_activation="tanh"),
            task=TASKS[args.task](args),
            n_repeats=args.n_repeats,
            normalize_obs=args.normalize_obs,
            mesh=mesh,
        )
    except ValueError as error:
        print(f"evolax train: error: {error}", file=sys.stderr)
        return 2
    config["devices"] = mesh.size
    platform = mesh.devices.flat[0].platform
    print(
        f"evolax {__version__}: training {name} for {args.generations} generations "
        f"on {mesh.size} {platform} device(s) -> {run_dir}"
    )
    result = train(
        trainer,
        args.generations,
        seed=args.seed,
        log_interval=args.log_interval,
        test_interval=args.test_interval,
        n_test_episodes=args.test_episodes,
        run_dir=run_dir,
        config=config,
        progress=not args.no_progress,
    )
    s = result.summary
    print(
        f"done: {s['generations']} generations in {s['wall_time_s']:.1f} s "
        f"({s['generations_per_s']:.2f} gen/s, {s['env_steps_per_s']:.3g} env steps/s)\n"
        f"final test score {s['final_test_mean']:.1f} +- {s['final_test_std']:.1f} "
        f"over {args.test_episodes} episodes; best {s['best_test_mean']:.1f} "
        f"at generation {s['best_test_generation']}\n"
        f"metrics: {run_dir / 'metrics.jsonl'}  summary: {run_dir / 'summary.json'}"
    )
    return 0


def _mesh(devices: int | None, pop_size: int) -> Mesh:
    """A population mesh over ``devices`` devices; by default the most that divide ``pop_size``."""
    available = jax.devices()
    if devices is not None:
        if devices > len(available):
            raise ValueError(f"--devices {devices} requested, but only {len(available)} available")
        mesh = population_mesh(available[:devices])
        check_divisible(pop_size, mesh)
        return mesh
    count = max(n for n in range(1, len(available) + 1) if pop_size % n == 0)
    return population_mesh(available[:count])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``evolax`` command."""
    # One XLA CPU device per core, so that the population can be split across cores (JAX has
    # not initialised its backends yet; an explicit device count in XLA_FLAGS wins).
    request_cpu_devices(os.cpu_count() or 1)
    args = _parser().parse_args(argv)
    if args.command == "train":
        return _train(args)
    raise AssertionError(args.command)


if __name__ == "__main__":
    sys.exit(main())
