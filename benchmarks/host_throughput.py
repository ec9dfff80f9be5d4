"""Environment steps per second of a host task: evolax against the raw step rate and EvoTorch.

HalfCheetah-v5 (gymnasium, MuJoCo), an MLP policy [64, 64] with tanh layers and outputs, a
population of 64, one 1000-step episode per individual, ``--workers`` worker processes.
Measured side by side in one run, each after a warm-up generation (compiling, starting the
workers):

- raw: the same number of environments stepped with uniform random actions in the same
  number of worker processes, nothing else (the limit);
- evolax: ``Trainer.run`` with PGPE on ``Gymnasium("HalfCheetah-v5")``, the device-host
  overlap on and off (whole generations: ask, the host rollout, tell);
- EvoTorch 0.6.1: ``GymNE`` (``num_actors`` Ray actors) with its PGPE, the same network.

Writes ``benchmarks/results/host_throughput.json`` and ``docs/results/host_throughput.md`` (the
table docs/host.md includes).

    python benchmarks/host_throughput.py                  # 1 and 2 workers, 3 generations
    python benchmarks/host_throughput.py --workers 4 --generations 2 --no-evotorch
"""

from __future__ import annotations

import argparse
import multiprocessing
import time

import numpy as np

from results_table import RESULTS, write_results

ENV, POP, HIDDEN = "HalfCheetah-v5", 64, 64


def raw_worker(n_envs: int, steps: int, seed: int) -> tuple[int, float]:
    """``n_envs`` environments stepped ``steps`` times with random actions: (steps, seconds)."""
    import gymnasium

    envs = [gymnasium.make(ENV, disable_env_checker=True) for _ in range(n_envs)]
    rng = np.random.default_rng(seed)
    for i, env in enumerate(envs):
        env.reset(seed=seed * 1000 + i)
    shape = envs[0].action_space.shape
    start = time.perf_counter()
    for _ in range(steps):
        for env in envs:
            _, _, terminated, truncated, _ = env.step(rng.uniform(-1, 1, shape).astype(np.float32))
            if terminated or truncated:
                env.reset()
    return n_envs * steps, time.perf_counter() - start


def raw_rate(workers: int, steps: int) -> float:
    shares = [POP // workers + (i < POP % workers) for i in range(workers)]
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        results = pool.starmap(raw_worker, [(n, steps, i) for i, n in enumerate(shares)])
    return sum(n for n, _ in results) / max(s for _, s in results)


def evolax_rate(workers: int, generations: int, overlap: bool) -> float:
    import jax
    import optax

    from evolax import HostTrainer
    from evolax.algorithms import PGPE
    from evolax.policies import MLP
    from evolax.tasks import Gymnasium

    task = Gymnasium(ENV, n_workers=workers, overlap=overlap)
    policy = MLP(hidden_sizes=(HIDDEN, HIDDEN))  # tanh layers and outputs
    algorithm = PGPE(pop_size=POP, init_std=0.1, optimizer=optax.adam(0.01))
    trainer = HostTrainer(algorithm, policy, task)
    state, _ = trainer.run(trainer.init(jax.random.key(0)), 1)  # compiles, starts the workers
    start = time.perf_counter()
    state, metrics = jax.block_until_ready(trainer.run(state, generations))
    return float(np.sum(metrics["env_steps"])) / (time.perf_counter() - start)


def evotorch_rate(workers: int, generations: int) -> float:
    from evotorch.algorithms import PGPE
    from evotorch.neuroevolution import GymNE

    network = f"Linear(obs_length, {HIDDEN}) >> Tanh() >> Linear({HIDDEN}, {HIDDEN}) >> Tanh()"
    problem = GymNE(
        env=ENV, network=f"{network} >> Linear({HIDDEN}, act_length) >> Tanh()", num_actors=workers
    )
    searcher = PGPE(
        problem, popsize=POP, center_learning_rate=0.01, stdev_learning_rate=0.1, stdev_init=0.1
    )
    searcher.step()  # starts the actors
    before = problem.status["total_interaction_count"]
    start = time.perf_counter()
    for _ in range(generations):
        searcher.step()
    steps = problem.status["total_interaction_count"] - before
    seconds = time.perf_counter() - start
    if workers > 1:  # one: EvoTorch evaluates in this process, with no actors
        problem.kill_actors()
    return steps / seconds


def table(rows: list[dict]) -> str:
    lines = [
        "| workers | raw, random actions (the limit) | evolax, overlap on | evolax, overlap off "
        "| EvoTorch 0.6.1 GymNE | evolax (better) / EvoTorch |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        on, off, theirs = r["overlap_on"], r["overlap_off"], r.get("evotorch")
        lines.append(
            f"| {r['workers']} | {r['raw']:,.0f} | {on:,.0f} ({on / r['raw']:.2f} of it) "
            f"| {off:,.0f} ({off / r['raw']:.2f}) "
            + (f"| {theirs:,.0f} | {max(on, off) / theirs:.1f}x |" if theirs else "| - | - |")
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--generations", type=int, default=3, help="timed, per column")
    parser.add_argument("--no-evotorch", action="store_true")
    args = parser.parse_args()
    rows = []
    for workers in args.workers:
        row = {"workers": workers, "raw": raw_rate(workers, 1000)}
        print(f"{workers} workers, raw: {row['raw']:,.0f} steps/s", flush=True)
        for overlap in (True, False):
            rate = evolax_rate(workers, args.generations, overlap)
            row[f"overlap_{'on' if overlap else 'off'}"] = rate
            print(f"evolax, overlap {overlap}: {rate:,.0f} steps/s", flush=True)
        if not args.no_evotorch:
            row["evotorch"] = evotorch_rate(workers, args.generations)
            print(f"EvoTorch: {row['evotorch']:,.0f} steps/s", flush=True)
        rows.append(row)
    print(table(rows))
    write_results(
        RESULTS / "host_throughput.json", "host_throughput", rows, table, config=vars(args)
    )


if __name__ == "__main__":
    main()
