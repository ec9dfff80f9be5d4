"""Seconds per generation of cart-pole swing-up in each episode loop, against the while loop.

EvoJAX's published cart-pole configuration (PGPE pop 64, adam centre lr 0.05, std lr 0.1,
init std 0.1, MLP [64, 64], 16 repeats, 1000-step episodes, from an all-zero centre) trained
with the same devices and groups (`evolax.place` with the while loop) in every loop form of
`evolax.EpisodeLoop`, forced with `Trainer.with_layout`: the while loop, the scan one step and
4 steps per iteration, and the chunked loop in blocks of 125 and 32 steps (the candidates
`evolax.placement` measures, `tuner.loop_candidates`). A generation is ask + evaluate + tell;
compilation is timed apart (the first call). The forms alternate round by round in one
process, and each reports its median; "same results" compares each form's state and metrics
after its first round with the while loop's, bit for bit. Run with
`python benchmarks/episode_loops.py [--generations 5 --rounds 3]`; on an accelerator,
`benchmarks/accelerator.sh` runs it and adds a row per form to its table.
"""

from __future__ import annotations

import argparse
import statistics
import time

import equinox as eqx
import jax
import numpy as np
import optax

import evolax
from evolax.layout import Layout
from evolax.placement.tuner import loop_candidates
from results_table import RESULTS, write_results

POP, REPEATS, HIDDEN, CENTER_LR, STD_LR, INIT_STD = 64, 16, (64, 64), 0.05, 0.1, 0.1


def label(loop) -> str:
    if loop.form == "while":
        return "while"
    if loop.form == "scan":
        return f"scan, unroll {loop.unroll}"
    return f"chunked, block {loop.block}" + (f", unroll {loop.unroll}" if loop.unroll > 1 else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generations", type=int, default=5, help="generations per round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating timing rounds")
    parser.add_argument("--max-steps", type=int, default=1000, help="episode length limit")
    args = parser.parse_args()
    evolax.use_cpu_cores()  # before JAX starts its backends (on a CPU: a device per core)
    trainer = evolax.Trainer(
        algorithm=evolax.PGPE(
            pop_size=POP, optimizer=optax.adam(CENTER_LR), init_std=INIT_STD, std_lr=STD_LR
        ),
        policy=evolax.MLP(hidden_sizes=HIDDEN),
        task=evolax.CartPoleSwingUp(max_steps=args.max_steps),
        n_repeats=REPEATS,
        init_scale=0.0,  # EvoJAX's PGPE starts at an all-zero centre too
        loop="while",
    )
    start = trainer.init(jax.random.key(0))
    placed = evolax.place(trainer, start).layout  # devices and groups, with the while loop
    loops = loop_candidates(args.max_steps)
    run = eqx.filter_jit(lambda t, s, n: t.run(s, n))
    trainers = {
        label(loop): trainer.with_layout(Layout(placed.devices, placed.pop_chunk, loop))
        for loop in loops
    }
    compile_s, states, first = {}, {}, {}
    for name, t in trainers.items():
        begin = time.perf_counter()
        first[name] = jax.block_until_ready(run(t, start, args.generations))  # compiles
        compile_s[name] = time.perf_counter() - begin
        states[name] = first[name][0]
    times: dict[str, list[float]] = {name: [] for name in trainers}
    for _ in range(args.rounds):
        for name, t in trainers.items():
            begin = time.perf_counter()
            states[name], _ = jax.block_until_ready(run(t, states[name], args.generations))
            times[name].append((time.perf_counter() - begin) / args.generations)
    reference = _leaves(first["while"])
    rows = []
    for name in trainers:
        per_gen = statistics.median(times[name])
        pairs = zip(_leaves(first[name]), reference, strict=True)
        same = all(np.array_equal(x, y) for x, y in pairs)
        rows.append(
            {
                "loop": name,
                "seconds_per_generation": per_gen,
                "ratio_to_while": per_gen / statistics.median(times["while"]),
                "compile_s": compile_s[name],
                "same_results": same,
            }
        )
        print(f"{name}: {per_gen:.4f} s/generation, compile {compile_s[name]:.1f} s, same {same}")
    config = {
        "pop_size": POP,
        "n_repeats": REPEATS,
        "hidden": HIDDEN,
        "max_steps": args.max_steps,
        "devices": placed.devices,
        "pop_chunk": placed.pop_chunk,
        "backend": jax.default_backend(),
    }
    write_results(RESULTS / "episode_loops.json", "episode_loops", rows, table, config=config)


def _leaves(tree) -> list[np.ndarray]:
    """``tree``'s arrays on the host (PRNG keys as their data)."""
    keys = jax.dtypes.prng_key
    return [
        np.asarray(jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype, keys) else x)
        for x in jax.tree.leaves(tree)
    ]


def table(rows: list[dict]) -> str:
    lines = [
        "| episode loop | s / generation | time / while loop's | compile s | same results |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['loop']} | {r['seconds_per_generation']:.4f} | {r['ratio_to_while']:.2f} "
        f"| {r['compile_s']:.1f} | {'yes' if r['same_results'] else 'no'} |"
        for r in rows
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
