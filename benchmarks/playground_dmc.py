"""CMA-ES on MuJoCo Playground's CartpoleBalance tasks (DM Control suite, pure-JAX MJX), on the
CPU: environment steps to the success level, over seeds.

The `dmc_cartpole_balance` preset (CMA-ES, population 16, a linear policy with tanh controls,
one 1000-step episode per member: 16,000 environment steps a generation) over ``--seeds``
seeds run as one program, the centre tested every 5 generations on 16 held-out episodes.
DM Control rewards each step in [0, 1], so a 1000-step episode scores at most 1000.
``CartpoleBalanceSparse`` rewards 1 exactly while the cart and the pole are within the task's
bounds: its success level, 1000, is an episode that never leaves them. ``CartpoleBalance``
multiplies uprightness, a centred cart, small controls and small velocities; its level here,
990, is 99% of the maximum (the suite documents no threshold for it). Test episodes are not
counted as training steps.

Writes ``benchmarks/results/playground_dmc.json`` and ``docs/results/playground_dmc.md`` (the table
docs/host.md includes).

    python benchmarks/playground_dmc.py                     # 5 seeds, 60 generations
    python benchmarks/playground_dmc.py --seeds 2 --generations 20
"""

from __future__ import annotations

import argparse

from cartpole_seeds import per_seed_steps, quartiles, train_run
from evolax.config import resolve, run_settings
from results_table import RESULTS, millions, write_results

LEVELS = {
    "CartpoleBalanceSparse": (1000.0, "1000: in bounds at every step"),
    "CartpoleBalance": (990.0, "990: 99% of the maximum"),
}


def table(rows: list[dict]) -> str:
    lines = [
        "| task | success level | seeds reaching it | training steps to it: median (IQR) "
        "| best test: median (IQR) | wall time, all seeds |",
        "|---|---|---|---|---|---|",
    ]

    for r in rows:
        steps, best = r["steps_to_level"], r["best"]
        lines.append(
            f"| `playground:{r['env']}` | {LEVELS[r['env']][1]} | {steps['reached']} of "
            f"{steps['of']} | {millions(steps['median'])} ({millions(steps['q25'])}-"
            f"{millions(steps['q75'])}) | {best['median']:.1f} ({best['q25']:.1f}-"
            f"{best['q75']:.1f}) | {r['wall_s']:.0f} s |"
        )
    return "\n".join(lines)


def measure(env: str, seeds: int, generations: int) -> dict:
    config = resolve(
        "dmc_cartpole_balance",
        [f"task.name=playground:{env}", f"run.generations={generations}", f"run.seeds={seeds}"],
    )
    steps_per_generation = config["algorithm"]["pop_size"] * config["trainer"]["n_repeats"] * 1000
    _, tests, wall = train_run(config)
    seed_list = run_settings(config).seed_list
    per_seed = per_seed_steps(tests, seed_list, LEVELS[env][0], steps_per_generation)
    for s in per_seed:
        print(env, s["seed"], s["steps"], s["best"])
    return {
        "env": env,
        "per_seed": per_seed,
        "steps_to_level": quartiles([s["steps"] for s in per_seed]),
        "best": quartiles([s["best"] for s in per_seed]),
        "wall_s": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--generations", type=int, default=60)
    args = parser.parse_args()
    rows = [measure(env, args.seeds, args.generations) for env in LEVELS]
    print(table(rows))
    write_results(RESULTS / "playground_dmc.json", "playground_dmc", rows, table, config=vars(args))


if __name__ == "__main__":
    main()
