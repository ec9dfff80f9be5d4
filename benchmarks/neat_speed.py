"""NEAT's seconds per generation on cart-pole swing-up against neat-python 2.0 on both cores.

Both evolve feed-forward networks (5 inputs, 1 output, tanh nodes) with neat-python's XOR
example settings otherwise, on cart-pole swing-up (easy starts, EvoJAX's physics), one
1000-step episode per genome. neat-python evaluates its genomes in a process pool of both
cores (``neat.ParallelEvaluator``) on a numpy port of the same physics, one network
activation per step; evolax runs the trainer's jitted step (ask, evaluate, tell) on the two
CPU devices. Side by side in one run, at each population: neat-python's first generations
(its wall time per generation, evaluation and reproduction) and evolax's generations after
compiling (and its compile time). Peak memory is the evolax process's resident set. Writes
``benchmarks/results/neat_speed.json`` and ``docs/results/neat_speed.md``.

    python benchmarks/neat_speed.py                    # populations 1,000 and 10,000
    python benchmarks/neat_speed.py --pops 1000 --neat-python-generations 1
"""

from __future__ import annotations

import argparse
import math
import resource
import sys
import time
from pathlib import Path

import numpy as np

import evolax
from results_table import RESULTS, write_results

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
from neat_reference import config as xor_config

STEPS = 1000


def cartpole_return(net, seed: int) -> float:
    """One easy-start swing-up episode of ``net`` (neat-python), EvoJAX's equations in numpy."""
    rng = np.random.default_rng(seed)
    x, x_dot, theta, theta_dot = np.array([0.0, 0.0, math.pi, 0.0]) + 0.2 * rng.normal(size=4)
    g, m_c, m_p, length, mu, f_max, dt, limit = 9.82, 0.5, 0.5, 0.6, 0.1, 10.0, 0.01, 2.4
    total, m_p_l, ret = m_c + m_p, m_p * length, 0.0
    for _ in range(STEPS):
        s, c = math.sin(theta), math.cos(theta)
        action = net.activate([x, x_dot, c, s, theta_dot])[0]
        force = f_max * min(1.0, max(-1.0, action))
        x_acc = (
            -2 * m_p_l * theta_dot**2 * s + 3 * m_p * g * s * c + 4 * force - 4 * mu * x_dot
        ) / (4 * total - 3 * m_p * c**2)
        theta_acc = (
            -3 * m_p_l * theta_dot**2 * s * c + 6 * total * g * s + 6 * (force - mu * x_dot) * c
        ) / (4 * length * total - 3 * m_p_l * c**2)
        x, x_dot = x + x_dot * dt, x_dot + x_acc * dt
        theta, theta_dot = theta + theta_dot * dt, theta_dot + theta_acc * dt
        if abs(x) > limit:
            break
        ret += (math.cos(theta) + 1) / 2 * math.cos(x / limit * math.pi / 2)
    return ret


def evaluate_genome(genome, config) -> float:
    import neat

    return cartpole_return(neat.nn.FeedForwardNetwork.create(genome, config), genome.key)


def neat_python_seconds(pop: int, generations: int) -> float:
    import neat

    cfg = xor_config()
    cfg.pop_size = pop
    gc = cfg.genome_config
    gc.num_inputs, gc.num_outputs = 5, 1
    gc.input_keys, gc.output_keys = [-i - 1 for i in range(5)], [0]
    gc.activation_default, gc.activation_options = "tanh", ["tanh"]
    cfg.no_fitness_termination = True
    population = neat.Population(cfg)
    pool = neat.ParallelEvaluator(2, evaluate_genome)
    start = time.perf_counter()
    population.run(pool.evaluate, generations)
    seconds = (time.perf_counter() - start) / generations
    pool.close()
    return seconds


def evolax_seconds(pop: int, generations: int, chunk: int | None) -> tuple[float, float]:
    import jax

    from evolax.config import build_trainer, resolve

    overrides = [
        "algorithm.name=neat",
        f"algorithm.pop_size={pop}",
        "policy.name=neat",
        "policy.max_nodes=16",
        "policy.max_conns=64",
        "policy.activation_options=[tanh]",
        "trainer.n_repeats=1",
    ]
    if chunk:
        overrides.append(f"trainer.pop_chunk={chunk}")
    trainer = build_trainer(resolve("cartpole_easy", overrides))
    run = jax.jit(trainer.run, static_argnums=1)
    state = trainer.init(jax.random.key(0))
    start = time.perf_counter()
    state, _ = jax.block_until_ready(run(state, 1))
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    state, _ = jax.block_until_ready(run(state, 1))
    for _ in range(generations - 1):
        state, _ = jax.block_until_ready(run(state, 1))
    return (time.perf_counter() - start) / generations, compile_s


def table(rows: list[dict]) -> str:
    lines = [
        "| population | neat-python 2.0, 2 processes: s/generation | evolax: s/generation "
        "| speed-up | evolax compile, s | evolax peak memory |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['pop']:,} | {r['neat_python_s']:.2f} | {r['evolax_s']:.3f} "
            f"| {r['neat_python_s'] / r['evolax_s']:.0f}x | {r['compile_s']:.1f} "
            f"| {r['peak_rss_gib']:.1f} GiB |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pops", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--generations", type=int, default=3, help="evolax's, timed")
    parser.add_argument("--neat-python-generations", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=1000, help="evolax's pop_chunk")
    args = parser.parse_args()
    evolax.use_cpu_cores()
    rows = []
    for pop in args.pops:
        theirs = neat_python_seconds(pop, args.neat_python_generations)
        ours, compile_s = evolax_seconds(pop, args.generations, min(args.chunk, pop) // 2)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        rows.append(
            {"pop": pop, "neat_python_s": theirs, "evolax_s": ours, "compile_s": compile_s,
             "peak_rss_gib": peak}
        )  # fmt: skip
        print(table(rows), flush=True)
    write_results(RESULTS / "neat_speed.json", "neat_speed", rows, table, config=vars(args))


if __name__ == "__main__":
    main()
