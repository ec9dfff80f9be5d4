"""HyperNEAT on its paper's boxes visual discrimination task, against a direct encoding.

The `visual_discrimination` preset (NEAT evolving a CPPN that paints the 14,641 weights
between two 11 x 11 sheets) runs for `--seeds` seeds as one vmapped `evolax.train` run; so
does the same task with a direct encoding of the same network: OpenES on a linear policy
(121 x 121 weights and 121 biases), the same population and generations. Reported per
method: the median and interquartile range over seeds of the deployed solution's return (minus
the summed squared distances over the 75 trials; 0 is perfect), the root-mean-square
distance it implies in pixels, and how many seeds solve every trial. Two fixed choices give
the scale: always the field's centre, and a pixel drawn uniformly. Writes
`benchmarks/results/hyperneat_visual_discrimination.json` and
`docs/results/hyperneat_visual_discrimination.md` (the table `docs/neat.md` includes).

    python benchmarks/hyperneat_visual_discrimination.py            # 5 seeds, 300 generations
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

import evolax
from cartpole_seeds import quartiles, train_run
from evolax.config import resolve
from evolax.tasks.visual_discrimination import N_TRIALS, RESOLUTION, SPACING, trials
from results_table import RESULTS, write_results

DIRECT = [  # the same network, its weights searched directly
    "algorithm.name=open_es",
    "algorithm.init_std=0.1",
    "algorithm.optimizer={name: adam, learning_rate: 0.03}",
    "policy.name=mlp",
    "policy.hidden_sizes=[]",
    "policy.output_activation=linear",
]
METHODS = {"HyperNEAT (NEAT evolving a CPPN)": [], "OpenES, direct (linear 121 x 121)": DIRECT}


def fixed_choices() -> dict[str, float]:
    """The returns of choosing the field's centre every time, and of a uniformly drawn pixel
    (its expectation)."""
    _, targets = trials()
    pixels = np.stack(np.meshgrid(*[np.arange(RESOLUTION)] * 2, indexing="ij"), -1).reshape(-1, 2)
    centre = np.array([RESOLUTION // 2] * 2)
    squared = ((pixels[:, None] - targets[None]) ** 2).sum(-1)  # [pixel, trial]
    return {
        "always the centre": -(SPACING**2) * float(((targets - centre) ** 2).sum()),
        "a uniformly drawn pixel": -(SPACING**2) * float(squared.sum(1).mean()),
    }


def rms_pixels(value: float) -> float:
    """The root-mean-square distance, in pixels, of a return over the 75 trials."""
    return math.sqrt(max(-value, 0.0) / N_TRIALS) / SPACING


def measure(name: str, overrides: list[str], seeds: int, generations: int) -> dict:
    run = [
        f"run.generations={generations}",
        f"run.seeds={seeds}",
        f"run.test_interval={generations}",
        f"run.checkpoint_interval={generations}",
    ]
    config = resolve("visual_discrimination", [*overrides, *run])
    _, tests, wall = train_run(config)
    seeds_run = sorted({row["seed"] for row in tests})
    best = [max(r["test_mean"] for r in tests if r["seed"] == seed) for seed in seeds_run]
    return {
        "method": name,
        "settings": overrides,
        "best": quartiles(best),
        "per_seed": best,
        "solved": sum(b == 0.0 for b in best),
        "wall_s": wall,
    }


def table(rows: list[dict], fixed: dict[str, float]) -> str:
    def cell(stats: dict, f=lambda x: f"{x:.1f}") -> str:
        return f"{f(stats['median'])} ({f(stats['q25'])} to {f(stats['q75'])})"

    lines = [
        "| method | return | RMS distance, pixels | seeds solving all 75 trials |",
        "|---|---|---|---|",
    ]
    for row in rows:
        b = row["best"]
        distance = {k: rms_pixels(b[k]) for k in ("median", "q25", "q75")}
        lines.append(
            f"| {row['method']} | {cell(b)} | {cell(distance, lambda x: f'{x:.2f}')} "
            f"| {row['solved']} of {b['of']} |"
        )
    for name, value in fixed.items():
        lines.append(f"| {name} | {value:.1f} | {rms_pixels(value):.2f} | |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--generations", type=int, default=300)
    parser.add_argument(
        "--out", type=Path, default=RESULTS / "hyperneat_visual_discrimination.json"
    )
    args = parser.parse_args()
    evolax.use_cpu_cores()
    fixed = fixed_choices()
    rows = []
    for name, overrides in METHODS.items():
        rows.append(measure(name, overrides, args.seeds, args.generations))
        write_results(
            args.out, "hyperneat_visual_discrimination", rows, lambda r: table(r, fixed),
            generations=args.generations, fixed_choices=fixed,
        )  # fmt: skip
        print(table(rows, fixed), flush=True)


if __name__ == "__main__":
    main()
