"""Where an OpenES generation on the shifted sphere spends its time (d = 100,000, pop 1024).

Times, in alternating rounds in one process, each a jitted ``lax.scan`` over generations:
- ``noise``: the ``512 x d`` standard normals of the antithetic half, reduced to row sums;
- ``ask + sphere``: the mirrored population and its sphere values, without ``tell``;
- ``generation``: ask + sphere + tell, as in ``evosax_speed.py``.

The differences give the cost of the population and the sphere (``ask + sphere - noise``) and
of ``tell`` (``generation - ask + sphere``). The case (dimension, population, std, learning
rate) and the sphere are ``evosax_speed.py``'s. Run with `python benchmarks/open_es_parts.py
[--dim 100000 --pop 1024 --generations 3 --rounds 5]`.
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import optax

from evolax.algorithms import OpenES
from evolax.algorithms.noise import gaussian
from evosax_speed import CASES, sphere


def main() -> None:
    dim, pop, std, lr = CASES["open_es"]
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dim", type=int, default=dim)
    parser.add_argument("--pop", type=int, default=pop)
    parser.add_argument("--generations", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    algo = OpenES(args.pop, optimizer=optax.adam(lr), init_std=std)  # evosax_speed.py's case

    def noise(state, key):
        return state, jnp.sum(gaussian(key, (args.pop // 2, args.dim)), axis=-1)

    def ask_sphere(state, key):
        population, state = algo.ask(key, state)
        return state, sphere(population)

    def generation(state, key):
        population, state = algo.ask(key, state)
        state, _ = algo.tell(key, state, population, -sphere(population))
        return state, None

    parts = {"noise": noise, "ask + sphere": ask_sphere, "generation": generation}

    def scanned(step):
        return jax.jit(lambda s, k: jax.lax.scan(step, s, jax.random.split(k, args.generations)))

    runs = {name: scanned(step) for name, step in parts.items()}
    state = algo.init(jax.random.key(0), jnp.zeros(args.dim))
    for run in runs.values():
        jax.block_until_ready(run(state, jax.random.key(0)))  # compile
    times: dict[str, list[float]] = {name: [] for name in runs}
    for i in range(args.rounds):
        for name, run in runs.items():
            start = time.perf_counter()
            jax.block_until_ready(run(state, jax.random.key(i + 1)))
            times[name].append((time.perf_counter() - start) / args.generations)
    medians = {name: statistics.median(t) for name, t in times.items()}
    for name, seconds in medians.items():
        print(f"{name}: {seconds:.3f} s per generation")
    print(f"population + sphere: {medians['ask + sphere'] - medians['noise']:.3f} s")
    print(f"tell: {medians['generation'] - medians['ask + sphere']:.3f} s")


if __name__ == "__main__":
    main()
