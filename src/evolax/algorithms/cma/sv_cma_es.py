"""SV-CMA-ES: Stein variational CMA-ES (Braun, Lange & Toussaint, 2024)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax
from jaxtyping import Array, Float

from evolax.algorithms.cma.cma_es import CMAES, CMAESState
from evolax.algorithms.stein import SteinES
from evolax.validation import check_positive


@chex.dataclass(frozen=True, kw_only=True)
class SVCMAESState(CMAESState):
    """SV-CMA-ES state: the CMA-ES state of every particle, each field with a leading particle
    axis (``mean``: ``[n, D]``, ``std``: ``[n]``, ``cov``: ``[n, D, D]``, ...).

    Attributes:
        particle_fitness: the median fitness of each particle's last told samples, ``[n]``
            (``-inf`` before the first).
    """

    particle_fitness: Float[Array, " n"]


@chex.dataclass(frozen=True, kw_only=True)
class _ShiftedState(CMAESState):
    """One particle's CMA-ES state and its SVGD step ``shift`` (in units of ``std``)."""

    shift: Float[Array, " dim"]


class _ParticleCMAES(CMAES):
    """One particle's CMA-ES, told its samples translated by ``std * shift``: its weighted
    step ``<y>_w + shift`` moves the mean and feeds both paths; its covariance sees the
    untranslated steps ``y``."""

    def _covariance(self, state, p, y, weights, p_c, h_sigma, generation):
        return super()._covariance(
            state, p, y - state.shift[None], weights, p_c, h_sigma, generation
        )


class SVCMAES(SteinES[SVCMAESState]):
    """Stein variational CMA-ES (Braun, Lange & Toussaint, 2024, "Stein Variational Evolution
    Strategies", arXiv:2410.10390; UAI 2025).

    ``n_particles`` CMA-ES (:class:`~evolax.algorithms.cma.cma_es.CMAES`, pycma's defaults for
    ``pop_size / n_particles`` samples) run side by side, coupled by SVGD's repulsive force on
    their means (:func:`~evolax.algorithms.stein.repulsion`, an RBF kernel of width
    ``kernel_std``): particle ``i``'s step is

    ``<y>_w,i + alpha / std_i (1/n) sum_j grad_{m_j} k(m_j, m_i)``,

    the mean moves by ``std_i`` times it, and the paths ``p_sigma``, ``p_c`` accumulate it;
    the covariance learns from the samples alone. Each particle's recombination, paths,
    step size and covariance are CMA-ES's own. With ``alpha = 0`` the particles are
    independent CMA-ES. (This is the update of evosax's ``SV_CMA_ES``, in 0.3.2 as in its
    first, pre-0.3 version, with pycma's rather than the tutorial's CMA-ES constants.) See
    :class:`~evolax.algorithms.stein.SteinES` for the layout, the start and :meth:`best`.

    Args:
        pop_size: total samples per generation, a multiple of ``n_particles`` with at least 2
            per particle.
        n_particles: the number of CMA-ES ``n`` (no default in the paper or evosax; 2 lets
            any even ``pop_size`` run).
        init_std: each particle's initial step size ``sigma_0``, positive.
        init_spread: spread of the initial means around ``x0`` (``>= 0``); ``None`` uses
            ``init_std``.
        kernel_std: the RBF kernel's width ``h``, positive (evosax's default 1).
        alpha: the weight of the repulsive force, ``>= 0`` (evosax's default 1).
        active: negative weights for each particle's worse half (active CMA).
        eigen_interval: generations between eigendecompositions; ``None`` for pycma's.
    """

    pop_size: int = eqx.field(static=True)
    n_particles: int = eqx.field(static=True, default=2)
    init_std: float = 1.0
    init_spread: float | None = None
    kernel_std: float = 1.0
    alpha: float = 1.0
    active: bool = eqx.field(static=True, default=True)
    eigen_interval: int | None = eqx.field(static=True, default=None)
    state_type = SVCMAESState
    particle_type = CMAESState

    def __check_init__(self):
        per_particle = self._checked_particle_pop_size()
        if per_particle is not None and per_particle < 2:
            raise ValueError(
                f"pop_size / n_particles must be at least 2 to rank each particle's samples, "
                f"got {self.pop_size} / {self.n_particles}"
            )
        check_positive("init_std", self.init_std)

    @property
    def particle_strategy(self) -> _ParticleCMAES:
        return _ParticleCMAES(
            pop_size=self.particle_pop_size,
            init_std=self.init_std,
            active=self.active,
            eigen_interval=self.eigen_interval,
        )

    def _tell(self, key, state, x, fitness):
        cma = self.particle_strategy
        force = self._repulsion(state)
        shifted = self.particles(state, _ShiftedState, shift=force / state.std[:, None])

        def tell_particle(particle, samples, told_fitness):
            particle = particle.replace(generation=state.generation)
            return cma._tell(key, particle, samples + particle.std * particle.shift[None],
                             told_fitness)  # fmt: skip

        told, metrics = jax.vmap(tell_particle)(shifted, *self._by_particle(x, fitness))
        return self._update(state, told, fitness, metrics, force)
