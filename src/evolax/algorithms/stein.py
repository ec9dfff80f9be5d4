"""Stein variational evolution strategies: several search distributions ("particles") coupled
by an SVGD kernel on their means (Braun, Lange & Toussaint, 2024, "Stein Variational
Evolution Strategies"), the base of :class:`~evolax.algorithms.cma.sv_cma_es.SVCMAES` and
:class:`~evolax.algorithms.es.sv_open_es.SVOpenES`.

Particle ``i`` is one evolution strategy (its state has a leading particle axis) with mean
``m_i``. An RBF kernel ``k(x, y) = exp(-|x - y|^2 / (2 h^2))`` couples the means as in SVGD
(Liu & Wang, 2016, eq. 8): :func:`repulsion` pushes them apart, :func:`kernel_average` smooths
an ascent direction over the particles.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Bool, Float

from evolax.algorithms.arguments import check_call
from evolax.algorithms.base import HIGHEST, DistributionAlgorithm, S, State, normal
from evolax.compiled import compiled
from evolax.types import Metrics, Params
from evolax.validation import check_non_negative, check_positive, check_positive_int

TEMPLATE_FIELDS = frozenset(field.name for field in dataclasses.fields(State))
"""The fields :meth:`~evolax.algorithms.base.Algorithm.tell` keeps (not per particle)."""


def rbf_kernel(
    means: Float[Array, "n dim"], kernel_std: float | Float[Array, ""]
) -> Float[Array, "n n"]:
    """``K_ij = exp(-|m_i - m_j|^2 / (2 h^2))`` from the Gram matrix of the centred means (the
    kernel sees only differences; centring keeps the products accurate in float32)."""
    centred = means - jnp.mean(means, axis=0, keepdims=True)
    gram = jnp.dot(centred, centred.T, precision=HIGHEST)
    norms = jnp.diagonal(gram)
    squared = jnp.maximum(norms[:, None] + norms[None, :] - 2.0 * gram, 0.0)
    return jnp.exp(-0.5 * squared / kernel_std**2)


def repulsion(
    means: Float[Array, "n dim"], kernel_std: float | Float[Array, ""]
) -> Float[Array, "n dim"]:
    """SVGD's repulsive force on each mean: ``(1/n) sum_j grad_{m_j} k(m_j, m_i) = (1/n)
    sum_j k_ij (m_i - m_j) / h^2``."""
    kernel = rbf_kernel(means, kernel_std)
    centred = means - jnp.mean(means, axis=0, keepdims=True)
    pull = jnp.dot(kernel, centred, precision=HIGHEST)
    weight = jnp.sum(kernel, axis=1, keepdims=True)
    return (weight * centred - pull) / (means.shape[0] * kernel_std**2)


def kernel_average(
    means: Float[Array, "n dim"],
    ascents: Float[Array, "n dim"],
    kernel_std: float | Float[Array, ""],
) -> Float[Array, "n dim"]:
    """SVGD's driving force ``(1/n) sum_j k(m_j, m_i) g_j`` for the particles' ascent
    directions ``g_j`` (SVGD's scores ``grad log p(m_j)``)."""
    kernel = rbf_kernel(means, kernel_std)
    return jnp.dot(kernel, ascents, precision=HIGHEST) / means.shape[0]


def own_fields(state: State) -> dict[str, Any]:
    """A state's fields but the template's."""
    return {name: value for name, value in state.items() if name not in TEMPLATE_FIELDS}  # type: ignore[attr-defined]


class SteinES(DistributionAlgorithm[S]):
    """``n_particles`` copies of one evolution strategy (:meth:`particle_strategy`), each with
    ``pop_size / n_particles`` samples per generation, coupled through their means.

    The population is laid out by particle: rows ``i lam .. (i + 1) lam - 1`` are particle
    ``i``'s samples. Particle 0 starts at ``x0`` (so the start point is never lost), the
    others at ``x0 + init_spread N(0, I)`` (identical means would feel no repulsion). A
    particle whose samples all have a non-finite fitness skips the generation (as the
    template skips a generation without a finite fitness); the others update.

    :meth:`best` returns the mean of the particle whose last generation had the best median
    fitness: a mean is never evaluated, and the median of its samples is the estimate of its
    worth that one outlier (or a few failed samples) cannot move. The state is the single
    strategy's with a leading particle axis on every field, plus ``particle_fitness``.
    """

    pop_size: eqx.AbstractVar[int]
    n_particles: eqx.AbstractVar[int]
    init_std: eqx.AbstractVar[float]
    init_spread: eqx.AbstractVar[float | None]
    kernel_std: eqx.AbstractVar[float]
    alpha: eqx.AbstractVar[float]
    state_type: ClassVar[type]
    """The state class, the particle strategy's with ``particle_fitness`` added."""
    particle_type: ClassVar[type]
    """The particle strategy's state class."""

    def __check_init__(self):
        check_positive_int("n_particles", self.n_particles)
        if isinstance(self.pop_size, int) and self.pop_size % self.n_particles:
            raise ValueError(
                f"pop_size must be a multiple of n_particles = {self.n_particles} (each "
                f"particle samples pop_size / n_particles), got {self.pop_size}"
            )
        if self.init_spread is not None:
            check_non_negative("init_spread", self.init_spread)
        check_positive("kernel_std", self.kernel_std)
        check_non_negative("alpha", self.alpha)

    @property
    def particle_pop_size(self) -> int:
        """Each particle's samples per generation, ``pop_size / n_particles``."""
        return self.pop_size // self.n_particles

    def _checked_particle_pop_size(self) -> int | None:
        """:attr:`particle_pop_size` for the subclasses' checks, ``None`` while ``pop_size``
        and ``n_particles`` are not valid (their own checks raise)."""
        sizes = (self.pop_size, self.n_particles)
        if all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in sizes):
            if self.pop_size % self.n_particles == 0:
                return self.particle_pop_size
        return None

    @property
    @abc.abstractmethod
    def particle_strategy(self) -> DistributionAlgorithm:
        """One particle's evolution strategy, with ``particle_pop_size`` samples."""

    def particles(self, state: S, state_type: type | None = None, **fields: Any) -> Any:
        """The particles' states, batched over particles: :attr:`particle_type`, or its
        subclass ``state_type`` with the extra ``fields``."""
        cls = self.particle_type if state_type is None else state_type
        names = {field.name for field in dataclasses.fields(cls)} - TEMPLATE_FIELDS - set(fields)
        return cls(**{name: getattr(state, name) for name in names}, **fields)

    def _init(self, key, x0):
        spread = self.init_std if self.init_spread is None else self.init_spread
        offsets = spread * normal(key, (self.n_particles, x0.shape[0]), x0)
        means = x0[None] + offsets.at[0].set(0.0)
        particles = jax.vmap(self.particle_strategy._init, in_axes=(None, 0))(key, means)
        return self.state_type(
            **own_fields(particles),
            particle_fitness=jnp.full(self.n_particles, -jnp.inf, x0.dtype),
        )

    def _ask(self, key, state):
        keys = jax.random.split(key, self.n_particles)
        x, _ = jax.vmap(self.particle_strategy._ask)(keys, self.particles(state))
        return x.reshape(self.pop_size, x.shape[-1]), state

    def _repulsion(self, state: S) -> Float[Array, "n dim"]:
        """The means' displacement by SVGD's repulsive force, ``alpha`` times
        :func:`repulsion`, ``[n, D]``."""
        return self.alpha * repulsion(state.mean, self.kernel_std)  # type: ignore[attr-defined]

    def _by_particle(
        self, x: Float[Array, "pop dim"], fitness: Float[Array, " pop"]
    ) -> tuple[Float[Array, "n lam dim"], Float[Array, "n lam"]]:
        """The population and its fitness split by particle (the layout of :meth:`_ask`)."""
        shape = (self.n_particles, self.particle_pop_size)
        return x.reshape(*shape, x.shape[-1]), fitness.reshape(shape)

    def _alive(self, fitness: Float[Array, " pop"]) -> Bool[Array, " n"]:
        """Whether each particle has a sample with a finite fitness (the others skip the
        generation), ``[n]``."""
        by_particle = fitness.reshape(self.n_particles, self.particle_pop_size)
        return jnp.any(by_particle > -jnp.inf, axis=1)

    def _update(
        self,
        state: S,
        told: Any,
        fitness: Float[Array, " pop"],
        metrics: Metrics,
        force: Float[Array, "n dim"],
    ) -> tuple[S, Metrics]:
        """The new state from the particles' ``told`` states (their skipped ones kept as in
        ``state``) and the metrics averaged over the particles, the norm of the repulsive
        ``force`` (:meth:`_repulsion`) on each among them."""
        metrics = {**metrics, "repulsion_norm": jnp.linalg.norm(force, axis=1)}
        by_particle = fitness.reshape(self.n_particles, self.particle_pop_size)
        alive = self._alive(fitness)

        def keep_failed(new, old):
            return jnp.where(alive.reshape(alive.shape + (1,) * (jnp.ndim(new) - 1)), new, old)

        old = own_fields(self.particles(state))
        fields = jax.tree.map(keep_failed, {name: getattr(told, name) for name in old}, old)
        particle_fitness = jnp.where(
            alive,
            jnp.median(by_particle, axis=1),
            state.particle_fitness,  # type: ignore[attr-defined]
        )
        metrics = {name: jnp.mean(value) for name, value in metrics.items()}
        return state.replace(**fields, particle_fitness=particle_fitness), metrics  # type: ignore[attr-defined]

    def _healthy(self, state):
        """Every particle's state is sound (the particle strategy's check)."""
        return jnp.all(jax.vmap(self.particle_strategy._healthy)(self.particles(state)))

    @compiled
    def best(self, state: S) -> Params:
        """The mean of the particle with the best median fitness in its last generation
        (particle 0, which starts at ``x0``, before any)."""
        check_call(f"{type(self).__name__}.best", "state", State, (), state=state)
        _, unravel = ravel_pytree(state.best_genome)
        top = jnp.argmax(state.particle_fitness)  # type: ignore[attr-defined]
        return unravel(state.mean[top])  # type: ignore[attr-defined]
