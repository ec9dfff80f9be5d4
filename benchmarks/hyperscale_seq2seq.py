"""Learning at equal compute: LowRankES against full-rank OpenES and PGPE on seq2seq addition.

The paper's 551,434-parameter LSTM encoder-decoder (:class:`evolax.Seq2Seq`, hidden 256) on
:class:`evolax.Seq2SeqAddition` (3-digit operands, 128 problems per generation), population
256, for the same training time each (``--minutes``, after compilation, which is timed
apart). Every ``--eval-interval`` generations the mean genome is scored on the 10,000
held-out problems (per-token accuracy; chance 10%). The three share their settings: adam
0.03 on the mean, noise scale 0.1, centred ranks, antithetic pairs (PGPE: std lr 0.1).
LowRankES perturbs each matrix at rank 1 (``--rank``) and shares the unperturbed products
across the population, so it runs more generations in the same time.

    python benchmarks/hyperscale_seq2seq.py --minutes 5     # about 17 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import time

import equinox as eqx
import jax
import optax

import evolax
from evolax.algorithms import PGPE, LowRankES, OpenES
from evolax.rollout import evaluate
from results_table import RESULTS, write_results

ALGORITHMS = ("low_rank_es", "open_es", "pgpe")


def algorithm(name: str, args):
    common = dict(pop_size=args.pop_size, optimizer=optax.adam(args.lr), init_std=args.std)
    if name == "low_rank_es":
        return LowRankES(rank=args.rank, **common)
    if name == "open_es":
        return OpenES(**common)
    return PGPE(std_lr=0.1, **common)


def run(name: str, args) -> dict:
    policy = evolax.Seq2Seq(hidden_size=args.hidden_size)
    trainer = evolax.Trainer(
        algorithm=algorithm(name, args),
        policy=policy,
        task=evolax.Seq2SeqAddition(batch_size=args.batch_size),
        mesh="auto",
    )
    test = evolax.Seq2SeqAddition(test=True, reward="token_accuracy")

    @eqx.filter_jit
    def chunk(trainer, state):
        return trainer.run(state, args.eval_interval)

    @eqx.filter_jit
    def accuracy(params):
        population = jax.tree.map(lambda x: x[None], params)
        return evaluate(policy, test, population, jax.random.key(0))[0][0]

    begin = time.perf_counter()
    jax.block_until_ready(chunk(trainer, trainer.init(jax.random.key(1))))  # compiles
    compile_s = time.perf_counter() - begin
    state = trainer.init(jax.random.key(args.seed))
    params = trainer.algorithm.best(state.algo_state)
    curve = [{"generation": 0, "train_s": 0.0, "token_accuracy": float(accuracy(params))}]
    training_s, generation = 0.0, 0
    while training_s < 60 * args.minutes:
        begin = time.perf_counter()
        state, _ = jax.block_until_ready(chunk(trainer, state))
        training_s += time.perf_counter() - begin
        generation += args.eval_interval
        params = trainer.algorithm.best(state.algo_state)
        curve.append(
            {
                "generation": generation,
                "train_s": round(training_s, 1),
                "token_accuracy": float(accuracy(params)),
            }
        )
        print(name, curve[-1], flush=True)
    return {
        "algo": name,
        "compile_s": compile_s,
        "s_per_generation": training_s / generation,
        "generations": generation,
        "curve": curve,
        "budget_s": 60 * args.minutes,
    }


def table(rows: list[dict]) -> str:
    """Per algorithm: its speed, and the last test within the budget (the run stops at the
    first test past it)."""
    lines = [
        "| algorithm | s / generation | last test within the budget: generation, minutes "
        "| per-token accuracy there | best test within the budget |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        within = [p for p in r["curve"] if p["train_s"] <= r["budget_s"]]
        last, best = within[-1], max(p["token_accuracy"] for p in within)
        lines.append(
            f"| `{r['algo']}` | {r['s_per_generation']:.2f} | {last['generation']}, "
            f"{last['train_s'] / 60:.1f} | {100 * last['token_accuracy']:.1f}% "
            f"| {100 * best:.1f}% |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("algos", nargs="*", help=f"default: all of {', '.join(ALGORITHMS)}")
    parser.add_argument("--minutes", type=float, default=5.0, help="training time each")
    parser.add_argument("--pop-size", type=int, default=256)
    parser.add_argument("--hidden-size", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--rank", type=int, default=1)
    parser.add_argument("--lr", type=float, default=0.03)
    parser.add_argument("--std", type=float, default=0.1)
    parser.add_argument("--eval-interval", type=int, default=25)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    unknown = sorted(set(args.algos) - set(ALGORITHMS))
    if unknown:
        parser.error(f"unknown algorithms {unknown}; choose from {list(ALGORITHMS)}")
    evolax.use_cpu_cores()
    rows = [run(name, args) for name in args.algos or ALGORITHMS]
    out = RESULTS / "hyperscale_seq2seq.json"
    write_results(out, "hyperscale_seq2seq", rows, table, config=vars(args))
    print(table(rows))


if __name__ == "__main__":
    main()
