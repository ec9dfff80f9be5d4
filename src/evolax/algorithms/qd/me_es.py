"""ME-ES: MAP-Elites whose variation is an evolution strategy (Colas, Madhavan, Huizinga &
Clune 2020, "Scaling MAP-Elites to Deep Neuroevolution")."""

from __future__ import annotations

from typing import ClassVar

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Bool, Float, Int

from evolax.algorithms.base import HIGHEST, Algorithm, normal
from evolax.algorithms.qd.common import QD_SUMMARY, QDState, archive_output
from evolax.algorithms.shaping import centered_rank
from evolax.optim import optimizer_field
from evolax.qd import Archive, knn_distance
from evolax.validation import check_positive, check_positive_int

MODES = ("explore_exploit", "explore", "exploit")


@chex.dataclass(frozen=True, kw_only=True)
class MEESState(QDState):
    """ME-ES state: the archive, the ES's search point and the bank of visited descriptors.

    Attributes:
        mean: the ES's current point ``theta``, ``[D]``.
        opt_state: its optax optimizer's state (reset at each new parent).
        bank: the descriptors of every evaluated ``theta`` (a ring of ``bank_size``),
            ``[bank_size, n_desc]``; novelty is measured against it.
        banked: how many were ever banked, ``i32[]``.
        steps: ES steps since the last parent was picked, ``i32[]``.
        exploring: whether the current parent optimises novelty (else fitness), ``bool[]``.
    """

    mean: Float[Array, " dim"]
    opt_state: optax.OptState
    bank: Float[Array, "bank desc"]
    banked: Int[Array, ""]
    steps: Int[Array, ""]
    exploring: Bool[Array, ""]


class MEES(Algorithm[MEESState]):
    """ME-ES (Colas et al., 2020): an OpenAI-ES that starts from an elite of the archive and
    climbs either its fitness (exploit) or its novelty (explore) for ``steps_per_parent``
    steps, then picks a new elite; every step's ``theta`` is evaluated and offered to the
    archive.

    ``ask`` returns ``pop_size - 1`` antithetic perturbations ``theta +- std eps_i`` and
    ``theta`` itself (last). ``tell`` offers ``theta`` (its fitness and descriptor) to the
    archive and banks its descriptor; the perturbations' utilities are the centred ranks of
    their fitness, or of their novelty (mean distance to the ``k_novelty`` nearest banked
    descriptors); their search gradient moves ``theta`` through ``optimizer``. A new parent
    is drawn uniformly from the ``n_top`` elites of highest fitness (exploit) or novelty
    (explore); ``explore_exploit`` alternates the two (the paper's ME-ES explore-exploit),
    ``explore`` and ``exploit`` keep one. Before the archive holds an elite the ES continues
    from ``x0``.

    Besides the fitness, ``tell`` needs each candidate's descriptor (:attr:`extra_inputs`).

    Args:
        pop_size: candidates per generation: an even number of perturbations plus ``theta``,
            so odd, at least 3.
        archive: where elites live (any :class:`~evolax.qd.Archive`).
        mode: ``"explore_exploit"``, ``"explore"`` or ``"exploit"``.
        init_std: the perturbations' std (the paper: 0.02), positive.
        optimizer: optax transformation for ``theta`` (the paper: Adam, 0.01).
        steps_per_parent: ES steps before a new parent (the paper: 10).
        n_top: how many of the best (by fitness or novelty) elites a parent is drawn from.
        k_novelty: neighbours in the novelty measure (the paper: 10).
        bank_size: descriptors kept for novelty (the oldest are overwritten).
    """

    extra_inputs: ClassVar[tuple[str, ...]] = ("descriptors",)

    summary_metrics: ClassVar[tuple[str, ...]] = QD_SUMMARY
    pop_size: int = eqx.field(static=True)
    archive: Archive
    mode: str = eqx.field(static=True, default="explore_exploit")
    init_std: float = 0.02
    optimizer: optax.GradientTransformation = optimizer_field(optax.adam, 0.01)
    steps_per_parent: int = eqx.field(static=True, default=10)
    n_top: int = eqx.field(static=True, default=10)
    k_novelty: int = eqx.field(static=True, default=10)
    bank_size: int = eqx.field(static=True, default=10_000)

    def __check_init__(self):
        if isinstance(self.pop_size, int) and (self.pop_size < 3 or self.pop_size % 2 == 0):
            raise ValueError(
                f"pop_size must be odd and at least 3 (pairs of perturbations and the search "
                f"point), got {self.pop_size}"
            )
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        check_positive("init_std", self.init_std)
        for name in ("steps_per_parent", "n_top", "k_novelty", "bank_size"):
            check_positive_int(name, getattr(self, name))

    def _init(self, key, x0):
        del key
        return MEESState(
            archive=self.archive.init(x0),
            mean=x0,
            opt_state=self.optimizer.init(x0),
            bank=jnp.zeros((self.bank_size, self.archive.n_desc), x0.dtype),
            banked=jnp.zeros([], jnp.int32),
            steps=jnp.zeros([], jnp.int32),
            exploring=jnp.asarray(self.mode == "explore"),
        )

    def _ask(self, key, state):
        half = (self.pop_size - 1) // 2
        eps = normal(key, (half, state.mean.shape[0]), state.mean)
        x = state.mean[None] + self.init_std * jnp.concatenate([eps, -eps])
        return jnp.concatenate([x, state.mean[None]]), state

    def _novelty(self, bank, banked, descriptors):
        valid = jnp.arange(self.bank_size) < banked
        k = min(self.k_novelty, self.bank_size)
        distance = knn_distance(bank, valid, descriptors, k)
        return jnp.where(jnp.isfinite(distance), distance, 0.0)  # an empty bank: all equal

    def outputs(self, state):
        return archive_output(self.archive, state.archive)

    def _tell(self, key, state, x, fitness, descriptors):
        descriptors = self.archive.check_descriptors(descriptors, self.pop_size)
        descriptors = descriptors.astype(state.bank.dtype)
        archive, added = self.archive.add(state.archive, x[-1:], fitness[-1:], descriptors[-1:])
        novelty = self._novelty(state.bank, state.banked, descriptors[:-1])
        score = jnp.where(state.exploring, novelty, fitness[:-1])
        utilities = centered_rank(jnp.where(jnp.isfinite(score), score, -jnp.inf))
        half = (self.pop_size - 1) // 2
        eps = (x[:half] - state.mean[None]) / self.init_std
        gradient = jnp.dot(utilities[:half] - utilities[half:], eps, precision=HIGHEST) / (
            2 * half * self.init_std
        )
        updates, opt_state = self.optimizer.update(-gradient, state.opt_state, state.mean)
        mean = optax.apply_updates(state.mean, updates)
        bank = state.bank.at[state.banked % self.bank_size].set(descriptors[-1])
        banked = state.banked + 1
        steps = state.steps + 1

        # a new parent every steps_per_parent steps, from the best elites by the next mode
        due = (steps >= self.steps_per_parent) & jnp.any(archive.occupied)
        exploring = state.exploring
        if self.mode == "explore_exploit":
            exploring = jnp.where(due, ~exploring, exploring)

        def pick_parent(_):  # every steps_per_parent steps only: novelty of every elite
            cell_novelty = self._novelty(bank, banked, archive.descriptors)
            merit = jnp.where(exploring, cell_novelty, archive.fitness)
            merit = jnp.where(archive.occupied, merit, -jnp.inf)
            top_merit, top_cells = jax.lax.top_k(merit, min(self.n_top, self.archive.n_cells))
            logits = jnp.where(top_merit > -jnp.inf, 0.0, -jnp.inf)
            return archive.genomes[top_cells[jax.random.categorical(key, logits)]]

        start = jax.lax.cond(due, pick_parent, lambda _: mean, None)
        new = state.replace(
            archive=archive,
            mean=start,
            opt_state=jax.tree.map(
                lambda fresh, old: jnp.where(due, fresh, old),
                self.optimizer.init(mean),
                opt_state,
            ),
            bank=bank,
            banked=banked,
            steps=jnp.where(due, 0, steps),
            exploring=exploring,
        )
        return new, self.archive.metrics(archive) | {
            "archive_insertions": jnp.sum(added.status > 0).astype(jnp.float32),
            "exploring": state.exploring.astype(jnp.float32),
            "novelty_mean": jnp.mean(novelty),
        }
