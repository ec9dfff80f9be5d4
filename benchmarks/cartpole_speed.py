"""Seconds per generation on cart-pole swing-up: evolax vs EvoJAX, side by side in one run.

Both train EvoJAX's published cart-pole configuration from scratch (PGPE pop 64, adam centre
lr 0.05, std lr 0.1, init std 0.1, MLP [64, 64], 16 repeats, 1000-step episodes) for the same
number of generations, from an all-zero centre (EvoJAX's start); a generation is ask +
evaluate + tell. Compilation is excluded (one warm-up generation each). Each library runs in
a worker process of its own, and the script alternates timing rounds between them so that
machine drift hits all of them. Run with
`nox -s bench` (installs EvoJAX 0.2.17 beside evolax).

evolax runs as a library user composes it: a `Trainer` with default settings placed with
`evolax.place`, which times its evaluation layouts (devices, group size) once, and no other
setting (importing evolax gives JAX one CPU device per core). Two more evolax workers show what
the devices are worth: one that also calls `evolax.use_cpu_cores()` (the line the docs used to
ask for), and one with JAX's single CPU device (`EVOLAX_CPU_DEVICES=1`: what a program gets
whose JAX was started before evolax was imported). EvoJAX runs twice: as its users run it (XLA's
default flags; the ratio is taken against this worker), and with the XLA flags importing evolax
sets (`evolax.xla_cpu`: 512-bit vectors on AVX-512 CPUs), to show what is evolax's own and what
the compiler's. EvoJAX runs on one device by default: with `--evojax-devices 2` its
SimManager takes its `pmap` path, which needs `jax.tree_map` (removed from current JAX; the
script restores the alias) and which, on 2 CPU devices, sometimes stalls in an all-gather until
XLA aborts the process (seen in 3 of 6 runs here).
"""

from __future__ import annotations

import argparse
import logging
from importlib.metadata import version
from pathlib import Path

import jax
import optax

import evolax
from evolax.sharding import request_cpu_devices
from results_table import RESULTS
from side_by_side import (
    baseline,
    evojax_timer,
    evolax_timer,
    report,
    serve,
    time_workers,
    xla_defaults,
)

POP, REPEATS, HIDDEN, CENTER_LR, STD_LR, INIT_STD = 64, 16, (64, 64), 0.05, 0.1, 0.1


def evolax_runner(seed: int):
    trainer = evolax.Trainer(
        algorithm=evolax.PGPE(
            pop_size=POP, optimizer=optax.adam(CENTER_LR), init_std=INIT_STD, std_lr=STD_LR
        ),
        policy=evolax.MLP(hidden_sizes=HIDDEN),
        task=evolax.CartPoleSwingUp(),
        n_repeats=REPEATS,
        init_scale=0.0,  # EvoJAX's PGPE starts at an all-zero centre too
    )
    return evolax_timer(trainer, trainer.init(jax.random.key(seed)))


def evojax_runner(seed: int):
    if not hasattr(jax, "tree_map"):  # EvoJAX's multi-device path still calls jax.tree_map
        jax.tree_map = jax.tree.map
    from evojax.algo import PGPE
    from evojax.policy import MLPPolicy
    from evojax.sim_mgr import SimManager
    from evojax.task.cartpole import CartPoleSwingUp

    logger = logging.getLogger("evojax-bench")
    logger.setLevel(logging.WARNING)
    policy = MLPPolicy(input_dim=5, hidden_dims=list(HIDDEN), output_dim=1, logger=logger)
    solver = PGPE(
        pop_size=POP,
        param_size=policy.num_params,
        optimizer="adam",
        center_learning_rate=CENTER_LR,
        stdev_learning_rate=STD_LR,
        init_stdev=INIT_STD,
        seed=seed,
        logger=logger,
    )
    sim = SimManager(
        n_repeats=REPEATS,
        test_n_repeats=1,
        pop_size=POP,
        n_evaluations=100,
        policy_net=policy,
        train_vec_task=CartPoleSwingUp(),
        valid_vec_task=CartPoleSwingUp(test=True),
        seed=seed,
        logger=logger,
    )
    return evojax_timer(sim, solver)


def worker(name: str, evojax_devices: int) -> None:
    # before JAX initialises its backends
    if name.startswith("evojax"):
        if name == "evojax":  # as EvoJAX's users run it; evojax_wide keeps evolax's flags
            xla_defaults()
        request_cpu_devices(evojax_devices)
        serve(evojax_runner(0))
    else:
        if name == "evolax_cores":
            evolax.use_cpu_cores()
        serve(evolax_runner(0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generations", type=int, default=10, help="generations per round")
    parser.add_argument("--rounds", type=int, default=2, help="alternating timing rounds")
    parser.add_argument(
        "--baseline", type=Path, help="another evolax checkout, timed as one more worker"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "cartpole_speed.json")
    parser.add_argument(
        "--worker",
        choices=["evolax", "evolax_cores", "evolax_one", "evojax", "evojax_wide"],
        help=argparse.SUPPRESS,
    )
    parser.add_argument("--evojax-devices", type=int, default=1, help="CPU devices for EvoJAX")
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker, args.evojax_devices)

    names = {
        "evolax": "evolax (library defaults)",
        "evolax_cores": "evolax (use_cpu_cores())",
        "evolax_one": "evolax (one CPU device)",
        "evojax": f"evojax ({args.evojax_devices} device(s))",
        "evojax_wide": f"evojax ({args.evojax_devices} device(s), evolax's XLA flags)",
    }
    workers = {
        label: ["--worker", key, "--evojax-devices", f"{args.evojax_devices}"]
        for key, label in names.items()
    }
    devices = f"{args.evojax_devices} device" + ("s" if args.evojax_devices > 1 else "")
    evojax = f"EvoJAX {version('evojax')}, {devices}"
    labels = {  # the table's
        names["evolax"]: "evolax, library defaults (no setting)",
        names["evolax_cores"]: "evolax, after `evolax.use_cpu_cores()`",
        names["evolax_one"]: "evolax, JAX's one CPU device (`EVOLAX_CPU_DEVICES=1`)",
        names["evojax"]: evojax + (" (its default)" if args.evojax_devices == 1 else ""),
        names["evojax_wide"]: f"{evojax}, with evolax's XLA flag",
    }
    times = time_workers(
        __file__,
        workers,
        args.generations,
        args.rounds,
        elsewhere=baseline(args, workers, labels),
        environments={names["evolax_one"]: {"EVOLAX_CPU_DEVICES": "1"}},
    )
    config = {"pop_size": POP, "n_repeats": REPEATS, "hidden": HIDDEN, "max_steps": 1000}
    report(
        args.out,
        "cartpole_swingup_easy",
        config,
        times,
        args.generations,
        labels,
        [names["evojax"]],
    )


if __name__ == "__main__":
    main()
