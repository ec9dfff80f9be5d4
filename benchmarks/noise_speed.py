"""Seconds to draw ``512 x 100,000`` standard normals: evolax's noise against jax.random.normal.

The draws alternate round by round in one process; the median of each is reported.
Run with `python benchmarks/noise_speed.py [--rows 512 --cols 100000 --rounds 7]`.
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp

from evolax.algorithms.noise import gaussian


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=512)
    parser.add_argument("--cols", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    shape = (args.rows, args.cols)
    draws = {
        "evolax gaussian": jax.jit(lambda k: jnp.sum(gaussian(k, shape))),
        "jax.random.normal": jax.jit(lambda k: jnp.sum(jax.random.normal(k, shape))),
    }
    times: dict[str, list[float]] = {name: [] for name in draws}
    for draw in draws.values():
        draw(jax.random.key(0)).block_until_ready()  # compile
    for i in range(args.rounds):
        for name, draw in draws.items():
            start = time.perf_counter()
            draw(jax.random.key(i + 1)).block_until_ready()
            times[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(t) for name, t in times.items()}
    for name, seconds in medians.items():
        print(f"{name}: {seconds:.3f} s")
    print(f"ratio: {medians['jax.random.normal'] / medians['evolax gaussian']:.2f}x")


if __name__ == "__main__":
    main()
