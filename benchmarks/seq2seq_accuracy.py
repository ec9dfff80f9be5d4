"""Seq2seq addition on a CPU budget: held-out accuracy against generation and wall time.

Trains PGPE on :class:`evolax.Seq2SeqAddition` (3-digit operands, answers of 4 digits) with
the :class:`evolax.Seq2Seq` LSTM encoder-decoder, and every ``--eval-interval`` generations
scores the centre on the 10,000 held-out problems: per-token accuracy (chance: 10%) and
exact-sequence accuracy (chance: 0.01%). The defaults are a CPU-sized version of EvoJAX's
example: a smaller network (hidden 64) and population (256), and larger steps (centre lr
0.03, init std 0.1, std lr 0.1: with EvoJAX's 0.01 / 0.05 / 0.03 a pilot stayed at 20% token
accuracy, the leading digit, for 300 generations). The ``seq2seq`` preset is the
configuration aimed at the paper's > 99% on an accelerator (``evolax train seq2seq``).
Writes the curve to ``benchmarks/results/seq2seq.json`` and its table to ``seq2seq.md``
(``--out``; the table docs/results.md includes).

    python benchmarks/seq2seq_accuracy.py --minutes 20
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import equinox as eqx
import jax
import optax

import evolax
from evolax.rollout import evaluate
from results_table import RESULTS, write_results


def table(curve: list[dict]) -> str:
    """The curve at its first three tests, every 500th generation and its last (in bold: the
    accuracies it ends with), one column each."""
    if not curve:
        return "(no test ran)"
    last = len(curve) - 1
    shown = [i for i, row in enumerate(curve) if i < 3 or row["generation"] % 500 == 0 or i == last]

    def line(name: str, cells: list[str], bold_last: bool = False) -> str:
        if bold_last:
            cells = [*cells[:-1], f"**{cells[-1]}**"]
        return f"| {name} | " + " | ".join(cells) + " |"

    rows = [curve[i] for i in shown]
    return "\n".join(
        [
            line("generation", [str(row["generation"]) for row in rows]),
            "|---|" + "---|" * len(rows),
            line("training time (min, incl. compile)", [f"{r['train_s'] / 60:.1f}" for r in rows]),
            line(
                "per-token accuracy (%)", [f"{100 * r['token_accuracy']:.1f}" for r in rows], True
            ),
            line(
                "exact-answer accuracy (%)",
                [f"{100 * r['sequence_accuracy']:.2f}" for r in rows],
                True,
            ),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pop-size", type=int, default=256)
    parser.add_argument("--hidden-size", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--center-lr", type=float, default=0.03)
    parser.add_argument("--std-lr", type=float, default=0.1)
    parser.add_argument("--init-std", type=float, default=0.1)
    parser.add_argument("--eval-interval", type=int, default=100, help="generations per chunk")
    parser.add_argument("--minutes", type=float, default=20.0, help="training wall-time budget")
    parser.add_argument("--max-generations", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", type=Path, default=RESULTS / "seq2seq.json")
    args = parser.parse_args()

    train_task = evolax.Seq2SeqAddition(batch_size=args.batch_size)
    policy = evolax.Seq2Seq(hidden_size=args.hidden_size)
    trainer = evolax.Trainer(
        algorithm=evolax.PGPE(
            pop_size=args.pop_size,
            optimizer=optax.adam(args.center_lr),
            init_std=args.init_std,
            std_lr=args.std_lr,
        ),
        policy=policy,
        task=train_task,
    )
    tests = {
        name: evolax.Seq2SeqAddition(test=True, reward=name)
        for name in ("token_accuracy", "sequence_accuracy")
    }

    @eqx.filter_jit
    def chunk(trainer, state):
        return trainer.run(state, args.eval_interval)

    @eqx.filter_jit
    def accuracy(task, params):
        population = jax.tree.map(lambda x: x[None], params)
        fitness, _ = evaluate(policy, task, population, jax.random.key(0))
        return fitness[0]

    state = trainer.init(jax.random.key(args.seed))
    n_params = sum(x.size for x in jax.tree.leaves(trainer.algorithm.best(state.algo_state)))
    print(f"{n_params} parameters, pop {args.pop_size}, hidden {args.hidden_size}", flush=True)
    curve = []
    training_s = 0.0
    generation = 0
    while training_s < 60 * args.minutes and generation < args.max_generations:
        start = time.perf_counter()
        state, _ = jax.block_until_ready(chunk(trainer, state))
        training_s += time.perf_counter() - start  # first chunk includes compilation
        generation += args.eval_interval
        best = trainer.algorithm.best(state.algo_state)
        row = {"generation": generation, "train_s": round(training_s, 1)}
        row.update({name: float(accuracy(task, best)) for name, task in tests.items()})
        curve.append(row)
        print(json.dumps(row), flush=True)

    write_results(
        args.out,
        "seq2seq_addition_cpu",
        curve,
        table,
        config={**vars(args), "out": str(args.out), "n_digits": 3, "parameters": n_params},
        chance={"token_accuracy": 0.1, "sequence_accuracy": 1e-4},
        versions={"evolax": evolax.__version__, "jax": jax.__version__},
    )
    print(table(curve), flush=True)


if __name__ == "__main__":
    main()
