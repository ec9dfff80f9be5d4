"""Training on a task stepped on the host (gymnasium, MuJoCo's C code, Ray workers): a
trainer with :class:`~evolax.trainer.Trainer`'s surface that runs eagerly."""

from __future__ import annotations

from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from evolax.rollout.host import evaluate_host
from evolax.trainer import Trainer, TrainState
from evolax.types import Metrics
from evolax.validation import check_positive_int


class HostTrainer(Trainer):
    """A :class:`~evolax.trainer.Trainer` for a task with ``on_host``
    (:class:`~evolax.tasks.Gymnasium`): the same arguments, ``init``, ``step``, ``run`` and
    ``test``, run eagerly. ``ask`` and ``tell`` are compiled; between them the episodes are
    stepped in worker processes (:func:`~evolax.rollout.host.evaluate_host`) while the device
    computes the actions. One device evaluates the whole population: ``mesh`` and
    ``pop_chunk`` are not used. It cannot be traced (``jit``, ``vmap``, ``scan``).
    """

    hosted: ClassVar[bool] = True

    def _resolve_mesh(self) -> Mesh | None:
        return None

    def evaluate(self, population, key, obs_stats):
        return evaluate_host(self.policy, self.task, population, key, self.n_repeats, obs_stats)

    def _test_returns(self, task, population, key, n_episodes, stats):
        return evaluate_host(self.policy, task, population, key, n_episodes, stats)[1].returns

    def step(self, state: TrainState) -> tuple[TrainState, Metrics]:
        """One generation, eagerly (see :meth:`Trainer.step <evolax.trainer.Trainer.step>`)."""
        obs_stats = state.obs_stats if self.normalize_obs else None
        population, algo_state, keys = _ask(self, state)
        fitness, info = self.evaluate(population, keys[1], obs_stats)
        return _tell(self, state, population, algo_state, keys, fitness, info)

    def run(self, state: TrainState, n_generations: int) -> tuple[TrainState, Metrics]:
        """``n_generations`` eager steps; metrics gain a leading generation axis."""
        check_positive_int("n_generations", n_generations)
        history = []
        for _ in range(n_generations):
            state, metrics = self.step(state)
            history.append(metrics)
        return state, jax.tree.map(lambda *m: jax.device_put(np.stack(m)), *history)


@eqx.filter_jit
def _ask(trainer: HostTrainer, state: TrainState):
    """:meth:`Trainer._ask`, compiled."""
    return trainer._ask(state)


@eqx.filter_jit
def _tell(trainer: HostTrainer, state, population, algo_state, keys, fitness, info):
    """:meth:`Trainer._tell`, compiled."""
    return trainer._tell(state, population, algo_state, keys, fitness, info)


def each_seed(fn, state: Any, batched: bool) -> Any:
    """``fn(state)``, or for a ``batched`` state (a leading seed axis) ``fn`` of each seed's
    state one after another, the results stacked: ``vmap`` for a host task's eager steps."""
    if not batched:
        return fn(state)
    n_seeds = jax.tree.leaves(state)[0].shape[0]
    results = [fn(jax.tree.map(lambda x, i=i: x[i], state)) for i in range(n_seeds)]
    return jax.tree.map(lambda *r: jnp.stack(r), *results)
