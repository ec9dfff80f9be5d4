"""Where a trainer runs: the placement layer.

- :func:`choose_layout` / :func:`place`: the measured choice of a trainer's evaluation layout
  (devices, population chunks and the episode loop) for a state, cached per shape
  (:mod:`.tuner`). The runner calls it once per run and records the choice in the run
  folder.
- :class:`HostTrainer`: the trainer of a task stepped on the host (:mod:`.host`), and
  :func:`trainer_class`, which picks it or :class:`~evolax.trainer.Trainer` for a task.
- :class:`Chunks` and :func:`tester`: a trainer's ``run`` and ``test`` as the runner executes
  them, compiled ahead of time or eager (:mod:`.execute`).

The trainer itself is given a layout (:class:`~evolax.layout.Layout`) and never chooses one;
the mechanism that evaluates on a layout is :func:`evolax.rollout.sharded.evaluate_on`.
"""

from evolax.layout import Choice, EpisodeLoop, Layout
from evolax.placement.execute import Chunks, tester
from evolax.placement.host import HostTrainer, each_seed
from evolax.placement.tuner import choices, choose_layout, measuring, place
from evolax.tasks.base import Task
from evolax.trainer import Trainer


def trainer_class(task: Task) -> type[Trainer]:
    """The trainer for ``task``: :class:`HostTrainer` for a task stepped on the host, else
    :class:`~evolax.trainer.Trainer`."""
    return HostTrainer if task.on_host else Trainer


__all__ = [
    "Choice",
    "Chunks",
    "EpisodeLoop",
    "HostTrainer",
    "Layout",
    "choices",
    "choose_layout",
    "each_seed",
    "measuring",
    "place",
    "tester",
    "trainer_class",
]
