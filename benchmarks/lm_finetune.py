"""ES fine-tuning of a small language model with verifiable rewards, against gradient fine-tuning.

1. Pretrain a byte-level decoder (:mod:`evolax.lm`, about 0.5M parameters) by gradient descent
   (optax Adam, teacher forcing, ``--pretrain-steps`` batches of 64) on an even mix of
   ``--pretrain-digits``-digit addition (default 1 and ``--digits``), stopping where it is
   partly competent on the ``--digits``-digit problems (the checkpoint is kept in
   ``benchmarks/results/`` and reused by later runs).
2. From that checkpoint, fine-tune on ``--digits``-digit addition in two ways, each reading
   ``--generations`` batches of ``--batch`` training problems:
   - ES: :class:`evolax.LowRankES` (rank ``--rank``; ``0`` is full rank, as Qiu et al. 2025),
     population ``--pop`` in antithetic pairs, a noise scale ``--std`` relative to each
     layer's RMS, z-scored fitness, all members on the same problems in a generation. The
     fitness is the verifiable reward (``--fitness reward``: each member decodes greedily and
     scores the fraction of the answer's digits right, :class:`evolax.tasks.Arithmetic`) or,
     as a diagnostic, minus the teacher-forced loss of the answers (``--fitness loss``). The
     step is ``--optimizer sgd``: ``lr * sigma_l * sum_i z_i eps_i / pop`` per layer ``l``
     (``sigma_l`` the layer's noise scale; Qiu et al.'s update, ``lr`` their ``alpha /
     sigma``), or ``adam`` on the ES gradient estimate;
   - gradient: continued teacher-forced Adam on as many problems drawn the same way (one
     step per batch of ``--batch``).
   ``--fixed-batch`` trains both on one batch, the same every generation (a diagnostic: can
   the method fit it?). The ES records, per generation, its members' mean fitness and spread,
   and the mean model's reward and loss on the generation's batch.
3. Score the checkpoint and each fine-tuned model on the ``--digits``-digit problems held out
   of training (500; ``--validate`` scores another 500, the split to tune settings on):
   exact-answer and digit accuracy of greedy answers and the teacher-forced loss, medians
   (min-max) over ``--seeds`` fine-tuning seeds from the one checkpoint.

Writes ``benchmarks/results/lm_finetune.json`` (or ``--out``) and the table beside it in
``docs/results``.

    python benchmarks/lm_finetune.py --seeds 5
    python benchmarks/lm_finetune.py --digits 3 --pretrain-digits 1 2 3 --pretrain-steps 2000 \\
        --seeds 3 --out benchmarks/results/lm_finetune_3digit.json
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
from evolax.algorithms.shaping import z_score
from evolax.lm import LMConfig, forward, init_params, load_pretrained, save_pretrained
from evolax.lm.tokenizer import ByteTokenizer
from evolax.policies import LanguageModel
from evolax.seeded import member
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


def mixed(tasks: list[Arithmetic], prompt_width: int, width: int):
    """A batch drawing from each task in turn: prompts left-padded to ``prompt_width``."""

    def problems(key):
        pairs = [
            t.problems(k) for t, k in zip(tasks, jax.random.split(key, len(tasks)), strict=True)
        ]
        prompts = jnp.concatenate([left_pad(p, prompt_width) for p, _ in pairs])
        return prompts, jnp.concatenate([pad_to(a, width - 1) for _, a in pairs])

    return problems


def batches(task: Arithmetic, fixed: bool, key: jax.Array):
    """``key -> (prompts, answers)``: fresh training problems, or always ``key``'s."""
    return (lambda _: task.problems(key)) if fixed else task.problems


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


def layer_rms(params, floor: float = 1e-3):
    """Each leaf's RMS (at least ``floor``): ``LowRankES(layer_scale="rms")``'s scales."""
    return jax.tree.map(lambda x: jnp.maximum(jnp.sqrt(jnp.mean(jnp.square(x))), floor), params)


def es_optimizer(args, base) -> optax.GradientTransformation:
    """``sgd``: ``lr * sigma_l`` times the sum ``sum_i z_i eps_i / pop`` (LowRankES's estimate
    ``g_l = sum_i z_i eps_i / (pop sigma_l)`` times ``sigma_l**2``): each step moves a layer
    by a fraction of its noise scale, the same fraction in every layer. ``adam``: Adam on
    ``g``, about ``lr`` per parameter per step whatever the layer's size."""
    if args.optimizer == "adam":
        return optax.adam(args.lr)
    squares = jax.tree.map(lambda s: (args.std * s) ** 2, layer_rms(base))
    natural = optax.stateless(lambda g, _: jax.tree.map(jnp.multiply, g, squares))
    return optax.chain(natural, optax.sgd(args.lr))


def es_train(config, policy, base, args, problems, key, width: int):
    """ES from ``base``: the final mean and, per generation, the members' mean fitness and
    spread and the mean's reward and loss on the generation's batch."""
    algorithm = LowRankES(
        pop_size=args.pop,
        rank=args.rank,
        init_std=args.std,
        optimizer=es_optimizer(args, base),
        fitness_shaping=z_score,
        layer_scale="rms",
    )
    digits = Arithmetic(n_digits=args.digits, completion_len=width, reward="digits")

    def reward(params, prompts, answers, key):
        return jnp.mean(digits.check(policy.complete(params, prompts, width, key), answers))

    def fitness(params, prompts, answers, key):
        if args.fitness == "loss":
            return -loss_fn(config, params, prompts, answers, width)
        return reward(params, prompts, answers, key)

    k_init, k_run = jax.random.split(key)
    members = jnp.arange(args.pop)

    def generation(state, key):
        k_data, k_ask, k_tell, k_decode = jax.random.split(key, 4)
        prompts, answers = problems(k_data)
        population, state = algorithm.ask(k_ask, state)
        scores = jax.vmap(lambda i: fitness(member(population, i), prompts, answers, k_decode))(
            members
        )
        trace = {
            "fitness": jnp.mean(scores),
            "spread": jnp.std(scores),
            "mean_reward": reward(state.mean, prompts, answers, k_decode),
            "mean_loss": loss_fn(config, state.mean, prompts, answers, width),
        }
        state, _ = algorithm.tell(k_tell, state, population, scores)
        return state, trace

    state = algorithm.init(k_init, base)
    run = jax.jit(lambda s, keys: jax.lax.scan(generation, s, keys))
    final, trace = run(state, jax.random.split(k_run, args.generations))
    return final.mean, summary(trace)


def summary(trace: dict) -> dict[str, float]:
    """Each per-generation trace's mean over the first and the last tenth of the generations
    (``NAME_first``, ``NAME_last``), and the spread's median."""
    tenth = max(1, trace["fitness"].shape[0] // 10)
    out = {"spread": float(jnp.median(trace["spread"]))}
    for name in ("fitness", "mean_reward", "mean_loss"):
        out[f"{name}_first"] = float(jnp.mean(trace[name][:tenth]))
        out[f"{name}_last"] = float(jnp.mean(trace[name][-tenth:]))
    return out


def evaluate(config, policy: LanguageModel, params, test: Arithmetic) -> dict[str, float]:
    """Exact and digit accuracy of greedy answers, and the teacher-forced loss, on the
    held-out problems."""
    width = test.action_shape[1]
    prompts, answers = test.problems(jax.random.key(0))
    tokens = jax.jit(policy.complete, static_argnums=2)(params, prompts, width, jax.random.key(0))
    digits = Arithmetic(
        n_digits=test.n_digits, completion_len=width, reward="digits", test_size=500
    )
    return {
        "exact": float(jnp.mean(test.check(tokens, answers))),
        "digits": float(jnp.mean(digits.check(tokens, answers))),
        "loss": float(
            jax.jit(loss_fn, static_argnums=(0, 4))(config, params, prompts, answers, width)
        ),
    }


def stat(rows: list[dict], name: str, metric: str) -> str:
    values = [r[name][metric] for r in rows]
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def median(rows: list[dict], name: str, key: str, fmt: str = ".3f") -> str:
    return format(statistics.median(r[name][key] if key else r[name] for r in rows), fmt)


def table(rows: list[dict], config: dict) -> str:
    """Held-out accuracies and loss before and after, medians (min-max) over the seeds, with
    each method's budget, wall time and (ES) training trace."""
    gens, batch = config["generations"], config["batch"]
    split = "validation" if config["validate"] else "held-out test"
    mix = [f"{n}-" for n in config["pretrain_digits"] or [1, config["digits"]]]
    mix = ", ".join(mix[:-1]) + " and " + mix[-1]
    lines = [
        f"| {config['digits']}-digit addition, {split} (500 problems), {len(rows)} seeds | "
        "exact | digits | loss | problems read | s / seed | ES training reward (mean model "
        "on each batch): first → last 10% of generations |",
        "|---|---|---|---|---|---|---|",
    ]
    rank = "full-rank" if config["rank"] == 0 else f"rank-{config['rank']}"
    step = "SGD, lr" if config["optimizer"] == "sgd" else "Adam"
    labels = {
        "before": f"pretrained ({config['pretrain_steps']} Adam steps on {mix}digit addition)",
        "es": f"+ {rank} ES, pop {config['pop']}, std {config['std']}, {step} {config['lr']}",
        "gradient": f"+ gradient (Adam {config['gradient_lr']})",
    }
    for name, label in labels.items():
        if name not in rows[0]:
            continue
        cells = [label] + [stat(rows, name, m) for m in ("exact", "digits", "loss")]
        if name == "before":
            cells += ["", "", ""]
        else:
            steps = "generations" if name == "es" else "Adam steps"
            cells += [f"{gens} {steps} x {batch} = {gens * batch:,}"]
            cells += [median(rows, f"{name}_seconds", "", ".0f")]
            trace = f"{name}_trace"
            cells += [
                f"{median(rows, trace, 'mean_reward_first')} → "
                f"{median(rows, trace, 'mean_reward_last')}"
                if trace in rows[0]
                else ""
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--pretrain-steps", type=int, default=1000)
    parser.add_argument("--pretrain-digits", type=int, nargs="*", default=None)
    parser.add_argument("--digits", type=int, default=2)
    parser.add_argument("--generations", type=int, default=200)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--pop", type=int, default=32)
    parser.add_argument("--rank", type=int, default=4)
    parser.add_argument("--std", type=float, default=0.02)
    parser.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--fitness", choices=["reward", "loss"], default="reward")
    parser.add_argument("--fixed-batch", action="store_true", help="train on one batch")
    parser.add_argument("--gradient-lr", type=float, default=3e-5)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=None, help="methods to run (default all)")
    parser.add_argument("--validate", action="store_true", help="score the validation split")
    parser.add_argument("--out", type=Path, default=RESULTS / "lm_finetune.json")
    args = parser.parse_args()

    digits = args.digits
    width = digits + 2  # the longest answer and its EOS
    mix = args.pretrain_digits or [1, digits]
    config = LMConfig(
        vocab_size=ByteTokenizer.vocab_size,
        d_model=args.d_model,
        n_layers=args.layers,
        n_heads=4,
        d_ff=3 * args.d_model,
        max_len=3 * max([*mix, digits]) + 4,  # the longest prompt and answer, and EOS
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
    task = Arithmetic(n_digits=digits, batch_size=args.batch, completion_len=width)
    mix_name = "".join(map(str, mix))
    folder = RESULTS / f"lm_finetune_{args.d_model}x{args.layers}_{mix_name}_{args.pretrain_steps}"
    start = time.perf_counter()
    if not (folder / "config.json").exists():
        longest = max(mix)
        tasks = [Arithmetic(n_digits=n, batch_size=64 // len(mix)) for n in mix]
        schedule = optax.warmup_cosine_decay_schedule(0, 3e-3, 50, args.pretrain_steps, 3e-4)
        base = gradient_train(
            config,
            init_params(config, jax.random.key(0)),
            mixed(tasks, 2 * longest + 2, longest + 2),
            args.pretrain_steps,
            jax.random.key(1),
            schedule,
            longest + 2,
        )
        save_pretrained(folder, config, base)
    _, base = load_pretrained(folder)
    before = evaluate(config, policy, base, test)
    print("pretrained", before, f"{time.perf_counter() - start:.0f} s", flush=True)

    rows = []
    for seed in range(args.seeds):
        key = jax.random.key(100 + seed)
        problems = batches(task, args.fixed_batch, jax.random.fold_in(key, 1))
        row: dict = {"seed": seed, "before": before}
        for name in args.only or ["es", "gradient"]:
            t0 = time.perf_counter()
            if name == "gradient":  # as many batches as the ES, drawn the same way
                tuned = gradient_train(
                    config, base, problems, args.generations, key, args.gradient_lr, width
                )
            else:
                tuned, row["es_trace"] = es_train(config, policy, base, args, problems, key, width)
            row[name] = evaluate(config, policy, tuned, test)
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
