"""Seconds per generation on cart-pole swing-up: evolax vs EvoJAX, side by side in one run.

Both train EvoJAX's published cart-pole configuration from scratch (PGPE pop 64, adam centre
lr 0.05, std lr 0.1, init std 0.1, MLP [64, 64], 16 repeats, 1000-step episodes) for the same
number of generations; a generation is ask + evaluate + tell. Compilation is excluded (one
warm-up generation each). Rounds alternate between the libraries so that machine drift hits
all of them. Run with `nox -s bench` (installs EvoJAX 0.2.17 beside evolax).

Both get every core: the process exposes one XLA CPU device per core. evolax splits the
population over them (its 1-device time is reported too); EvoJAX's SimManager then takes its
`pmap` path, which needs `jax.tree_map` (removed from current JAX), so the script restores that
alias for it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import time
from importlib.metadata import version
from pathlib import Path

import jax
import optax

import evolax
from evolax.sharding import population_mesh, request_cpu_devices

POP, REPEATS, HIDDEN, CENTER_LR, STD_LR, INIT_STD = 64, 16, (64, 64), 0.05, 0.1, 0.1


def evolax_runner(seed: int, n_devices: int):
    trainer = evolax.Trainer(
        algorithm=evolax.PGPE(
            pop_size=POP, optimizer=optax.adam(CENTER_LR), init_std=INIT_STD, std_lr=STD_LR
        ),
        policy=evolax.MLP(hidden_sizes=HIDDEN),
        task=evolax.CartPoleSwingUp(),
        n_repeats=REPEATS,
        mesh=population_mesh(jax.devices()[:n_devices]),
    )
    state = trainer.init(jax.random.key(seed))
    compiled: dict[int, object] = {}

    def generations(n: int) -> float:
        nonlocal state
        if n not in compiled:  # ahead-of-time compile, so timing never includes compilation
            compiled[n] = jax.jit(trainer.run, static_argnums=1).lower(state, n).compile()
        start = time.perf_counter()
        state, _ = jax.block_until_ready(compiled[n](state))
        return time.perf_counter() - start

    return generations


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

    def generations(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            scores, _ = sim.eval_params(params=solver.ask(), test=False)
            solver.tell(fitness=scores)
        jax.block_until_ready(solver.best_params)
        return time.perf_counter() - start

    return generations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generations", type=int, default=10, help="generations per round")
    parser.add_argument("--rounds", type=int, default=2, help="alternating timing rounds")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/cartpole_speed.json"))
    args = parser.parse_args()
    request_cpu_devices(os.cpu_count() or 1)  # before JAX initialises its backends

    n_devices = len(jax.devices())
    runners = {
        f"evolax ({n_devices} devices)": evolax_runner(0, n_devices),
        "evolax (1 device)": evolax_runner(0, 1),
        f"evojax ({jax.local_device_count()} devices, pmap)": evojax_runner(0),
    }
    for runner in runners.values():
        runner(1)  # warm up: compile (EvoJAX compiles on its first generation)
    times: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(args.rounds):
        for name, runner in runners.items():
            times[name].append(runner(args.generations) / args.generations)
    per_gen = {name: statistics.median(t) for name, t in times.items()}
    evolax_best = min(t for name, t in per_gen.items() if name.startswith("evolax"))
    evojax_best = min(t for name, t in per_gen.items() if name.startswith("evojax"))
    ratio = evojax_best / evolax_best

    result = {
        "benchmark": "cartpole_swingup_easy",
        "config": {"pop_size": POP, "n_repeats": REPEATS, "hidden": HIDDEN, "max_steps": 1000},
        "generations_per_round": args.generations,
        "rounds": args.rounds,
        "seconds_per_generation": per_gen,
        "all_rounds": times,
        "speedup_evolax_over_evojax": ratio,
        "versions": {
            "evolax": evolax.__version__,
            "evojax": version("evojax"),
            "jax": jax.__version__,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "backend": jax.default_backend(),
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print("| library | s / generation |\n|---|---|")
    for name, seconds in per_gen.items():
        print(f"| {name} | {seconds:.3f} |")
    where = f"{jax.default_backend()}, {os.cpu_count()} cores"
    print(f"\nevolax is {ratio:.1f}x EvoJAX's throughput ({where})")


if __name__ == "__main__":
    main()
