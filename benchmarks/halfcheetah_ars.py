"""ARS V2 on gymnasium's HalfCheetah-v5, stepped on the host: environment steps to pass 3000.

The `halfcheetah` preset (the ARS paper's HalfCheetah settings: 8 directions, step 0.02,
noise 0.03, a linear policy from zero, normalised states; 16 episodes of 1000 steps a
generation) over ``--seeds`` seeds (0 and the next ones, run one after another), the centre
tested every 10 generations on 10 held-out episodes. Per seed: the training environment steps
when a test first reaches 3000 (HalfCheetah's episodes always last 1000 steps, so a
generation is 16,000 steps; test episodes are not counted, as the paper counts none), and the
best test. The ARS paper (Mania, Guy & Recht 2018, table 1) reports the average episodes to
3000 on HalfCheetah-v1 over 3 seeds: 2,720 for ARS V2 and 1,707 for V2-t.

Writes ``benchmarks/results/halfcheetah_ars.json`` and ``docs/results/halfcheetah_ars.md`` (the
table docs/host.md includes).

    python benchmarks/halfcheetah_ars.py                        # 3 seeds, 250 generations
    python benchmarks/halfcheetah_ars.py --seeds 1 --generations 50
"""

from __future__ import annotations

import argparse

from cartpole_seeds import per_seed_steps, quartiles, train_run
from evolax.config import resolve, run_settings
from results_table import RESULTS, millions, write_results

TARGET = 3000.0
PAPER_EPISODES = {"ARS V2": 2720, "ARS V2-t": 1707}


def table(rows: list[dict]) -> str:
    lines = [
        "| run | seeds reaching 3000 | training steps to 3000: median (IQR) | best test: median "
        "| wall time per seed |",
        "|---|---|---|---|---|",
    ]

    for r in rows:
        steps = r["steps_to_target"]
        lines.append(
            f"| evolax ARS V2, `halfcheetah` preset, HalfCheetah-v5 | {steps['reached']} of "
            f"{steps['of']} | {millions(steps['median'])} ({millions(steps['q25'])}-"
            f"{millions(steps['q75'])}) | {r['best']['median']:.0f} "
            f"| {r['wall_s'] / steps['of'] / 60:.1f} min |"
        )
    for name, episodes in PAPER_EPISODES.items():
        lines.append(
            f"| {name}, ARS paper table 1, HalfCheetah-v1 (mean of 3 seeds) | 3 of 3 "
            f"| {episodes * 1000 / 1e6:.2f}M | - | - |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--generations", type=int, default=250)
    args = parser.parse_args()
    config = resolve(
        "halfcheetah", [f"run.generations={args.generations}", f"run.seeds={args.seeds}"]
    )
    steps_per_generation = config["algorithm"]["pop_size"] * config["trainer"]["n_repeats"] * 1000
    _, tests, wall = train_run(config)
    per_seed = per_seed_steps(tests, run_settings(config).seed_list, TARGET, steps_per_generation)
    for s in per_seed:
        print(s["seed"], s["steps"], s["best"], flush=True)
    row = {
        "per_seed": per_seed,
        "steps_to_target": quartiles([s["steps"] for s in per_seed]),
        "best": quartiles([s["best"] for s in per_seed]),
        "wall_s": wall,
    }
    print(table([row]))
    write_results(
        RESULTS / "halfcheetah_ars.json", "halfcheetah_ars", [row], table, config=vars(args)
    )


if __name__ == "__main__":
    main()
