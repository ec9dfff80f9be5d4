"""ES fine-tuning of a small language model with verifiable rewards, against gradient fine-tuning.

1. Pretrain a byte-level decoder (:mod:`evolax.lm`, about 1M parameters) by gradient descent
   (optax Adam, teacher forcing) on ``--pretrain-digits``-digit addition.
2. From that checkpoint, fine-tune on ``--digits``-digit addition (the harder split: longer
   numbers) in two ways with the same number of sampled problems:
   - ES: :class:`evolax.LowRankES` (EGGROLL's low-rank members, z-scored rewards, antithetic
     pairs) on the :class:`evolax.tasks.Arithmetic` reward (the fraction of the answer's digits
     right), every member decoding greedily inside one compiled step;
   - gradient: continued teacher-forced Adam on as many problems.
3. Score both on the held-out problems of the harder split: exact-answer accuracy and digit
   accuracy, before and after, medians over ``--seeds``.

Writes ``benchmarks/results/lm_finetune.json`` and the table ``lm_finetune.md``.

    python benchmarks/lm_finetune.py
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import optax

import evolax
from evolax.algorithms import LowRankES
from evolax.algorithms.shaping import z_score
from evolax.lm import LMConfig, forward, init_params, save_pretrained
from evolax.lm.tokenizer import ByteTokenizer
from evolax.policies import LanguageModel
from evolax.tasks import Arithmetic
from evolax.tasks.text.common import pad_to
from results_table import RESULTS, write_results

EOS, PAD = ByteTokenizer.eos_id, ByteTokenizer.pad_id


def targets(answers: jax.Array, length: int) -> jax.Array:
    """The answer's digits, then ``EOS``, then padding, ``[batch, length]``."""
    padded = pad_to(answers, length)
    first_pad = jnp.argmax(padded == PAD, axis=1)
    return padded.at[jnp.arange(padded.shape[0]), first_pad].set(EOS)


def loss_fn(config: LMConfig, params, prompts, answers, length: int):
    """Teacher-forced cross entropy of the answer and its EOS after each prompt."""
    target = targets(answers, length)
    sequence = jnp.concatenate([prompts, target[:, :-1]], axis=1)

    def one(tokens):
        return forward(config, params, tokens, valid=tokens != PAD)[0]

    logits = jax.vmap(one)(sequence)[:, prompts.shape[1] - 1 :]
    mask = (target != PAD).astype(jnp.float32)
    nll = optax.softmax_cross_entropy_with_integer_labels(logits, target)
    return jnp.sum(nll * mask) / jnp.sum(mask)


def gradient_train(config, params, task: Arithmetic, steps: int, key, lr: float):
    optimizer = optax.adam(lr)
    length = task.action_shape[1]

    @jax.jit
    def step(carry, key):
        params, opt_state = carry
        prompts, answers = task.problems(key)
        loss, grad = jax.value_and_grad(lambda p: loss_fn(config, p, prompts, answers, length))(
            params
        )
        updates, opt_state = optimizer.update(grad, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), loss

    carry = (params, optimizer.init(params))
    for k in jax.random.split(key, steps):
        carry, _ = step(carry, k)
    return carry[0]


def accuracy(policy: LanguageModel, params, test: Arithmetic) -> dict[str, float]:
    """Exact and digit accuracy of greedy completions on the held-out problems."""
    state = test.reset(jax.random.key(0))
    tokens = jax.jit(policy.complete, static_argnums=2)(
        params, state.obs, test.action_shape[1], jax.random.key(0)
    )
    digits = Arithmetic(
        n_digits=test.n_digits, completion_len=test.action_shape[1], reward="digits"
    )
    return {
        "exact": float(jnp.mean(test.check(tokens, state.answers))),
        "digits": float(jnp.mean(digits.check(tokens, state.answers))),
    }


def es_train(config, params, task, generations: int, pop: int, key, lr: float, std: float):
    """LowRankES from ``params``, through a checkpoint folder as a user would start it."""
    with tempfile.TemporaryDirectory() as folder:
        save_pretrained(folder, config, params)
        policy = LanguageModel.from_pretrained(folder, completion_len=task.action_shape[1])
        algorithm = LowRankES(
            pop_size=pop,
            rank=4,
            optimizer=optax.adam(lr),
            init_std=std,
            fitness_shaping=z_score,
        )
        trainer = evolax.Trainer(algorithm, policy, task, mesh=None, pop_chunk=None)
        state = trainer.init(key)
    final, _ = jax.jit(lambda s: trainer.run(s, generations))(state)
    return final.algo_state.mean


def table(rows: list[dict], config: dict) -> str:
    """Held-out accuracies before and after, medians over the seeds."""
    samples = config["generations"] * config["pop"] * config["batch"]

    def median(name: str, metric: str) -> float:
        return statistics.median(r[name][metric] for r in rows)

    lines = [
        f"| {config['digits']}-digit addition, held-out (500 problems), median of {len(rows)} "
        "seed(s) | exact | digits |",
        "|---|---|---|",
    ]
    for name, label in (
        ("before", f"pretrained on {config['pretrain_digits']} digits"),
        ("es", f"+ LowRankES, {samples:,} problems"),
        ("gradient", f"+ gradient, {samples:,} problems"),
    ):
        lines.append(f"| {label} | {median(name, 'exact'):.3f} | {median(name, 'digits'):.3f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--pretrain-digits", type=int, default=2)
    parser.add_argument("--pretrain-steps", type=int, default=600)
    parser.add_argument("--digits", type=int, default=3)
    parser.add_argument("--generations", type=int, default=60)
    parser.add_argument("--pop", type=int, default=32)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--out", type=Path, default=RESULTS / "lm_finetune.json")
    args = parser.parse_args()

    config = LMConfig(
        vocab_size=ByteTokenizer.vocab_size,
        d_model=args.d_model,
        n_layers=args.layers,
        n_heads=4,
        d_ff=3 * args.d_model,
        max_len=2 * args.digits + 2 + args.digits + 2,
    )
    width = args.digits + 2  # the longest answer and its EOS
    pretrain = Arithmetic(n_digits=args.pretrain_digits, batch_size=64, completion_len=width)
    task = Arithmetic(
        n_digits=args.digits, batch_size=args.batch, completion_len=width, reward="digits"
    )
    test = Arithmetic(n_digits=args.digits, completion_len=width, test=True, test_size=500)
    policy = LanguageModel(completion_len=width, model=config)
    samples = args.generations * args.pop * args.batch
    rows = []
    for seed in range(args.seeds):
        key = jax.random.key(seed)
        start = time.perf_counter()
        base = gradient_train(
            config,
            init_params(config, key),
            pretrain,
            args.pretrain_steps,
            jax.random.fold_in(key, 1),
            3e-3,
        )
        before = accuracy(policy, base, test)
        print("pretrained", before, f"{time.perf_counter() - start:.0f} s", flush=True)
        t0 = time.perf_counter()
        es = es_train(
            config, base, task, args.generations, args.pop, jax.random.fold_in(key, 2), 3e-3, 0.01
        )
        es_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        steps = samples // 64
        tuned = gradient_train(
            config,
            base,
            Arithmetic(n_digits=args.digits, batch_size=64, completion_len=width),
            steps,
            jax.random.fold_in(key, 3),
            1e-3,
        )
        grad_seconds = time.perf_counter() - t0
        row = {
            "seed": seed,
            "before": before,
            "es": accuracy(policy, es, test),
            "gradient": accuracy(policy, tuned, test),
            "es_seconds": es_seconds,
            "gradient_seconds": grad_seconds,
            "total_seconds": time.perf_counter() - start,
        }
        print(row, flush=True)
        rows.append(row)

    write_results(
        args.out,
        "lm_finetune",
        rows,
        lambda rows: table(rows, vars(args)),
        config=vars(args) | {"out": str(args.out)},
        parameters=config.n_params(),
    )
    print(table(rows, vars(args)))


if __name__ == "__main__":
    main()
