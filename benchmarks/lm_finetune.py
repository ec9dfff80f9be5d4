"""ES fine-tuning of a small language model with verifiable rewards, against gradient fine-tuning.

1. Pretrain a byte-level decoder (:mod:`evolax.lm`, about 0.5M parameters) by gradient descent
   (optax Adam, teacher forcing, ``--pretrain-steps`` batches of 64) on an even mix of 1- and
   ``--digits``-digit addition, stopping where it is partly competent on the ``--digits``-digit
   problems (the checkpoint is kept in ``benchmarks/results/`` and reused by later runs).
2. From that checkpoint, fine-tune on ``--digits``-digit addition in three ways, each reading
   ``--generations`` batches of ``--batch`` training problems:
   - full-rank ES as Qiu et al. (2025) run it: :class:`evolax.LowRankES` with ``rank=0``
     (members held as seeds), population 30, ``std`` 1e-3, z-scored rewards, plain SGD
     steps ``lr * sum_i z_i eps_i / pop``;
   - EGGROLL (Sarkar et al. 2025): rank-4 members, a larger population, antithetic pairs,
     z-scored rewards, Adam, a noise scale per layer (``layer_scale="rms"``);
   - gradient: continued teacher-forced Adam on as many problems drawn the same way (one
     step per batch of ``--batch``).
   Both ES read the :class:`evolax.tasks.Arithmetic` reward with partial credit (the fraction
   of the answer's digits right), every member decoding greedily inside one compiled step, all
   members on the same problems in a generation; the ES also record their training rewards
   (the first and last tenth of the generations, and their spread over the members).
3. Score the checkpoint and each fine-tuned model on the ``--digits``-digit problems held out
   of training (500; ``--validate`` scores another 500, the split to tune settings on):
   exact-answer accuracy and digit accuracy, medians (min-max) over ``--seeds`` fine-tuning
   seeds from the one checkpoint. The full-rank ES keeps Qiu et al.'s settings; the rank-4
   ES's ``std`` (0.02), the budget (120 batches of 16) and the gradient's learning rate (1e-4)
   were picked on the validation split (docs/language_models.md).

Writes ``benchmarks/results/lm_finetune.json`` and the table ``lm_finetune.md``.

    python benchmarks/lm_finetune.py --seeds 5 --only es_lowrank gradient
    python benchmarks/lm_finetune.py --digits 3 --seeds 3 --only es_lowrank gradient \\
        --out benchmarks/results/lm_finetune_3digit.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import optax

import evolax
from evolax.algorithms import LowRankES
from evolax.algorithms.shaping import centered_rank, z_score
from evolax.lm import LMConfig, forward, init_params, load_pretrained, save_pretrained
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


def left_pad(prompts: jax.Array, width: int) -> jax.Array:
    extra = jnp.full((prompts.shape[0], width - prompts.shape[1]), PAD, prompts.dtype)
    return jnp.concatenate([extra, prompts], axis=1)


def mixed(tasks: list[Arithmetic], width: int):
    """A batch drawing from each task in turn: prompts left-padded to the longest."""

    def problems(key):
        pairs = [
            t.problems(k) for t, k in zip(tasks, jax.random.split(key, len(tasks)), strict=True)
        ]
        prompts = jnp.concatenate([left_pad(p, tasks[-1].obs_shape[1]) for p, _ in pairs])
        return prompts, jnp.concatenate([pad_to(a, width - 1) for _, a in pairs])

    return problems


def gradient_train(config, params, problems, steps: int, key, lr, width: int):
    """Teacher-forced Adam, one step per batch ``problems(key)``."""
    optimizer = optax.adam(lr)

    def step(carry, key):
        params, opt_state = carry
        prompts, answers = problems(key)
        grad = jax.grad(lambda p: loss_fn(config, p, prompts, answers, width))(params)
        updates, opt_state = optimizer.update(grad, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), None

    run = jax.jit(lambda c, keys: jax.lax.scan(step, c, keys)[0])
    return run((params, optimizer.init(params)), jax.random.split(key, steps))[0]


def accuracy(policy: LanguageModel, params, test: Arithmetic) -> dict[str, float]:
    """Exact and digit accuracy of greedy completions on the held-out problems."""
    state = test.reset(jax.random.key(0))
    tokens = jax.jit(policy.complete, static_argnums=2)(
        params, state.obs, test.action_shape[1], jax.random.key(0)
    )
    digits = Arithmetic(
        n_digits=test.n_digits,
        completion_len=test.action_shape[1],
        reward="digits",
        test_size=test.held_out.shape[0],
    )
    return {
        "exact": float(jnp.mean(test.check(tokens, state.answers))),
        "digits": float(jnp.mean(digits.check(tokens, state.answers))),
    }


def es_train(folder, task, algorithm, generations: int, key):
    """An ES from the checkpoint ``folder``, as a user would start it: the final mean and the
    training rewards' trace (how far the members' rewards differ, and whether they rise)."""
    policy = LanguageModel.from_pretrained(folder, completion_len=task.action_shape[1])
    trainer = evolax.Trainer(algorithm, policy, task, mesh=None, pop_chunk=None)
    state = trainer.init(key)
    final, metrics = jax.jit(lambda s: trainer.run(s, generations))(state)
    spread, mean = metrics["fitness_std"], metrics["fitness_mean"]  # rewards: batch means
    tenth = max(1, generations // 10)
    trace = {
        "reward_std": float(jnp.median(spread)),
        "tied_generations": float(jnp.mean(spread == 0)),
        "reward_first": float(jnp.mean(mean[:tenth])),
        "reward_last": float(jnp.mean(mean[-tenth:])),
    }
    return final.algo_state.mean, trace


def algorithms(args) -> dict[str, LowRankES]:
    """The two ES families: the full-rank one with Qiu et al.'s settings, the rank-4 one with
    EGGROLL's apart from the flags (set on the validation split, ``--validate``)."""
    return {
        "es_full": LowRankES(
            pop_size=30,
            rank=0,
            antithetic=False,
            init_std=1e-3,
            optimizer=optax.sgd(args.full_lr * 1e-3),  # lr * sum z eps / pop
            fitness_shaping=z_score,
        ),
        "es_lowrank": LowRankES(
            pop_size=args.pop,
            rank=4,
            init_std=args.lowrank_std,
            optimizer=optax.adam(args.lowrank_lr),
            fitness_shaping=centered_rank if args.lowrank_shaping == "rank" else z_score,
            layer_scale="rms",
        ),
    }


def stat(rows: list[dict], name: str, metric: str) -> str:
    values = [r[name][metric] for r in rows]
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def median(rows: list[dict], name: str, key: str, fmt: str = ".3f") -> str:
    return format(statistics.median(r[name][key] if key else r[name] for r in rows), fmt)


def table(rows: list[dict], config: dict) -> str:
    """Held-out accuracies before and after, medians (min-max) over the seeds, with each
    method's budget, wall time and (ES) training rewards."""
    gens, batch = config["generations"], config["batch"]
    split = "validation" if config["validate"] else "held-out test"
    lines = [
        f"| {config['digits']}-digit addition, {split} (500 problems), {len(rows)} seeds | "
        "exact | digits | problems read | s / seed | training reward: first → last "
        "10% of generations (spread in a generation) |",
        "|---|---|---|---|---|---|",
    ]
    labels = {
        "before": f"pretrained ({config['pretrain_steps']} Adam steps on 1- and "
        f"{config['digits']}-digit addition)",
        "es_full": "+ full-rank ES (Qiu et al.), pop 30, SGD",
        "es_lowrank": f"+ rank-4 ES (EGGROLL), pop {config['pop']}, std {config['lowrank_std']}, "
        f"Adam {config['lowrank_lr']}",
        "gradient": f"+ gradient (Adam {config['gradient_lr']})",
    }
    for name, label in labels.items():
        if name not in rows[0]:
            continue
        cells = [label, stat(rows, name, "exact"), stat(rows, name, "digits")]
        if name == "before":
            cells += ["", "", ""]
        else:
            steps = "generations" if name.startswith("es") else "Adam steps"
            cells += [f"{gens} {steps} x {batch} = {gens * batch:,}"]
            cells += [median(rows, f"{name}_seconds", "", ".0f")]
            trace = f"{name}_trace"
            cells += [
                f"{median(rows, trace, 'reward_first')} → {median(rows, trace, 'reward_last')} "
                f"({median(rows, trace, 'reward_std')})"
                if trace in rows[0]
                else ""
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--pretrain-steps", type=int, default=1000)
    parser.add_argument("--digits", type=int, default=2)
    parser.add_argument("--generations", type=int, default=120)
    parser.add_argument("--pop", type=int, default=32)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--full-lr", type=float, default=5e-4)
    parser.add_argument("--lowrank-lr", type=float, default=1e-3)
    parser.add_argument("--lowrank-std", type=float, default=0.02)
    parser.add_argument("--lowrank-shaping", choices=["z", "rank"], default="z")
    parser.add_argument("--gradient-lr", type=float, default=1e-4)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=None, help="methods to run (default all)")
    parser.add_argument("--validate", action="store_true", help="score the validation split")
    parser.add_argument("--out", type=Path, default=RESULTS / "lm_finetune.json")
    args = parser.parse_args()

    digits = args.digits
    width = digits + 2  # the longest answer and its EOS
    config = LMConfig(
        vocab_size=ByteTokenizer.vocab_size,
        d_model=args.d_model,
        n_layers=args.layers,
        n_heads=4,
        d_ff=3 * args.d_model,
        max_len=2 * digits + 2 + width,
    )
    policy = LanguageModel(completion_len=width, model=config)
    # the validation problems: another seed's held-out draw (a few may be training problems)
    test = Arithmetic(
        n_digits=digits,
        completion_len=width,
        test=True,
        test_size=500,
        test_seed=1 if args.validate else 0,
    )
    task = Arithmetic(n_digits=digits, batch_size=args.batch, completion_len=width, reward="digits")
    folder = RESULTS / f"lm_finetune_{args.d_model}x{args.layers}_{digits}d_{args.pretrain_steps}"
    start = time.perf_counter()
    if not (folder / "config.json").exists():
        mix = mixed([Arithmetic(n_digits=n, batch_size=32) for n in (1, digits)], width)
        schedule = optax.warmup_cosine_decay_schedule(0, 3e-3, 50, args.pretrain_steps, 3e-4)
        base = gradient_train(
            config,
            init_params(config, jax.random.key(0)),
            mix,
            args.pretrain_steps,
            jax.random.key(1),
            schedule,
            width,
        )
        save_pretrained(folder, config, base)
    _, base = load_pretrained(folder)
    before = accuracy(policy, base, test)
    print("pretrained", before, f"{time.perf_counter() - start:.0f} s", flush=True)

    methods = args.only or ["es_full", "es_lowrank", "gradient"]
    rows = []
    for seed in range(args.seeds):
        key = jax.random.key(100 + seed)
        row: dict = {"seed": seed, "before": before}
        for name in methods:
            t0 = time.perf_counter()
            if name == "gradient":  # as many batches as the ES, drawn the same way
                tuned = gradient_train(
                    config, base, task.problems, args.generations, key, args.gradient_lr, width
                )
            else:
                tuned, row[f"{name}_trace"] = es_train(
                    str(folder), task, algorithms(args)[name], args.generations, key
                )
            row[name] = accuracy(policy, tuned, test)
            row[f"{name}_seconds"] = time.perf_counter() - t0
            print(seed, name, row[name], row.get(f"{name}_trace"), flush=True)
            print(f"  {row[f'{name}_seconds']:.0f} s", flush=True)
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
