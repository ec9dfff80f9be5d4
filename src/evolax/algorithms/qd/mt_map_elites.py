"""Multi-task MAP-Elites (Mouret & Maguire 2020, "Quality Diversity for Multi-task
Optimization"): one elite per task of a fixed set, each child evaluated on one task chosen near
its parent's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import Algorithm, normal
from evolax.algorithms.qd.common import QD_SUMMARY, QDState, archive_output, iso_line
from evolax.qd import CVTArchive
from evolax.types import PRNGKey
from evolax.validation import check_in_interval, check_non_negative, check_positive

TOURNAMENT_SIZES = (1, 10, 50, 100, 500)
"""The tournament sizes the bandit chooses among (the authors' ``pymap_elites``)."""


def _bound(value: float | Sequence[float] | None) -> tuple[float, ...] | None:
    return None if value is None else tuple(float(v) for v in np.ravel(value))


def task_box(task_params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The box ``(low, high)`` around the task parameters ``[n_tasks, task_dim]`` (widened by
    1/2 where every task shares a value)."""
    low, high = task_params.min(axis=0), task_params.max(axis=0)
    flat = high <= low
    return np.where(flat, low - 0.5, low), np.where(flat, high + 0.5, high)


@chex.dataclass(frozen=True, kw_only=True)
class MTMAPElitesState(QDState):
    """The archive (one cell per task: ``archive.descriptors`` holds each task's parameters)
    and the bandit over tournament sizes.

    Attributes:
        start: the first genome ``x0``, ``[D]`` (random individuals are drawn around it).
        task_index: the task each member of the last ``ask`` is to be evaluated on,
            ``i32[pop]``.
        arm: the tournament size (an index into ``tournament_sizes``) of the last ``ask``,
            ``i32[]``; ``-1`` while the archive is still being seeded with random individuals.
        successes: per tournament size, the children that entered the archive, summed over
            the generations it was used, ``[arms]``.
        pulls: per tournament size, the generations it was used, ``[arms]``.
    """

    start: Float[Array, " dim"]
    task_index: Int[Array, " pop"]
    arm: Int[Array, ""]
    successes: Float[Array, " arms"]
    pulls: Float[Array, " arms"]


class MTMAPElites(Algorithm[MTMAPElitesState]):
    """Multi-task MAP-Elites (Mouret & Maguire, 2020): an archive with one elite per task of a
    fixed set (``task_params``, each task a point of a task-parameter space), filled by
    children that are each evaluated on ONE task, chosen by the algorithm.

    Until more than ``init_fraction`` of the tasks hold an elite, ``ask`` returns random
    individuals (uniform in ``[lower, upper]`` when both are set, else ``x0 + init_std N(0,
    I)``) on uniformly random tasks. Then each child comes from two parents drawn uniformly
    among the elites by iso+line variation (``x + mutation_std N(0, I) + line_std N(0, 1)
    (y - x)``, clipped to the bounds), and is evaluated on the task nearest its first
    parent's task (Euclidean, in task-parameter space) among ``s`` tasks drawn uniformly: a
    tournament whose size ``s`` a UCB1 bandit picks each generation from
    ``tournament_sizes``, rewarding a size with the number of children that entered the
    archive (each size is tried in random order first). ``tell`` puts each child in its
    task's cell if it beats the elite there. These are the rules of the authors'
    ``pymap_elites`` (``map_elites/multitask.py``), in batches of ``pop_size``.

    Which task each member plays is :meth:`task_indices` (``i32[pop]``), after ``ask``: the
    trainer evaluates member ``i`` on member ``task_indices[i]`` of its task's
    :class:`~evolax.tasks.ParamSet` (``task.distribution``; see
    :func:`~evolax.tasks.distributions.on_member`); in your own loop, evaluate it yourself.
    ``tell`` needs the fitness only. :meth:`best` is the best elite over all tasks; the
    archive's ``genomes[t]`` is task ``t``'s solution.

    Args:
        pop_size: children per generation.
        task_params: each task's parameters, ``[n_tasks, task_dim]`` (the tasks' places in
            task space; a task with a :class:`~evolax.tasks.ParamSet` gives them as
            ``task.distribution.vectors()``, which the command line fills in).
        mutation_std: isotropic mutation std (``sigma_iso``), ``>= 0``.
        line_std: std of the step along the line to the second parent (``sigma_line``).
        init_std: spread of random individuals around ``x0`` (without bounds), positive.
        lower, upper: the box genomes stay in (a value for every variable or one per
            variable), or ``None``.
        init_fraction: the fraction of tasks to fill with random individuals first, in
            ``[0, 1]`` (the authors' 0.1).
        tournament_sizes: the sizes the bandit chooses among (positive integers).
        qd_offset: subtracted from elite fitness in the QD-score.
    """

    summary_metrics: ClassVar[tuple[str, ...]] = QD_SUMMARY
    chooses_tasks: ClassVar[bool] = True
    """The trainer evaluates each member on the task :meth:`task_indices` names."""

    pop_size: int = eqx.field(static=True)
    archive: CVTArchive
    mutation_std: float
    line_std: float
    init_std: float
    lower: tuple[float, ...] | None = eqx.field(static=True)
    upper: tuple[float, ...] | None = eqx.field(static=True)
    init_fraction: float = eqx.field(static=True)
    tournament_sizes: tuple[int, ...] = eqx.field(static=True)

    def __init__(
        self,
        pop_size: int,
        task_params,
        mutation_std: float = 0.01,
        line_std: float = 0.2,
        init_std: float = 0.1,
        lower: float | Sequence[float] | None = None,
        upper: float | Sequence[float] | None = None,
        init_fraction: float = 0.1,
        tournament_sizes: tuple[int, ...] = TOURNAMENT_SIZES,
        qd_offset: float = 0.0,
    ):
        params = np.asarray(task_params, np.float64)
        if params.ndim == 1:
            params = params[:, None]
        if params.ndim != 2 or params.shape[0] < 1 or params.shape[1] < 1:
            raise ValueError(
                f"task_params must have shape (n_tasks, task_dim), got {np.shape(task_params)}"
            )
        if not np.all(np.isfinite(params)):
            raise ValueError("task_params must be finite")
        low, high = task_box(params)
        self.pop_size = pop_size
        self.archive = CVTArchive(params, low, high, qd_offset=qd_offset)
        self.mutation_std = mutation_std
        self.line_std = line_std
        self.init_std = init_std
        self.lower, self.upper = _bound(lower), _bound(upper)
        self.init_fraction = init_fraction
        self.tournament_sizes = tuple(int(s) for s in np.ravel(tournament_sizes))

    def __check_init__(self):
        check_non_negative("mutation_std", self.mutation_std)
        check_non_negative("line_std", self.line_std)
        check_positive("init_std", self.init_std)
        check_in_interval("init_fraction", self.init_fraction, 0.0, 1.0)
        if not self.tournament_sizes or min(self.tournament_sizes) < 1:
            raise ValueError(
                f"tournament_sizes must be positive integers, got {self.tournament_sizes}"
            )
        if self.lower is not None and self.upper is not None:
            if not np.all(np.asarray(self.lower) < np.asarray(self.upper)):
                raise ValueError(f"lower must be below upper, got {self.lower} and {self.upper}")

    @property
    def n_tasks(self) -> int:
        """The number of tasks (and of cells)."""
        return self.archive.n_cells

    @property
    def task_params(self) -> Float[Array, "n_tasks task_dim"]:
        """Each task's parameters, ``[n_tasks, task_dim]``."""
        return jnp.asarray(self.archive.centroids.array)

    def task_indices(self, state: MTMAPElitesState) -> Int[Array, " pop"]:
        """The task each member of the population the last ``ask`` returned is evaluated on,
        ``i32[pop]`` (an index into ``task_params`` and the task's parameter set)."""
        return state.task_index

    def _bounds(self, like: Float[Array, " dim"]) -> tuple[jax.Array, jax.Array]:
        """``(lower, upper)`` as ``[D]`` arrays (``-inf`` and ``inf`` where unset)."""

        def full(bound, default):
            value = default if bound is None else jnp.asarray(bound, like.dtype)
            return jnp.broadcast_to(jnp.asarray(value, like.dtype), like.shape)

        return full(self.lower, -jnp.inf), full(self.upper, jnp.inf)

    def _clip(self, x: Float[Array, "pop dim"]) -> Float[Array, "pop dim"]:
        low, high = self._bounds(x[0])
        return jnp.clip(x, low[None], high[None])

    def _init(self, key, x0):
        del key
        arms = len(self.tournament_sizes)
        return MTMAPElitesState(
            archive=self.archive.init(x0),
            start=x0,
            task_index=jnp.zeros(self.pop_size, jnp.int32),
            arm=jnp.asarray(-1, jnp.int32),
            successes=jnp.zeros(arms, x0.dtype),
            pulls=jnp.zeros(arms, x0.dtype),
        )

    def _pick_arm(self, key: PRNGKey, state: MTMAPElitesState) -> Int[Array, ""]:
        """UCB1 over the tournament sizes once each has been used, uniform before."""
        arms = len(self.tournament_sizes)
        total = jnp.sum(state.pulls)
        ucb = state.successes / jnp.maximum(state.pulls, 1.0) + jnp.sqrt(
            2.0 * jnp.log(jnp.maximum(total, 1.0)) / jnp.maximum(state.pulls, 1.0)
        )
        untried = jnp.any(state.pulls == 0)
        return jnp.where(untried, jax.random.randint(key, (), 0, arms), jnp.argmax(ucb))

    def _ask(self, key, state):
        keys = jax.random.split(key, 7)
        arm_key, pick_key, iso_key, line_key, task_key, random_key, seed_task_key = keys
        elites, params = state.archive, self.task_params.astype(state.start.dtype)
        n, pop = self.n_tasks, self.pop_size
        seeding = jnp.sum(elites.occupied) <= self.init_fraction * n

        # random individuals on random tasks
        if self.lower is not None and self.upper is not None:
            low, high = self._bounds(state.start)
            shape = (pop, state.start.shape[0])
            randoms = jax.random.uniform(
                random_key, shape, state.start.dtype, low[None], high[None]
            )
        else:
            randoms = state.start[None] + self.init_std * normal(
                random_key, (pop, state.start.shape[0]), state.start
            )
        random_tasks = jax.random.randint(seed_task_key, (pop,), 0, n)

        # children of two elites, each on the nearest task to its parent's of s random ones
        parents = self.archive.sample(pick_key, elites, 2 * pop)
        x, y = elites.genomes[parents[:pop]], elites.genomes[parents[pop:]]
        children, _ = iso_line(iso_key, line_key, x, y, self.mutation_std, self.line_std)
        children = self._clip(children)
        arm = self._pick_arm(arm_key, state)
        size = jnp.asarray(self.tournament_sizes, jnp.int32)[arm]
        drawn = jax.random.randint(task_key, (pop, max(self.tournament_sizes)), 0, n)
        distance = jnp.sum((params[drawn] - params[parents[:pop], None]) ** 2, axis=-1)
        distance = jnp.where(jnp.arange(drawn.shape[1])[None] < size, distance, jnp.inf)
        nearest = jnp.take_along_axis(drawn, jnp.argmin(distance, axis=1)[:, None], 1)[:, 0]

        population = jnp.where(seeding, randoms, children)
        tasks = jnp.where(seeding, random_tasks, nearest).astype(jnp.int32)
        return population, state.replace(task_index=tasks, arm=jnp.where(seeding, -1, arm))

    def outputs(self, state):
        return archive_output(self.archive, state.archive)

    def _tell(self, key, state, x, fitness):
        del key
        cell = state.task_index
        params = self.task_params.astype(state.archive.descriptors.dtype)
        archive, _ = self.archive.add_to_cells(state.archive, x, fitness, params[cell], cell)
        # children added one after another: a child succeeds if it beats its task's elite and
        # every earlier child of the batch on that task
        order = jnp.arange(self.pop_size)
        same = (cell[:, None] == cell[None, :]) & (order[None, :] < order[:, None])
        earlier = jnp.max(jnp.where(same, fitness[None, :], -jnp.inf), axis=1)
        success = fitness > jnp.maximum(state.archive.fitness[cell], earlier)
        count = jnp.sum(success).astype(state.successes.dtype)
        used = (jnp.arange(len(self.tournament_sizes)) == state.arm).astype(count.dtype)
        new = state.replace(
            archive=archive,
            successes=state.successes + used * count,
            pulls=state.pulls + used,
        )
        size = jnp.where(
            state.arm >= 0, jnp.asarray(self.tournament_sizes)[jnp.maximum(state.arm, 0)], 0
        )
        return new, self.archive.metrics(archive) | {
            "archive_insertions": count.astype(jnp.float32),
            "tournament_size": size.astype(jnp.float32),
        }
