"""The JAX environment families' presets trained over seeds on the CPU, each against a policy of
uniformly random actions on the same test episodes; and multi-task MAP-Elites over a set of
XLand-MiniGrid rulesets, scored on held-out rulesets.

Each preset (``navix_empty``, ``minigrid_empty``, ``jumanji_game2048``, ``craftax_classic``,
``mpe_spread``, ``kinetix_levels``) is built as ``evolax train PRESET`` builds it and trained
for its ``run.generations`` (one compiled ``Trainer.run``) from seeds 0, 1, ...; its solution
(the algorithm's ``best``) then plays ``--test-episodes`` test episodes drawn with one key per
seed (on the preset's test task where it has one: Kinetix's 64 held-out mutated copies of its
level, drawn once), and a policy of
uniformly random actions (Gaussian scores, whose ``argmax`` over the allowed actions is
uniform; for Kinetix's continuous actions, Gaussian outputs clipped to ``[-1, 1]``) plays the
same episodes. The wall time is the first seed's:
building the trainer, compiling and training, as ``evolax train PRESET`` spends it before
its tests (the other seeds reuse the compiled program; their times are in the JSON). A grid
world's success rate is the fraction of test episodes with a positive return (its reward is
positive only at the goal); Kinetix's, of those above 0.5 (1 when the green shape touches the
blue one, plus a dense reward of 0.1 x the distance closed, under 0.3 in this level).

The multi-task row trains the ``xland_mt_map_elites`` preset on the first 18 of its 24
rulesets (``near_object_rulesets``: stand next to one object of a room that holds three) and
tests on the 6 others: each held-out ruleset is played by the elite of the nearest training
ruleset (in ``ParamSet.vectors`` space), against random actions and against the one elite
of the highest fitness playing them all; each training ruleset's elite is re-tested on
fresh episodes of its own ruleset (archive coverage and that mean).

Writes ``benchmarks/results/env_family_presets.json`` and ``docs/results/env_family_presets.md``
(the table docs/environments.md includes).

    nice -n 10 python benchmarks/env_family_presets.py  # 5 seeds (Craftax 3), about 11 minutes
    python benchmarks/env_family_presets.py --quick     # 2 seeds, 3 generations
    python benchmarks/env_family_presets.py --presets mpe_spread --seeds 3

Kinetix needs kinetix-env, whose jax <= 0.9.0 does not install beside the other families'
jax: its row is run in ``nox -s kinetix``'s environment (docs/environments.md),
``--presets kinetix_levels``, and merged into the table by hand.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import statistics
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from evolax import schema
from evolax.algorithms import REGISTRY
from evolax.algorithms.base import unflatten_population
from evolax.config import REGISTRIES, build_trainer, resolve
from evolax.policies import Policy
from evolax.rollout import evaluate
from evolax.rollout.teams import agents_per_unit
from evolax.tasks import ParamSet, on_member
from results_table import RESULTS, write_results

KINETIX_NOTE = ", 64 held-out mutations of `s/h2_one_wheel_car`"


@dataclasses.dataclass(frozen=True)
class Preset:
    """One row: a preset, what it trains, and the measure the row reports."""

    name: str
    family: str
    note: str = ""  # after the environment's name
    success: bool = False  # report the success rate (a return > goal) beside the return
    goal: float = 0.0  # a return above it reaches the goal
    max_seeds: int | None = None  # at most this many seeds (a slow environment)


PRESETS = (
    Preset("navix_empty", "NAVIX", success=True),
    Preset("minigrid_empty", "XLand-MiniGrid", success=True),
    Preset("jumanji_game2048", "Jumanji"),
    Preset("craftax_classic", "Craftax", max_seeds=3),
    Preset("mpe_spread", "JaxMARL", note=" (3 agents)"),
    # Kinetix: 1 for the goal; the dense reward sums to 0.1 x the distance closed (< 0.3 here)
    Preset("kinetix_levels", "Kinetix", note=KINETIX_NOTE, success=True, goal=0.5, max_seeds=3),
)
MULTI_TASK = "xland_mt_map_elites"
HELD_OUT = 6  # rulesets of the 24 kept for the test


class RandomActions(Policy):
    """Uniformly random actions: a standard normal score per action entry, so the task's
    ``argmax`` (over the allowed actions, where there is a mask) is a uniform draw."""

    action_shape: tuple[int, ...] = eqx.field(static=True)

    def init(self, key, obs_shape, action_shape):
        return jnp.zeros(1)

    def apply(self, params, obs, state, key):
        return jax.random.normal(key, self.action_shape), state


def random_returns(task, key: jax.Array, n_episodes: int) -> jax.Array:
    """Returns of uniformly random actions over the episodes ``Trainer.test(state, key,
    n_episodes)`` plays (the agents' mean for a multi-agent task)."""
    agents = agents_per_unit(task)
    policy = RandomActions(tuple(task.action_shape))
    _, info = evaluate(policy, task, jnp.zeros((agents, 1)), key, n_episodes)
    return jnp.mean(info.returns, axis=0)


def summary(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def cell(stats: dict, digits: int) -> str:
    return f"{stats['median']:.{digits}f} ({stats['min']:.{digits}f} to {stats['max']:.{digits}f})"


def measure(preset: Preset, seeds: int, overrides: list[str], test_episodes: int) -> dict:
    config = resolve(preset.name, overrides)
    generations = config["run"]["generations"]
    per_seed = []
    start = time.perf_counter()
    trainer = build_trainer(config)  # once: a new environment object would compile anew
    test = jax.jit(lambda state, key: trainer.test(state, key, test_episodes))
    random = jax.jit(lambda key: random_returns(trainer.evaluation_task, key, test_episodes))
    for seed in range(min(seeds, preset.max_seeds or seeds)):
        start = start if seed == 0 else time.perf_counter()
        state = trainer.init(jax.random.key(seed))
        state, _ = trainer.run(state, generations)
        jax.block_until_ready(state)
        wall = time.perf_counter() - start
        test_key = jax.random.key(10_000 + seed)
        trained, baseline = np.asarray(test(state, test_key)), np.asarray(random(test_key))
        row = {
            "seed": seed,
            "wall_s": wall,
            "return": float(trained.mean()),
            "random_return": float(baseline.mean()),
            "success": float((trained > preset.goal).mean()),
            "random_success": float((baseline > preset.goal).mean()),
        }
        print(preset.name, row, flush=True)
        per_seed.append(row)
    return {
        "preset": preset.name,
        "family": preset.family,
        "environment": f"`{config['task']['name'].split(':', 1)[1]}`{preset.note}",
        "algorithm": config["algorithm"]["name"],
        "pop_size": config["algorithm"]["pop_size"],
        "generations": generations,
        "success_measure": preset.success,
        "per_seed": per_seed,
        **{
            key: summary([r[key] for r in per_seed])
            for key in ("wall_s", "return", "random_return", "success", "random_success")
        },
    }


def nearest(train: ParamSet, held_out: ParamSet) -> np.ndarray:
    """For each held-out member, the index of the nearest training member."""
    a, b = np.asarray(train.vectors()), np.asarray(held_out.vectors())
    return np.argmin(((b[:, None, :] - a[None, :, :]) ** 2).sum(-1), axis=1)


def elite_scorers(policy, task, n_episodes: int):
    """Jitted ``(genome, i, key) -> mean return`` of a genome on member ``i`` of ``task``'s
    parameter set, and ``(i, key) ->`` that of random actions, over ``n_episodes``."""

    def elite(genome, i, key):
        one = jax.tree.map(lambda g: g[None], genome)
        _, info = evaluate(policy, on_member(task, i), one, key, n_episodes)
        return jnp.mean(info.returns)

    def random(i, key):
        return jnp.mean(random_returns(on_member(task, i), key, n_episodes))

    return jax.jit(elite), jax.jit(random)


def play_elites(scorers, genomes, key, members, elites, random=False) -> float:
    """Mean test return over ``members`` of a task's parameter set, member ``members[j]``
    played by archive cell ``elites[j]``'s genome (or by random actions)."""
    elite_score, random_score = scorers
    scores = []
    for i, cell in zip(members, elites, strict=True):
        if random:
            scores.append(float(random_score(i, key)))
        else:
            genome = jax.tree.map(lambda g, c=cell: g[c], genomes)
            scores.append(float(elite_score(genome, i, key)))
    return float(np.mean(scores))


def measure_multi_task(seeds: int, overrides: list[str], test_episodes: int) -> dict:
    config = resolve(MULTI_TASK, overrides)
    generations = config["run"]["generations"]
    whole = build_trainer(config)
    train_set, held_set = whole.task.distribution.split(whole.task.distribution.size - HELD_OUT)
    start = time.perf_counter()
    closest = nearest(train_set, held_set)
    algorithm = schema.build(
        config["algorithm"], REGISTRY, REGISTRIES, "algorithm", task_params=train_set.vectors()
    )
    task = eqx.tree_at(lambda t: t.distribution, whole.task, train_set)
    held_task = eqx.tree_at(lambda t: t.distribution, whole.task, held_set)
    trainer = dataclasses.replace(whole, algorithm=algorithm, task=task)
    train_scorers = elite_scorers(trainer.policy, task, test_episodes)
    held_scorers = elite_scorers(trainer.policy, held_task, test_episodes)
    per_seed = []
    for seed in range(seeds):
        start = start if seed == 0 else time.perf_counter()
        state = trainer.init(jax.random.key(seed))
        state, _ = trainer.run(state, generations)
        jax.block_until_ready(state)
        wall = time.perf_counter() - start
        archive = state.algo_state.archive
        genomes = unflatten_population(archive.genomes, state.algo_state.best_genome)
        key = jax.random.key(10_000 + seed)

        own, held = list(range(train_set.size)), list(range(held_set.size))
        best = int(np.argmax(np.asarray(archive.fitness)))
        on_train = functools.partial(play_elites, train_scorers, genomes, key, own)
        on_held = functools.partial(play_elites, held_scorers, genomes, key, held)
        row = {
            "seed": seed,
            "wall_s": wall,
            "coverage": float(np.mean(np.asarray(archive.occupied))),
            "elite_return": on_train(own),
            "random_train": on_train(own, random=True),
            "held_out_return": on_held(list(closest)),
            "held_out_best": on_held([best] * held_set.size),
            "random_held_out": on_held(list(closest), random=True),
        }
        print(MULTI_TASK, row, flush=True)
        per_seed.append(row)
    keys = ("wall_s", "coverage", "elite_return", "random_train", "held_out_return")
    keys = (*keys, "held_out_best")
    return {
        "preset": MULTI_TASK,
        "generations": generations,
        "pop_size": config["algorithm"]["pop_size"],
        "n_train": train_set.size,
        "n_held_out": held_set.size,
        "per_seed": per_seed,
        **{key: summary([r[key] for r in per_seed]) for key in (*keys, "random_held_out")},
    }


def table(rows: list[dict]) -> str:
    single = [r for r in rows if r["preset"] != MULTI_TASK]
    lines = [
        "| family | environment | preset | algorithm (pop) | generations | wall time, first seed "
        "| test return: median (min to max) | random actions |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in single:
        result, random = cell(r["return"], 2), cell(r["random_return"], 2)
        if r["success_measure"]:
            result += f"; success {cell(r['success'], 2)}"
            random += f"; success {cell(r['random_success'], 2)}"
        lines.append(
            f"| {r['family']} | {r['environment']} | `{r['preset']}` | `{r['algorithm']}` "
            f"({r['pop_size']}) | {r['generations']} | {r['per_seed'][0]['wall_s']:.0f} s | "
            f"{result} over {len(r['per_seed'])} seeds | {random} |"
        )
    multi = [r for r in rows if r["preset"] == MULTI_TASK]
    for r in multi:
        lines += [
            "",
            f"Multi-task MAP-Elites (`{MULTI_TASK}`, pop {r['pop_size']}, "
            f"{r['generations']} generations) on {r['n_train']} training rulesets, "
            f"{r['n_held_out']} held out; medians over {len(r['per_seed'])} seeds "
            "(min to max):",
            "",
            "| measure | multi-task MAP-Elites | random actions |",
            "|---|---|---|",
            f"| archive coverage (training rulesets with an elite) | {cell(r['coverage'], 2)} | |",
            f"| each elite re-tested on its own ruleset: mean return | "
            f"{cell(r['elite_return'], 3)} | {cell(r['random_train'], 3)} |",
            f"| held-out rulesets, each played by the nearest training ruleset's elite: mean "
            f"return | {cell(r['held_out_return'], 3)} | {cell(r['random_held_out'], 3)} |",
            f"| held-out rulesets, all played by the training elite of the highest fitness: "
            f"mean return | {cell(r['held_out_best'], 3)} | |",
            f"| wall time, first seed (compilation included) | "
            f"{r['per_seed'][0]['wall_s']:.0f} s | |",
        ]
    return "\n".join(lines)


QUICK = ["run.generations=3"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--test-episodes", type=int, default=64)
    parser.add_argument("--quick", action="store_true", help="2 seeds, 3 generations")
    parser.add_argument(
        "--presets",
        nargs="*",
        default=[p.name for p in PRESETS] + [MULTI_TASK],
        help="the presets to run (default: all)",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="SECTION.FIELD=VALUE",
        help="an override for every preset run (repeatable)",
    )
    args = parser.parse_args()
    seeds = 2 if args.quick else args.seeds
    overrides = [*(QUICK if args.quick else []), *args.overrides]
    rows = []
    for preset in PRESETS:
        if preset.name in args.presets:
            rows.append(measure(preset, seeds, overrides, args.test_episodes))
    if MULTI_TASK in args.presets:
        rows.append(measure_multi_task(seeds, overrides, args.test_episodes))
    print(table(rows))
    if not args.quick:
        write_results(
            RESULTS / "env_family_presets.json",
            "env_family_presets",
            rows,
            table,
            config=vars(args),
        )


if __name__ == "__main__":
    main()
