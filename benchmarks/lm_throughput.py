"""LowRankES on a 1e8-parameter language model: a generation against batch inference, and its
peak memory against ``parameters + population x rank x (m + n)``.

The model is an :mod:`evolax.lm` decoder (Llama's layout) over the byte tokenizer's 259 tokens:
``d_model`` 768, 14 blocks of 12 heads and a SwiGLU MLP of 2,048, a separate head: 99.5
million parameters. Each generation draws ``--batch`` sequences of ``--tokens + 1`` tokens
(arithmetic progressions ``start + step * t`` modulo 256, a pattern a model can learn), shared
by every member, and scores a member by the mean log-likelihood of each next token under it:
one forward pass of ``batch * tokens`` positions per member, no member's weights formed
(EGGROLL's rank-``r`` factors applied inside the forward pass, :class:`evolax.seeded.LowRank`).

Measured side by side in one worker process per configuration, alternating rounds: seconds of
the trainer's jitted step (ask, every member's forward pass, tell; after its compilation), and
seconds of one batched forward pass of the unperturbed model (the mean, scoring the same way)
over ``pop * batch`` sequences of the same length: the same tokens in total,
the inference a generation could at most run. Throughput = forward / generation, the median
over rounds. Memory: the worker's peak resident set (a fresh process per configuration, the
baseline's pass included), and the compiled generation's own buffers (arguments, outputs and
temporaries, XLA's ``memory_analysis``), against ``(D + pop * r * sum(m + n)) * 4`` bytes (the
mean and one population's factors) and the ``pop * D * 4`` bytes of a full-rank population.

The members are evaluated ``--chunk`` at a time (``chunk / 2`` antithetic pairs, each pair's
factors drawn once for both members) and the update sums the factors of half as many pairs at a
time (``update_block``), so the factors held at once are ``chunk * r * sum(m + n)`` numbers,
within the formula's ``pop * r * sum(m + n)``.

The factors are drawn by :func:`evolax.seeded.normal` (``jax.random.normal``'s numbers, with
Threefry's rounds written out); ``--draw jax`` draws them with ``jax.random.normal`` itself
(JAX's CPU Threefry, a loop over the rounds), the same members, for a row to compare.

    python benchmarks/lm_throughput.py --pop 1024 4096 --tokens 16 4 --rounds 2 --chunk 256
                                        # the docs' rows: about 30 minutes on 2 loaded cores
    python benchmarks/lm_throughput.py  # pop 1,024 x 8 tokens and 4,096 x 2 tokens, rank 1
    python benchmarks/lm_throughput.py --small      # a 0.1M-parameter check of the script
    python benchmarks/lm_throughput.py --pop 4096 --tokens 4 --draw jax  # the old draw's row
    python benchmarks/lm_throughput.py --pop 4096 --tokens 32 --d-model 2048 --layers 20 \
        --heads 16 --d-ff 5504          # 1.01e9 parameters (an accelerator's: accelerator.sh)
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

import evolax
import evolax.seeded
from evolax.algorithms import LowRankES
from evolax.lm import LMConfig
from evolax.lm.model import forward, init_params
from evolax.policies import Policy
from evolax.policies.base import EmptyState
from evolax.tasks import Task
from results_table import RESULTS, previous_rows, write_results

VOCAB = 259  # the byte tokenizer's


@chex.dataclass(frozen=True)
class TokensState:
    obs: jax.Array


class Progressions(Task):
    """``batch`` sequences ``start + step * t`` (mod 256) of ``length`` tokens per step; the
    reward is the action's mean (the policy's next-token log-likelihoods)."""

    obs_shape: tuple[int, int] = eqx.field(static=True)
    action_shape: tuple[int, int] = eqx.field(static=True)
    max_steps: int = eqx.field(static=True, default=1)

    def __init__(self, batch: int, length: int):
        self.obs_shape = (batch, length)
        self.action_shape = (batch, length - 1)

    def reset(self, key):
        return TokensState(obs=progressions(key, *self.obs_shape))

    def step(self, state, action, key):
        return state, jnp.mean(action), jnp.asarray(True)


def progressions(key, batch: int, length: int) -> jax.Array:
    start_key, step_key = jax.random.split(key)
    start = jax.random.randint(start_key, (batch, 1), 0, 256)
    step = jax.random.randint(step_key, (batch, 1), 1, 8)
    return ((start + step * jnp.arange(length)) % 256).astype(jnp.int32)


def log_likelihoods(config: LMConfig, params, tokens: jax.Array) -> jax.Array:
    """``[batch, len - 1]``: each next token's log-probability after the tokens before it."""

    def one(seq):
        logits, _ = forward(config, params, seq[:-1])
        logp = jax.nn.log_softmax(logits)
        return jnp.take_along_axis(logp, seq[1:, None], axis=-1)[:, 0]

    return jax.vmap(one)(tokens)


class Scorer(Policy):
    """The language model as a scorer: observation ``[batch, len]`` tokens, action their
    ``[batch, len - 1]`` next-token log-likelihoods."""

    config: LMConfig = eqx.field(static=True)

    def init(self, key, obs_shape, action_shape):
        return init_params(self.config, key)

    def apply(self, params, obs, state, key):
        return log_likelihoods(self.config, params, obs), state

    def reset(self, key):
        return EmptyState()


def model(args) -> LMConfig:
    if args.small:
        return LMConfig(vocab_size=VOCAB, d_model=64, n_layers=2, n_heads=4, d_ff=192)
    return LMConfig(
        vocab_size=VOCAB,
        d_model=args.d_model,
        n_layers=args.layers,
        n_heads=args.heads,
        d_ff=args.d_ff,
        max_len=max(128, args.tokens + 1),
    )


def factor_rows(params) -> int:
    """``sum(m + n)`` over the matrices of the genome (``m``: all axes but the last)."""
    return sum(
        math.prod(x.shape[:-1]) + x.shape[-1] for x in jax.tree.leaves(params) if x.ndim >= 2
    )


def compiled_bytes(compiled) -> float | None:
    """Arguments, outputs and temporaries of a compiled program, in bytes (``None`` if XLA
    does not say)."""
    try:
        stats = compiled.memory_analysis()
        return float(
            stats.argument_size_in_bytes
            + stats.output_size_in_bytes
            + stats.temp_size_in_bytes
            - stats.alias_size_in_bytes
        )
    except (AttributeError, NotImplementedError, TypeError):
        return None


def peak_rss_bytes() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0  # KiB on Linux


def device_peak_bytes() -> float | None:
    """The accelerator's peak memory in use (``None`` on the CPU, which reports none)."""
    stats = jax.devices()[0].memory_stats() or {}
    return float(stats["peak_bytes_in_use"]) if "peak_bytes_in_use" in stats else None


def measure(args) -> dict:
    """One configuration, in this process: alternating rounds of a generation and the batched
    forward pass."""
    if args.draw == "jax":  # the same numbers by JAX's own CPU lowering
        evolax.seeded.normal = lambda key, size, dtype=jnp.float32: jax.random.normal(
            key, (size,), dtype
        )
    config = model(args)
    task = Progressions(args.batch, args.tokens + 1)
    policy = Scorer(config)
    trainer = evolax.Trainer(
        algorithm=LowRankES(
            pop_size=args.pop,
            rank=args.rank,
            init_std=0.02,
            optimizer=optax.adam(1e-3),
            update_block=min(args.chunk, args.pop) // 2,
        ),
        policy=policy,
        task=task,
        mesh=None,
        pop_chunk=min(args.chunk, args.pop),
    )
    state = trainer.init(jax.random.key(0))
    mean = state.algo_state.mean
    dim = sum(int(x.size) for x in jax.tree.leaves(mean))
    rows = factor_rows(mean)

    step = jax.jit(lambda s: trainer.step(s), donate_argnums=0)
    begin = time.perf_counter()
    step_compiled = step.lower(state).compile()
    state, first = step_compiled(state)
    jax.block_until_ready(state)
    compile_s = time.perf_counter() - begin

    # the baseline: the same tokens in total, pop * batch sequences, one batched pass
    batched = jax.jit(lambda p, t: jnp.mean(log_likelihoods(config, p, t)))
    tokens = progressions(jax.random.key(2), args.pop * args.batch, args.tokens + 1)
    params = trainer.algorithm.best(state.algo_state)
    batched_compiled = batched.lower(params, tokens).compile()
    jax.block_until_ready(batched_compiled(params, tokens))

    generation, inference, fitness = [], [], [float(first["fitness_mean"])]
    for _ in range(args.rounds):
        begin = time.perf_counter()
        state, metrics = step_compiled(state)
        jax.block_until_ready(state)
        generation.append(time.perf_counter() - begin)
        fitness.append(float(metrics["fitness_mean"]))
        params = trainer.algorithm.best(state.algo_state)
        begin = time.perf_counter()
        jax.block_until_ready(batched_compiled(params, tokens))
        inference.append(time.perf_counter() - begin)
    ratios = [b / g for b, g in zip(inference, generation, strict=True)]
    return {
        "parameters": dim,
        "pop_size": args.pop,
        "rank": args.rank,
        "draw": args.draw,
        "batch": args.batch,
        "tokens": args.tokens,
        "pop_chunk": min(args.chunk, args.pop),
        "update_block": min(args.chunk, args.pop) // 2,
        "factor_rows": rows,
        "formula_bytes": 4.0 * (dim + args.pop * args.rank * rows),
        "full_rank_population_bytes": 4.0 * args.pop * dim,
        "compile_and_first_s": compile_s,
        "generation_s": float(np.median(generation)),
        "batch_inference_s": float(np.median(inference)),
        "throughput_ratio": float(np.median(ratios)),
        "generation_rounds_s": generation,
        "inference_rounds_s": inference,
        "peak_rss_bytes": peak_rss_bytes(),
        "peak_device_bytes": device_peak_bytes(),
        "generation_program_bytes": compiled_bytes(step_compiled),
        "fitness_mean": fitness,
    }


def gib(x: float | None) -> str:
    return "-" if x is None else f"{x / 2**30:.2f} GiB"


DRAWS = {"evolax": "`evolax.seeded.normal`", "jax": "`jax.random.normal`"}


def table(rows: list[dict]) -> str:
    lines = [
        "| parameters | population | rank | tokens per member | factors drawn by "
        "| D + pop r sum(m+n) "
        "| generation's program | peak memory | full-rank population | s / generation "
        "| batch inference, s | throughput vs inference |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        peak = (
            f"{gib(r['peak_device_bytes'])} (device)"
            if r.get("peak_device_bytes") is not None
            else f"{gib(r['peak_rss_bytes'])} (RSS)"
        )
        lines.append(
            f"| {r['parameters'] / 1e6:.1f}M | {r['pop_size']:,} | {r['rank']} "
            f"| {r['batch']} x {r['tokens']} | {DRAWS[r.get('draw', 'evolax')]} "
            f"| {gib(r['formula_bytes'])} "
            f"| {gib(r['generation_program_bytes'])} | {peak} "
            f"| {r['full_rank_population_bytes'] / 1e9:,.0f} GB "
            f"| {r['generation_s']:.3g} | {r['batch_inference_s']:.3g} "
            f"| {r['throughput_ratio']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pop", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--rank", type=int, nargs="+", default=[1])
    parser.add_argument("--batch", type=int, default=1, help="sequences per member")
    parser.add_argument(
        "--tokens", type=int, nargs="+", default=[8, 2], help="positions per sequence, per --pop"
    )
    parser.add_argument(
        "--chunk", type=int, default=256, help="members evaluated (and half as many summed) at once"
    )
    parser.add_argument("--rounds", type=int, default=2, help="timed, after the first")
    parser.add_argument("--d-model", type=int, default=768)
    parser.add_argument("--layers", type=int, default=14)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--d-ff", type=int, default=2048)
    parser.add_argument("--small", action="store_true")
    parser.add_argument(
        "--draw",
        choices=["evolax", "jax"],
        default="evolax",
        help="the factors' Gaussians: evolax.seeded.normal or jax.random.normal (same numbers)",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:  # one configuration: its row as JSON on the last line
        args.pop, args.rank, args.tokens = args.pop[0], args.rank[0], args.tokens[0]
        print(json.dumps(measure(args)), flush=True)
        return

    name = "lm_throughput_small" if args.small else "lm_throughput"
    out = RESULTS / f"{name}.json"
    same = ("parameters", "pop_size", "rank", "batch", "tokens", "draw")
    rows = [{"draw": "evolax", **r} for r in previous_rows(out)]
    tokens = args.tokens * len(args.pop) if len(args.tokens) == 1 else args.tokens
    if len(tokens) != len(args.pop):
        raise ValueError(f"--tokens takes one count or one per --pop, got {args.tokens}")
    for pop, length in zip(args.pop, tokens, strict=True):
        for rank in args.rank:
            # a fresh process per configuration: its peak resident set is this one's alone
            command = [sys.executable, *sys.argv, "--worker", "--pop", str(pop)]
            command += ["--rank", str(rank), "--tokens", str(length)]
            result = subprocess.run(command, capture_output=True, text=True, check=False)
            if result.returncode:
                sys.stderr.write(result.stderr[-3000:])
                raise SystemExit(f"lm_throughput: pop {pop}, rank {rank} failed")
            row = json.loads(result.stdout.strip().splitlines()[-1])
            rows = [r for r in rows if any(r[k] != row[k] for k in same)] + [row]
            rows.sort(key=lambda r: [r[k] for k in same])
            write_results(out, name, rows, table)
            print(table(rows), flush=True)


if __name__ == "__main__":
    main()
