"""``evolax eval``: score a run's saved solution on test episodes."""

from __future__ import annotations

import argparse

from evolax.cli.common import EVAL_STREAM, over_episodes
from evolax.config import run_settings


def command(args: argparse.Namespace) -> int:
    """Print the test scores of ``args.run_dir``'s solution; the exit status."""
    import jax
    import numpy as np

    from evolax.placement import tester
    from evolax.runs import load_run

    config, trainer, state, meta = load_run(args.run_dir, args.checkpoint)
    loaded = meta["checkpoint"]  # the latest where best was asked for but is missing or bad
    run = run_settings(config)
    episodes = args.episodes or run.test_episodes
    key = jax.random.fold_in(jax.random.key(args.seed), EVAL_STREAM)
    seeds = run.seed_list
    task_name = config["task"]["name"]
    test = tester(trainer, episodes, batched=not isinstance(seeds, int))
    over = over_episodes(episodes, trainer.evaluation_task)
    if isinstance(seeds, int):
        scores = np.asarray(test(state, key))
        print(
            f"{task_name} ({loaded} solution, generation "
            f"{int(state.generation)}): mean {scores.mean():.2f} +- {scores.std():.2f}, min "
            f"{scores.min():.2f}, max {scores.max():.2f} {over}"
        )
        return 0
    # every seed's solution, on the same episodes
    all_scores = np.asarray(test(state, key))  # the same episodes for every seed
    generations = np.asarray(state.generation)
    for seed, generation, scores in zip(seeds, generations, all_scores, strict=True):
        print(
            f"{task_name} seed {seed} ({loaded} solution, generation "
            f"{int(generation)}): mean {scores.mean():.2f} +- {scores.std():.2f} {over}"
        )
    q25, median, q75 = np.percentile(all_scores.mean(axis=1), [25, 50, 75])
    print(f"median over {len(seeds)} seeds: {median:.2f} (IQR {q25:.2f} to {q75:.2f})")
    return 0
