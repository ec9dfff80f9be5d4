"""Where a seeded member's Gaussian costs go on the CPU: random bits against their transform,
and JAX's generators side by side.

A seeded population (:mod:`evolax.seeded`) draws member ``i``'s noise as ``normal(fold_in(key,
i), [noise_size])``: a 99.5M-parameter language model at rank 1 draws 206,000 numbers a member.
Each way below draws ``--members`` such members (``vmap`` over ``fold_in``; 485 x 206,000 =
1e8 numbers) in one jitted call; the ways alternate round by round in one process, and a row
is the median over rounds of nanoseconds per number. Bits: ``uint32`` words alone. Transform:
from given bits, a standard normal by the inverse error function (``jax.random.normal``'s) or
by Box-Muller (pairs: ``sqrt(-2 log u1) (cos, sin)(2 pi u2)``).

    python benchmarks/seeded_noise_speed.py               # 1e8 numbers, 3 rounds
    python benchmarks/seeded_noise_speed.py --small       # a check of the script
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from evolax.algorithms.noise import gaussian
from evolax.seeded import normal, threefry2x32
from results_table import RESULTS, write_results


def members_of(draw, impl: str = "threefry2x32"):
    """``draw(key)`` for each member index, from ``fold_in(key(0), index)``."""
    base = jax.random.key(0, impl=impl)
    return jax.jit(jax.vmap(lambda i: draw(jax.random.fold_in(base, i))))


def unrolled_bits(key, size: int):
    k = jax.random.key_data(key)
    count = jax.lax.iota(jnp.uint32, size)
    y0, y1 = threefry2x32(k[0], k[1], jnp.zeros_like(count), count)
    return y0 ^ y1


def unit(bits):
    one = jax.lax.bitcast_convert_type((bits >> 9) | np.uint32(0x3F800000), jnp.float32)
    return one - 1.0


def inverse_erf(bits):
    low = np.nextafter(np.float32(-1), np.float32(0))
    return np.float32(np.sqrt(2)) * jax.lax.erf_inv(jnp.maximum(low, 2 * unit(bits) - 1))


def box_muller(bits):
    half = bits.shape[-1] // 2
    radius = jnp.sqrt(-2 * jnp.log(1 - unit(bits[..., :half])))
    angle = np.float32(2 * np.pi) * unit(bits[..., half:])
    return jnp.concatenate([radius * jnp.cos(angle), radius * jnp.sin(angle)], -1)


def ways(size: int) -> list[tuple[str, str, str, object]]:
    """(name, what it draws, same numbers as jax.random.normal, function of the indices)."""
    return [
        (
            "`jax.random.normal`, Threefry (JAX's CPU lowering: a loop over rounds)",
            "normal",
            "yes",
            members_of(lambda k: jax.random.normal(k, (size,))),
        ),
        (
            "`evolax.seeded.normal` (Threefry's rounds written out; the default)",
            "normal",
            "yes",
            members_of(lambda k: normal(k, size)),
        ),
        (
            "`evolax.algorithms.noise.gaussian` (XLA's RngBitGenerator, one key at a time)",
            "normal",
            "no",
            members_of(lambda k: gaussian(k, (size,))),
        ),
        (
            '`jax.random.normal`, `impl="rbg"`',
            "normal",
            "no",
            members_of(lambda k: jax.random.normal(k, (size,)), "rbg"),
        ),
        (
            '`jax.random.normal`, `impl="unsafe_rbg"`',
            "normal",
            "no",
            members_of(lambda k: jax.random.normal(k, (size,)), "unsafe_rbg"),
        ),
        (
            "`jax.random.bits`, Threefry",
            "bits",
            "-",
            members_of(lambda k: jax.random.bits(k, (size,), jnp.uint32)),
        ),
        (
            "Threefry's rounds written out",
            "bits",
            "-",
            members_of(lambda k: unrolled_bits(k, size)),
        ),
        (
            '`jax.random.bits`, `impl="rbg"`',
            "bits",
            "-",
            members_of(lambda k: jax.random.bits(k, (size,), jnp.uint32), "rbg"),
        ),
        (
            "inverse error function, from given bits",
            "transform",
            "-",
            jax.jit(lambda bits: inverse_erf(bits)),
        ),
        ("Box-Muller, from given bits", "transform", "-", jax.jit(lambda bits: box_muller(bits))),
    ]


def table(rows: list[dict]) -> str:
    lines = [
        "| way | draws | ns / number | vs `jax.random.normal` | jax.random.normal's numbers |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['way']} | {r['draws']} | {r['ns_per_number']:.1f} "
            f"| {r['speedup']:.2f}x | {r['same_numbers']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=485)
    parser.add_argument("--size", type=int, default=206_000, help="numbers a member draws")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--small", action="store_true")
    args = parser.parse_args()
    if args.small:
        args.members, args.size, args.rounds = 8, 10_000, 2
    index = jnp.arange(args.members, dtype=jnp.int32)
    bits = jax.random.bits(jax.random.key(1), (args.members, args.size), jnp.uint32)
    chosen = ways(args.size)
    inputs = [bits if what == "transform" else index for _, what, _, _ in chosen]
    for (_, _, _, fn), x in zip(chosen, inputs, strict=True):
        jax.block_until_ready(fn(x))  # compile
    seconds: list[list[float]] = [[] for _ in chosen]
    for _ in range(args.rounds):
        for times, (_, _, _, fn), x in zip(seconds, chosen, inputs, strict=True):
            begin = time.perf_counter()
            jax.block_until_ready(fn(x))
            times.append(time.perf_counter() - begin)
    numbers = args.members * args.size
    ns = [statistics.median(t) / numbers * 1e9 for t in seconds]
    rows = [
        {
            "way": name,
            "draws": what,
            "same_numbers": same,
            "ns_per_number": n,
            "speedup": ns[0] / n,
            "rounds_s": times,
            "members": args.members,
            "size": args.size,
        }
        for (name, what, same, _), n, times in zip(chosen, ns, seconds, strict=True)
    ]
    name = "seeded_noise_speed_small" if args.small else "seeded_noise_speed"
    write_results(RESULTS / f"{name}.json", name, rows, table)
    print(table(rows))


if __name__ == "__main__":
    main()
