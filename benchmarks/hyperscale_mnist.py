"""LowRankES on MNIST at a population of 1,024: the test-accuracy curve.

The ``mnist`` preset (EvoJAX's ConvNet, 11,274 parameters, centre starting at zero) with
``low_rank_es``: every kernel perturbed at rank 1 (a kernel is a matrix over its flattened
window), population 1,024, ``--batch`` training images per generation, adam 0.01 on the mean,
noise scale 0.04; the whole 10,000-image test set scores the mean every ``--interval``
generations. Writes ``benchmarks/results/hyperscale_mnist.json`` and
``docs/results/hyperscale_mnist.md``.

    python benchmarks/hyperscale_mnist.py       # about 70 s a generation on 2 cores: for a GPU

A run stopped by SIGTERM (``timeout``) keeps the tests up to the chunk it ends with. Seconds
are the run's wall time at each test (compilation and tests included).
"""

from __future__ import annotations

import argparse

import evolax
from cartpole_seeds import train_run
from evolax.config import resolve
from results_table import RESULTS, write_results


def table(rows: list[dict]) -> str:
    step = -(-len(rows) // 8)  # at most 9 columns: every step-th test and the last
    shown = [r for i, r in enumerate(rows) if i % step == step - 1 or i == len(rows) - 1]
    return "\n".join(
        [
            "| generation | " + " | ".join(str(r["generation"]) for r in shown) + " |",
            "|---|" + "---|" * len(shown),
            "| seconds | " + " | ".join(f"{r['seconds']:.0f}" for r in shown) + " |",
            "| test accuracy (%) | "
            + " | ".join(f"{100 * r['accuracy']:.1f}" for r in shown)
            + " |",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pop-size", type=int, default=1024)
    parser.add_argument("--rank", type=int, default=1)
    parser.add_argument("--batch", type=int, default=256, help="training images per generation")
    parser.add_argument("--generations", type=int, default=300)
    parser.add_argument("--interval", type=int, default=25, help="generations between tests")
    args = parser.parse_args()
    evolax.use_cpu_cores()
    config = resolve(
        "mnist",
        [
            "algorithm.name=low_rank_es",
            f"algorithm.pop_size={args.pop_size}",
            f"algorithm.rank={args.rank}",
            "algorithm.init_std=0.04",
            "algorithm.optimizer={name: adam, learning_rate: 0.01}",
            f"task.batch_size={args.batch}",
            f"run.generations={args.generations}",
            f"run.log_interval={args.interval}",
            f"run.test_interval={args.interval}",
            f"run.checkpoint_interval={args.generations}",
        ],
    )
    # a run stopped early (SIGTERM, as `timeout` sends) ends after its chunk with a last test
    _, tests, wall = train_run(config, "test")
    rows = [
        {"generation": r["generation"], "seconds": r["wall_time"], "accuracy": r["test_mean"]}
        for r in tests
    ]
    write_results(
        RESULTS / "hyperscale_mnist.json",
        "hyperscale_mnist",
        rows,
        table,
        config=vars(args),
        wall_s=wall,
    )
    print(table(rows))


if __name__ == "__main__":
    main()
