"""LowRankES at 100 million parameters and a population of 4,096, against batch inference.

A one-step regression task: each generation draws ``--batch`` inputs ``x ~ N(0, I)`` of 1,024
features, shared by every member, and scores a member by minus the mean squared error of its
16 outputs against a fixed random teacher ``tanh(x T)``. The policy is an MLP applied to each
input row (1,024 -> 8,192 -> 8,192 -> 4,096 -> 16, tanh: 109 million parameters). Full-rank
OpenES would hold ``pop * D`` numbers, 1.8 TB; LowRankES (rank 1) holds the mean and one
integer per member, and draws each member's factors inside the forward pass.

Measured side by side in one process: seconds per generation of the trainer's jitted step
(ask, evaluate, update; after its compilation), and seconds of one forward pass of the
unperturbed network over the same ``pop * batch`` input rows (the inference a generation
could at most run). Throughput ratio = forward / generation. Peak memory is the process's
maximum resident set after the generations (before the batch-inference baseline). The mean's
squared error on 1,024 held-out inputs before and after the generations shows it trains.

    python benchmarks/hyperscale.py                # about 3 minutes on 2 cores
    python benchmarks/hyperscale.py --batch 8      # a second row: 8 inputs per member
    python benchmarks/hyperscale.py --small        # a 0.1M-parameter check of the script
    python benchmarks/hyperscale.py --features 4096 --hidden 16384 16384 16384 --batch 16
                                                   # 604M parameters (an accelerator's)
"""

from __future__ import annotations

import argparse
import math
import resource
import time

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

import evolax
from evolax.algorithms import LowRankES
from evolax.policies import Policy
from evolax.policies.base import EmptyState
from evolax.tasks import Task
from results_table import RESULTS, previous_rows, write_results


@chex.dataclass(frozen=True)
class RegressionState:
    obs: jax.Array


class Regression(Task):
    """Fit a fixed random teacher ``tanh(x T)`` on ``batch`` Gaussian inputs per step."""

    teacher: jax.Array
    obs_shape: tuple[int, int] = eqx.field(static=True)
    action_shape: tuple[int, int] = eqx.field(static=True)
    max_steps: int = eqx.field(static=True)

    def __init__(self, teacher: jax.Array, batch: int):
        self.teacher = teacher
        self.obs_shape = (batch, teacher.shape[0])
        self.action_shape = (batch, teacher.shape[1])
        self.max_steps = 1

    def reset(self, key):
        return RegressionState(obs=jax.random.normal(key, self.obs_shape))

    def step(self, state, action, key):
        target = jnp.tanh(state.obs @ self.teacher)
        return state, -jnp.mean((action - target) ** 2), jnp.asarray(True)


class RowMLP(Policy):
    """Tanh dense layers applied to each row of a ``[batch, features]`` observation."""

    sizes: tuple[int, ...] = eqx.field(static=True)

    def init(self, key, obs_shape, action_shape):
        sizes = (obs_shape[-1], *self.sizes, action_shape[-1])
        keys = jax.random.split(key, len(sizes) - 1)
        return [
            {"w": jax.random.normal(k, (a, b)) / math.sqrt(a), "b": jnp.zeros(b)}
            for k, a, b in zip(keys, sizes[:-1], sizes[1:], strict=True)
        ]

    def apply(self, params, obs, state, key):
        x = obs
        for i, layer in enumerate(params):
            x = x @ layer["w"] + layer["b"][None, :]
            x = jnp.tanh(x) if i < len(params) - 1 else x
        return x, state

    def reset(self, key):
        return EmptyState()


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def device_peak_gib() -> float | None:
    """The accelerator's peak memory in use (``None`` on the CPU, which reports none)."""
    stats = jax.devices()[0].memory_stats() or {}
    return stats["peak_bytes_in_use"] / 2**30 if "peak_bytes_in_use" in stats else None


def measure(args) -> dict:
    features, outputs = (64, 4) if args.small else (args.features, 16)
    hidden = (256, 256, 128) if args.small else tuple(args.hidden)
    task = Regression(
        teacher=jax.random.normal(jax.random.key(1), (features, outputs)) / math.sqrt(features),
        batch=args.batch,
    )
    policy = RowMLP(hidden)
    trainer = evolax.Trainer(
        algorithm=LowRankES(
            pop_size=args.pop, rank=args.rank, init_std=0.02, optimizer=optax.adam(1e-3)
        ),
        policy=policy,
        task=task,
        mesh=None,
        pop_chunk=args.chunk,
    )
    state = trainer.init(jax.random.key(0))
    dim = sum(int(leaf.size) for leaf in jax.tree.leaves(state.algo_state.mean))
    held_out = Regression(task.teacher, batch=1024).reset(jax.random.key(3))
    forward = jax.jit(lambda p, x: policy.apply(p, x, EmptyState(), None)[0])

    def test_mse(state) -> float:
        params = trainer.algorithm.best(state.algo_state)
        target = jnp.tanh(held_out.obs @ task.teacher)
        return float(jnp.mean((forward(params, held_out.obs) - target) ** 2))

    mse = [test_mse(state)]
    step = jax.jit(lambda s: trainer.step(s), donate_argnums=0)
    begin = time.perf_counter()
    state, first = step(state)
    jax.block_until_ready(state)
    compile_s = time.perf_counter() - begin
    fitness, seconds = [float(first["fitness_mean"])], []
    for _ in range(args.generations):
        begin = time.perf_counter()
        state, metrics = step(state)
        jax.block_until_ready(state)
        seconds.append(time.perf_counter() - begin)
        fitness.append(float(metrics["fitness_mean"]))
    peak, device_peak = peak_gib(), device_peak_gib()
    mse.append(test_mse(state))

    params = trainer.algorithm.best(state.algo_state)
    rows = jax.random.normal(jax.random.key(2), (args.pop * args.batch, features))
    jax.block_until_ready(forward(params, rows))
    inference = []
    for _ in range(3):
        begin = time.perf_counter()
        jax.block_until_ready(forward(params, rows))
        inference.append(time.perf_counter() - begin)
    generation, batch = float(np.median(seconds)), float(np.median(inference))
    return {
        "parameters": dim,
        "pop_size": args.pop,
        "rank": args.rank,
        "batch": args.batch,
        "pop_chunk": args.chunk,
        "full_rank_population_gb": args.pop * dim * 4 / 1e9,
        "compile_and_first_s": compile_s,
        "generation_s": generation,
        "batch_inference_s": batch,
        "throughput_ratio": batch / generation,
        "peak_rss_gib": peak,
        "peak_device_gib": device_peak,
        "fitness_mean": fitness,
        "held_out_mse": mse,
    }


def memory(row: dict) -> str:
    """Peak memory: the accelerator's where there is one, else the process's resident set."""
    if row.get("peak_device_gib") is not None:
        return f"{row['peak_device_gib']:.1f} GiB (device)"
    return f"{row['peak_rss_gib']:.1f} GiB"


def table(rows: list[dict]) -> str:
    lines = [
        "| parameters | population | rank | inputs per member | full-rank population "
        "| peak memory | s / generation | batch inference, s | throughput vs inference "
        "| held-out MSE, start -> end |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['parameters'] / 1e6:.1f}M | {r['pop_size']:,} | {r['rank']} | {r['batch']} "
            f"| {r['full_rank_population_gb']:,.0f} GB | {memory(r)} "
            f"| {r['generation_s']:.3g} | {r['batch_inference_s']:.3g} "
            f"| {r['throughput_ratio']:.2f} "
            f"| {r['held_out_mse'][0]:.4f} -> {r['held_out_mse'][-1]:.4f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pop", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=4, help="inputs per member")
    parser.add_argument("--rank", type=int, default=1)
    parser.add_argument("--chunk", type=int, default=1024, help="members evaluated at once")
    parser.add_argument("--generations", type=int, default=3, help="timed, after the first")
    parser.add_argument("--features", type=int, default=1024, help="inputs' width")
    parser.add_argument("--hidden", type=int, nargs="+", default=[8192, 8192, 4096])
    parser.add_argument("--small", action="store_true")
    args = parser.parse_args()
    row = measure(args)
    name = "hyperscale_small" if args.small else "hyperscale"
    out = RESULTS / f"{name}.json"
    same = ("parameters", "pop_size", "rank", "batch")
    rows = [r for r in previous_rows(out) if any(r[k] != row[k] for k in same)] + [row]
    rows.sort(key=lambda r: [r[k] for k in same])
    write_results(out, name, rows, table)
    print(table(rows))


if __name__ == "__main__":
    main()
