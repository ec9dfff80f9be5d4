"""``evolax render``: draw a run's saved solution acting (a GIF, or a still of predictions)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from evolax.cli.common import EVAL_STREAM
from evolax.config import run_settings


def command(args: argparse.Namespace) -> int:
    """Draw ``args.run_dir``'s solution acting; the exit status."""
    import jax
    import numpy as np

    from evolax.render import check_drawable, render_episode
    from evolax.runner import seed_slice
    from evolax.runs import load_run

    def drawable(trainer) -> None:  # before any checkpoint is read or episode compiled
        if getattr(trainer.policy, "export", None) is None:  # else: the network is drawn
            try:
                check_drawable(trainer.evaluation_task, _out(args, trainer.evaluation_task))
            except NotImplementedError as error:  # the task's, not a bug: one plain line
                raise ValueError(str(error)) from error

    config, trainer, state, meta = load_run(args.run_dir, args.checkpoint, check=drawable)
    seeds = run_settings(config).seed_list
    if not isinstance(seeds, int):  # several seeds: the best-scoring one's solution
        index = int(np.argmax(np.nan_to_num(np.array(meta["best_test_mean"], float), nan=-np.inf)))
        state = seed_slice(state, index)
        print(f"drawing seed {seeds[index]}, the best-scoring of the run's seeds")
    task = trainer.evaluation_task
    out = _out(args, task)
    params, stats = trainer.solution(state)
    export = getattr(trainer.policy, "export", None)  # a NEAT network's
    if export is not None:  # its drawing and its genes, beside the episode's file
        from evolax.render import plot_network

        network = export(params)
        folder = Path(out).parent
        (folder / "network.json").write_text(json.dumps(network, indent=1))
        print(f"wrote {plot_network(network, folder / 'network.png')} and network.json")
    key = jax.random.fold_in(jax.random.key(args.seed), EVAL_STREAM)
    try:
        frames, episode_return = render_episode(
            trainer.policy, task, params, key, out, obs_stats=stats
        )
    except NotImplementedError as error:  # the task cannot draw itself: the user's choice
        if export is not None:
            print(f"no episode drawn: {error}")
            return 0
        raise ValueError(str(error)) from error
    print(f"wrote {out}: {frames} frame(s), episode return {episode_return:.4g}")
    return 0


def _out(args: argparse.Namespace, task) -> Path:
    """The picture's path: ``--out``, else beside the run (one-step (supervised) tasks are
    drawn as a still of the predictions)."""
    default = "episode.html" if hasattr(task, "render_html") else "episode.gif"
    return args.out or args.run_dir / (default if task.max_steps > 1 else "predictions.png")
