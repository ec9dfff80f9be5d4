"""Seconds per batch of episodes: the fused rollout (a Pallas kernel) against the XLA loop.

Both run the same population on the same episodes (``initial_states``): ``run_episodes``
(XLA's ``while_loop`` over steps) and ``run_fused_episodes`` (``--steps-per-launch`` steps per
kernel launch), each jitted, alternating round by round in one process; the median of each is
reported, with their ratio and the largest relative difference of the returns (float32
round-off) and whether the lengths are equal. Matrix products are float32 in both (no TF32).
On a GPU the kernel is compiled with Triton; on a
CPU it runs in interpret mode (as XLA operations, far slower than the XLA loop): the CPU table
checks that the two agree, its times are no measure of the kernel.

Defaults: cart-pole's preset (pop 64, 16 repeats, 1,000 steps, MLP 64-64) and double pole
(pop 64, 1 repeat, MLP 8 hidden, 1,000 steps); on a CPU (interpret mode) the sizes are cut to
pop 8, 100 steps unless given. Writes ``benchmarks/results/fused_rollout.json`` and
``docs/results/fused_rollout.md`` (the table docs/scaling.md includes).

Run with `python benchmarks/fused_rollout.py [--tasks cartpole,double_pole --pop-size 64
--max-steps 1000 --rounds 5 --steps-per-launch 64]`.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import jax
import numpy as np

from evolax import MLP, CartPoleSwingUp
from evolax.rollout.episode import initial_states, run_episodes
from evolax.rollout.fused import run_fused_episodes
from evolax.tasks import DoublePole
from results_table import RESULTS, write_results

#: each task's policy and repeats (cart-pole: its preset's; double pole: one fixed start)
CASES = {
    "cartpole": (lambda steps: CartPoleSwingUp(max_steps=steps), (64, 64), 16),
    "double_pole": (lambda steps: DoublePole(max_steps=steps), (8,), 1),
}


def table(rows: list[dict]) -> str:
    lines = [
        "| task | pop x repeats | steps | XLA loop | fused | XLA / fused | kernel | returns' "
        "largest relative difference | lengths equal |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['pop_size']} x {r['n_repeats']} | {r['max_steps']} | "
            f"{r['xla_s']:.4f} s | {r['fused_s']:.4f} s | {r['speedup']:.2f}x | "
            f"{'interpret (CPU: correctness only)' if r['interpret'] else 'Triton'} | "
            f"{r['max_rel_diff']:.1e} | {'yes' if r['lengths_equal'] else 'NO'} |"
        )
    return "\n".join(lines)


def measure(name: str, pop_size: int, max_steps: int, args, interpret: bool) -> dict:
    make, hidden, n_repeats = CASES[name]
    task, policy = make(max_steps), MLP(hidden_sizes=hidden)
    keys = jax.random.split(jax.random.key(0), pop_size)
    population = jax.vmap(lambda k: policy.init(k, task.obs_shape, task.action_shape))(keys)
    initial = initial_states(policy, task, jax.random.key(1), n_repeats)
    runs = {
        "xla": jax.jit(lambda p, i: run_episodes(policy, task, p, i)[:2]),
        "fused": jax.jit(
            lambda p, i: run_fused_episodes(
                policy, task, p, i, steps_per_launch=args.steps_per_launch, interpret=interpret
            )[:2]
        ),
    }
    results = {k: jax.block_until_ready(run(population, initial)) for k, run in runs.items()}
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.rounds):
        for k, run in runs.items():
            start = time.perf_counter()
            jax.block_until_ready(run(population, initial))
            times[k].append(time.perf_counter() - start)
    (returns, lengths), (f_returns, f_lengths) = results["xla"], results["fused"]
    returns, f_returns = np.asarray(returns), np.asarray(f_returns)
    scale = np.maximum(np.abs(returns), 1.0)
    xla_s, fused_s = (statistics.median(times[k]) for k in ("xla", "fused"))
    return {
        "task": name, "pop_size": pop_size, "n_repeats": n_repeats, "max_steps": max_steps,
        "hidden_sizes": list(hidden), "steps_per_launch": args.steps_per_launch,
        "xla_s": xla_s, "fused_s": fused_s, "speedup": xla_s / fused_s, "interpret": interpret,
        "max_rel_diff": float(np.max(np.abs(f_returns - returns) / scale)),
        "lengths_equal": bool(np.array_equal(lengths, f_lengths)),
        "mean_length": float(np.mean(lengths)),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", default="cartpole,double_pole")
    parser.add_argument("--pop-size", type=int, default=None, help="64 (8 on a CPU)")
    parser.add_argument("--max-steps", type=int, default=None, help="1000 (100 on a CPU)")
    parser.add_argument("--steps-per-launch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=str(RESULTS / "fused_rollout.json"))
    args = parser.parse_args()
    # the kernel's matmuls are float32 (Triton's IEEE): so are the XLA loop's, where a GPU's
    # default would be TF32, to compare the same arithmetic (and time it)
    jax.config.update("jax_default_matmul_precision", "highest")
    interpret = jax.default_backend() == "cpu"  # Pallas runs on a CPU only as XLA operations
    pop_size = args.pop_size or (8 if interpret else 64)
    max_steps = args.max_steps or (100 if interpret else 1000)
    rows = []
    for name in args.tasks.split(","):
        rows.append(measure(name, pop_size, max_steps, args, interpret))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    write_results(Path(args.out), "fused_rollout", rows, table, backend=jax.default_backend())
    print(table(rows))


if __name__ == "__main__":
    main()
