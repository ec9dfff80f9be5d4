"""SV-OpenES: Stein variational OpenAI-ES (after Braun, Lange & Toussaint, 2024)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Float

from evolax.algorithms.base import check_std_decay
from evolax.algorithms.es.open_es import OpenES, OpenESState
from evolax.algorithms.shaping import Shaping, centered_rank
from evolax.algorithms.stein import SteinES, kernel_average
from evolax.optim import optimizer_field
from evolax.validation import check_positive


@chex.dataclass(frozen=True, kw_only=True)
class SVOpenESState(OpenESState):
    """SV-OpenES state: the OpenES state of every particle, each field with a leading
    particle axis (``mean``: ``[n, D]``, ``std``: ``[n]``, the optimizer's state batched).

    Attributes:
        particle_fitness: the median fitness of each particle's last told samples, ``[n]``
            (``-inf`` before the first).
    """

    particle_fitness: Float[Array, " n"]


@chex.dataclass(frozen=True, kw_only=True)
class _GradientState(OpenESState):
    """One particle's OpenES state and its search gradient ``ascent``."""

    ascent: Float[Array, " dim"]


class _ParticleOpenES(OpenES):
    """One particle's OpenES whose ``_tell`` stops before the optimizer: it records the search
    gradient as ``ascent`` (and decays ``std``); :meth:`follow` takes the optimizer's step."""

    def _ascend(self, state, ascent):
        return dict(ascent=ascent)

    def follow(self, state: OpenESState, ascent: Float[Array, " dim"]) -> OpenESState:
        """``state`` after the optimizer's step along ``ascent``."""
        return state.replace(**super()._ascend(state, ascent))  # type: ignore[attr-defined]


class SVOpenES(SteinES[SVOpenESState]):
    """Stein variational OpenAI-ES: SVGD (Liu & Wang, 2016) with OpenES's search gradients as
    the scores (as Liu et al.'s 2017 Stein variational policy gradient uses policy gradients),
    the OpenES member of Braun, Lange & Toussaint's Stein variational ES (2024, "Stein
    Variational Evolution Strategies", arXiv:2410.10390; UAI 2025).

    ``n_particles`` OpenES (:class:`~evolax.algorithms.es.open_es.OpenES`, ``pop_size /
    n_particles`` samples each) estimate their search gradients ``g_i``; each mean then
    follows, with its own optimizer state, the SVGD direction

    ``phi_i = (1/n) sum_j [k(m_j, m_i) g_j + alpha grad_{m_j} k(m_j, m_i)]``

    (:func:`~evolax.algorithms.stein.kernel_average` plus ``alpha`` times
    :func:`~evolax.algorithms.stein.repulsion`, an RBF kernel of width ``kernel_std``). A
    particle without a finite fitness contributes ``g_i = 0``. This is evosax's
    ``SV_Open_ES`` update. See :class:`~evolax.algorithms.stein.SteinES` for the layout, the
    start and :meth:`best`.

    Args:
        pop_size: total samples per generation, a multiple of ``n_particles`` (``pop_size /
            n_particles`` even when ``antithetic``).
        n_particles: the number of OpenES ``n`` (no default in the paper or evosax; 2 lets
            any multiple of 4 run antithetic).
        init_std: each particle's initial noise standard deviation, positive (OpenES's 0.1).
        init_spread: spread of the initial means around ``x0`` (``>= 0``); ``None`` uses
            ``init_std``.
        kernel_std: the RBF kernel's width ``h``, positive (evosax's default 1).
        alpha: the weight of the repulsive force, ``>= 0`` (evosax's default 1).
        optimizer: optax transformation for each mean (default ``optax.adam(0.01)``, OpenES's);
            it receives ``-phi_i``, like a loss gradient.
        std_decay: factor applied to ``std`` after each update, in ``(0, 1]``.
        std_min: floor of ``std``, ``>= 0``.
        antithetic: each particle samples mirrored pairs.
        fitness_shaping: ``(fitness, x) -> utilities``, applied to each particle's samples.
    """

    pop_size: int = eqx.field(static=True)
    n_particles: int = eqx.field(static=True, default=2)
    init_std: float = 0.1
    init_spread: float | None = None
    kernel_std: float = 1.0
    alpha: float = 1.0
    optimizer: optax.GradientTransformation = optimizer_field(optax.adam, 0.01)
    std_decay: float = 1.0
    std_min: float = 0.0
    antithetic: bool = eqx.field(static=True, default=True)
    fitness_shaping: Shaping = eqx.field(static=True, default=centered_rank)
    state_type = SVOpenESState
    particle_type = OpenESState

    def __check_init__(self):
        per_particle = self._checked_particle_pop_size()
        if self.antithetic and per_particle is not None and per_particle % 2:
            raise ValueError(
                f"pop_size / n_particles must be even for antithetic sampling, got "
                f"{self.pop_size} / {self.n_particles} (or use antithetic=False)"
            )
        check_positive("init_std", self.init_std)
        check_std_decay(self.std_decay, self.std_min)

    @property
    def particle_strategy(self) -> _ParticleOpenES:
        return _ParticleOpenES(
            pop_size=self.particle_pop_size,
            optimizer=self.optimizer,
            init_std=self.init_std,
            std_decay=self.std_decay,
            std_min=self.std_min,
            antithetic=self.antithetic,
            fitness_shaping=self.fitness_shaping,
        )

    def _tell(self, key, state, x, fitness):
        es = self.particle_strategy
        particles = self.particles(state, _GradientState, ascent=jnp.zeros_like(state.mean))
        told, metrics = jax.vmap(lambda particle, samples, f: es._tell(key, particle, samples, f))(
            particles, *self._by_particle(x, fitness)
        )
        grads = jnp.where(self._alive(fitness)[:, None], told.ascent, 0.0)
        force = self._repulsion(state)
        direction = kernel_average(state.mean, grads, self.kernel_std) + force
        told = jax.vmap(es.follow)(told, direction)
        return self._update(state, told, fitness, metrics, force)
