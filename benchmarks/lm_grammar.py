"""ES pretraining from scratch of a tiny language model on a toy grammar, loss per generation.

The language: strings of two kinds of brackets, ``( ) [ ]``, nested at most ``--depth`` deep
(Dyck-2 of bounded depth: a regular language), ``--length`` tokens after a BOS token, drawn
in JAX by a random walk: at depth 0 open either bracket (1/2 each), at the deepest level close
the open one, elsewhere open ``(`` or ``[`` (1/4 each) or close the innermost open bracket
(1/2). A closing bracket is therefore determined by the prefix: a model must keep the stack
of open brackets to predict it. The walk's own probabilities give the entropy of the next
token after each prefix; their mean over held-out strings is the least loss any model can
reach (the floor in the table).

A decoder from :mod:`evolax.lm` (``--d-model`` wide, 2 layers, about 20k parameters) is
trained from random weights to minimise the per-token cross entropy of fresh batches:

- ES: :class:`evolax.LowRankES` with full-rank members (``rank=0``: OpenAI-ES's population
  held as seeds, as in Qiu et al. 2025) and with rank-1 members (EGGROLL), centred ranks,
  antithetic pairs, Adam; each member's fitness is minus its loss on the generation's batch
  (one batch for all members);
- gradient: Adam on the same batches, one step per generation (the same tokens).

The loss of each mean (ES) or model (gradient) on 256 held-out strings is logged every few
generations; the table gives its median (and min-max) over ``--seeds``.

Writes ``benchmarks/results/lm_grammar.json`` and the table ``lm_grammar.md``.

    python benchmarks/lm_grammar.py
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import optax

from evolax.algorithms import LowRankES
from evolax.lm import LMConfig, forward, init_params
from evolax.seeded import member
from results_table import RESULTS, write_results

OPEN = jnp.array([0, 2])  # "(" and "["; the closing bracket of token t is t + 1
BOS = 4
SYMBOLS = "()[]"


def dyck(key: jax.Array, length: int, depth: int) -> tuple[jax.Array, jax.Array]:
    """One string (BOS and ``length`` tokens, ``[length + 1]``) and the entropy of the walk's
    next-token distribution before each of its tokens (``[length]``, nats)."""

    def step(carry, key):
        stack, level = carry
        k_kind, k_close = jax.random.split(key)
        kind = OPEN[jax.random.bernoulli(k_kind).astype(jnp.int32)]
        close = (level == depth) | ((level > 0) & jax.random.bernoulli(k_close))
        top = stack[jnp.maximum(level - 1, 0)]
        token = jnp.where(close, top + 1, kind)
        stack = jnp.where(close, stack, stack.at[level].set(kind))
        entropy = jnp.where(
            level == 0, jnp.log(2.0), jnp.where(level == depth, 0.0, 1.5 * jnp.log(2.0))
        )
        return (stack, jnp.where(close, level - 1, level + 1)), (token, entropy)

    start = (jnp.zeros(depth + 1, jnp.int32), jnp.int32(0))
    _, (tokens, entropy) = jax.lax.scan(step, start, jax.random.split(key, length))
    return jnp.concatenate([jnp.array([BOS]), tokens]), entropy


def batch(key: jax.Array, size: int, length: int, depth: int):
    return jax.vmap(lambda k: dyck(k, length, depth))(jax.random.split(key, size))


def loss(config: LMConfig, params, tokens: jax.Array) -> jax.Array:
    """Mean next-token cross entropy (nats) of ``tokens`` (``[batch, length + 1]``)."""
    logits = jax.vmap(lambda t: forward(config, params, t[:-1])[0])(tokens)
    return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, tokens[:, 1:]))


def run_es(config, algorithm, key, args, test):
    """Loss of the ES mean on ``test`` every ``--every`` generations, from random weights."""
    k_init, k_run = jax.random.split(key)
    state = algorithm.init(k_init, init_params(config, k_init))
    members = jnp.arange(algorithm.pop_size)

    def generation(state, key):
        k_data, k_ask, k_tell = jax.random.split(key, 3)
        tokens, _ = batch(k_data, args.batch, args.length, args.depth)
        population, state = algorithm.ask(k_ask, state)
        losses = jax.vmap(lambda i: loss(config, member(population, i), tokens))(members)
        state, _ = algorithm.tell(k_tell, state, population, -losses)
        return state, None

    def block(state, key):
        state, _ = jax.lax.scan(generation, state, jax.random.split(key, args.every))
        return state, loss(config, state.mean, test)

    first = loss(config, state.mean, test)
    _, curve = jax.jit(
        lambda s: jax.lax.scan(block, s, jax.random.split(k_run, args.generations // args.every))
    )(state)
    return [float(first), *map(float, curve)]


def run_gradient(config, key, args, test, lr: float):
    """Adam on the ES's batches (one step per generation): its test loss on the same grid."""
    k_init, k_run = jax.random.split(key)
    params = init_params(config, k_init)
    optimizer = optax.adam(lr)

    def step(carry, key):
        params, opt_state = carry
        k_data, _, _ = jax.random.split(key, 3)  # the ES generation's data key
        tokens, _ = batch(k_data, args.batch, args.length, args.depth)
        grad = jax.grad(lambda p: loss(config, p, tokens))(params)
        updates, opt_state = optimizer.update(grad, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), None

    def block(carry, key):
        carry, _ = jax.lax.scan(step, carry, jax.random.split(key, args.every))
        return carry, loss(config, carry[0], test)

    first = loss(config, params, test)
    _, curve = jax.jit(
        lambda c: jax.lax.scan(block, c, jax.random.split(k_run, args.generations // args.every))
    )((params, optimizer.init(params)))
    return [float(first), *map(float, curve)]


def table(rows: list[dict], config: dict) -> str:
    """Held-out loss per generation, median (min-max) over the seeds."""
    names = [name for name in rows[0]["curves"]]
    floor = statistics.median(r["floor"] for r in rows)
    head = " | ".join(names)
    lines = [
        f"| generation | {head} |",
        "|---|" + "---|" * len(names),
    ]
    n_points = len(rows[0]["curves"][names[0]])
    for j in range(n_points):
        cells = []
        for name in names:
            values = [r["curves"][name][j] for r in rows]
            cells.append(f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})")
        lines.append(f"| {j * config['every']} | " + " | ".join(cells) + " |")
    lines.append(f"| floor (the walk's entropy) | {floor:.3f} |" + " |" * (len(names) - 1))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--generations", type=int, default=300)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--pop", type=int, default=64)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--length", type=int, default=24)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--d-model", type=int, default=32)
    parser.add_argument("--std", type=float, default=0.02)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--out", type=Path, default=RESULTS / "lm_grammar.json")
    args = parser.parse_args()

    config = LMConfig(
        vocab_size=len(SYMBOLS) + 1,
        d_model=args.d_model,
        n_layers=2,
        n_heads=4,
        d_ff=2 * args.d_model,
        max_len=args.length + 1,
        tie_embeddings=True,
    )
    algorithms = {
        "ES, full rank": LowRankES(
            pop_size=args.pop, rank=0, init_std=args.std, optimizer=optax.adam(args.lr)
        ),
        "ES, rank 1": LowRankES(
            pop_size=args.pop, rank=1, init_std=args.std, optimizer=optax.adam(args.lr)
        ),
    }
    rows = []
    for seed in range(args.seeds):
        key = jax.random.key(seed)
        test, entropy = batch(jax.random.fold_in(key, 99), 256, args.length, args.depth)
        start = time.perf_counter()
        curves = {
            name: run_es(config, algorithm, key, args, test)
            for name, algorithm in algorithms.items()
        }
        curves["gradient (Adam)"] = run_gradient(config, key, args, test, args.lr)
        row = {
            "seed": seed,
            "curves": curves,
            "floor": float(jnp.mean(entropy)),
            "seconds": time.perf_counter() - start,
        }
        print(row, flush=True)
        rows.append(row)
        write_results(
            args.out,
            "lm_grammar",
            rows,
            lambda rows: table(rows, vars(args)),
            config=vars(args) | {"out": str(args.out)},
            parameters=config.n_params(),
        )

    print(table(rows, vars(args)))


if __name__ == "__main__":
    main()
