"""Sep-CMA-ES: CMA-ES with a diagonal covariance matrix (Ros & Hansen, 2008)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Bool, Float, Int

from evolax.algorithms.base import (
    Algorithm,
    check_fitness,
    flatten_population,
    unflatten_population,
)
from evolax.algorithms.cma_es import (
    HIGHEST,
    CMAParameters,
    FitnessHistory,
    cma_parameters,
    h_sigma_and_paths,
    history_criteria,
    init_history,
    update_history,
)
from evolax.algorithms.noise import gaussian
from evolax.algorithms.shaping import sanitize_fitness
from evolax.types import Fitness, Metrics, Params, Population, PRNGKey
from evolax.validation import check_positive, check_positive_int


@chex.dataclass(frozen=True)
class SepCMAESState:
    """Sep-CMA-ES state: the search distribution ``N(mean, sigma^2 diag(cov_diag))``.

    Attributes:
        mean: the mean, a genome pytree (what :meth:`SepCMAES.best` returns).
        sigma: the step size, ``f32[]``.
        cov_diag: the diagonal of ``C``, ``f32[D]``.
        p_sigma: conjugate evolution path, ``f32[D]``.
        p_c: evolution path of ``C``, ``f32[D]``.
        generation: number of generations told.
        history: recent fitness for :meth:`SepCMAES.should_stop`.
    """

    mean: Params
    sigma: Float[Array, ""]
    cov_diag: Float[Array, " dim"]
    p_sigma: Float[Array, " dim"]
    p_c: Float[Array, " dim"]
    generation: Int[Array, ""]
    history: FitnessHistory


class SepCMAES(Algorithm):
    """Separable CMA-ES (Ros & Hansen, 2008, "A Simple Modification in CMA-ES Achieving Linear
    Time and Space Complexity").

    CMA-ES (Hansen, 2016, appendix A) restricted to a diagonal ``C``: ``B = I``, so sampling,
    the paths and the update ``C_ii <- (1 + c1 delta(h_sigma) - c1 - c_mu) C_ii + c1 p_c,i^2 +
    c_mu sum_i w_i y_i,i^2`` cost ``O(n)`` per individual. The covariance learning rates
    ``c1, c_mu`` of the tutorial are multiplied by ``(n + 2) / 3`` (Ros & Hansen, 2008,
    section 2.1); as in that paper, only the ``mu`` best get (positive) weights. NaN fitness
    ranks last (weight 0).

    Args:
        pop_size: ``lambda``, at least 2.
        init_std: the initial step size ``sigma_0``, positive.
        tol_x: TolX of :meth:`should_stop`; ``None`` means ``1e-12 * init_std``.
        tol_fun: TolFun of :meth:`should_stop`.
        tol_condition: :meth:`should_stop` fires when ``max C_ii / min C_ii`` exceeds this.
    """

    pop_size: int = eqx.field(static=True)
    init_std: float = 1.0
    tol_x: float | None = None
    tol_fun: float = 1e-12
    tol_condition: float = 1e14

    def __check_init__(self):
        check_positive_int("pop_size", self.pop_size)
        if self.pop_size < 2:
            raise ValueError(f"pop_size must be at least 2 to rank samples, got {self.pop_size}")
        check_positive("init_std", self.init_std)
        if self.tol_x is not None:
            check_positive("tol_x", self.tol_x)
        check_positive("tol_fun", self.tol_fun)
        check_positive("tol_condition", self.tol_condition)

    def parameters(self, dim: int) -> CMAParameters:
        """The strategy parameters for dimension ``dim`` (no negative weights)."""
        return cma_parameters(dim, self.pop_size, active=False, separable=True)

    def init(self, key: PRNGKey, x0: Params) -> SepCMAESState:
        del key
        flat, _ = ravel_pytree(x0)
        dim = flat.shape[0]
        return SepCMAESState(
            mean=jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), x0),
            sigma=jnp.asarray(self.init_std, jnp.float32),
            cov_diag=jnp.ones(dim, jnp.float32),
            p_sigma=jnp.zeros(dim, jnp.float32),
            p_c=jnp.zeros(dim, jnp.float32),
            generation=jnp.asarray(0, jnp.int32),
            history=init_history(dim, self.pop_size),
        )

    def ask(self, key: PRNGKey, state: SepCMAESState) -> tuple[Population, SepCMAESState]:
        mean, _ = ravel_pytree(state.mean)
        z = gaussian(key, (self.pop_size, mean.shape[0]))
        std = state.sigma * jnp.sqrt(state.cov_diag)
        return unflatten_population(mean[None] + std[None] * z, state.mean), state

    def tell(
        self, state: SepCMAESState, population: Population, fitness: Fitness
    ) -> tuple[SepCMAESState, Metrics]:
        fitness = check_fitness(fitness, self.pop_size)
        mean, unravel = ravel_pytree(state.mean)
        p = self.parameters(mean.shape[0])
        fitness = sanitize_fitness(fitness)
        order = jnp.argsort(-fitness, stable=True)
        sorted_fitness = fitness[order]
        # only the mu best have (positive) weights: read just their rows
        weights = jnp.asarray(p.weights[: p.mu], jnp.float32)
        y = (flatten_population(population)[order[: p.mu]] - mean[None]) / state.sigma
        d = jnp.sqrt(state.cov_diag)
        step = jnp.dot(weights, y, precision=HIGHEST)
        generation = state.generation + 1
        p_sigma, ps_norm, h_sigma, p_c = h_sigma_and_paths(
            p, state.p_sigma, state.p_c, step / d, step, generation
        )
        new_mean = mean + state.sigma * step
        sigma = state.sigma * jnp.exp(p.c_sigma / p.d_sigma * (ps_norm / p.chi_n - 1))
        delta_h = (1 - h_sigma) * p.c_c * (2 - p.c_c)
        decay = 1 + p.c1 * delta_h - p.c1 - p.c_mu  # sum of the weights is 1
        rank_mu = jnp.dot(weights, y**2, precision=HIGHEST)
        cov_diag = decay * state.cov_diag + p.c1 * p_c**2 + p.c_mu * rank_mu
        cov_diag = jnp.maximum(cov_diag, jnp.max(cov_diag) * 1e-20)

        new_state = SepCMAESState(
            mean=unravel(new_mean),
            sigma=sigma,
            cov_diag=cov_diag,
            p_sigma=p_sigma,
            p_c=p_c,
            generation=generation,
            history=update_history(state.history, sorted_fitness, state.generation),
        )
        metrics = {
            "sigma": sigma,
            "axis_ratio": jnp.sqrt(jnp.max(cov_diag) / jnp.min(cov_diag)),
            "h_sigma": h_sigma,
            "best_fitness": sorted_fitness[0],
        }
        return new_state, metrics

    def best(self, state: SepCMAESState) -> Params:
        return state.mean

    def termination_criteria(self, state: SepCMAESState) -> dict[str, Bool[Array, ""]]:
        """The criteria of :meth:`evolax.algorithms.cma_es.CMAES.termination_criteria` for a
        diagonal ``C`` (its principal axes are the coordinates)."""
        mean, _ = ravel_pytree(state.mean)
        tol_x = 1e-12 * self.init_std if self.tol_x is None else self.tol_x
        std = state.sigma * jnp.sqrt(state.cov_diag)
        c_max, c_min = jnp.max(state.cov_diag), jnp.min(state.cov_diag)
        criteria = {
            "tolx": jnp.all(std < tol_x) & jnp.all(state.sigma * jnp.abs(state.p_c) < tol_x),
            "noeffectaxis": jnp.any(mean + 0.1 * std == mean),
            "noeffectcoord": jnp.any(mean + 0.2 * std == mean),
            "conditioncov": c_max / c_min > self.tol_condition,
            "tolupsigma": state.sigma / self.init_std > 1e20 * jnp.sqrt(c_max),
        }
        criteria.update(
            history_criteria(
                state.history, state.generation, self.tol_fun, mean.shape[0], self.pop_size
            )
        )
        return criteria

    def should_stop(self, state: SepCMAESState) -> Bool[Array, ""]:
        """Whether any of :meth:`termination_criteria` fires (jittable)."""
        criteria = self.termination_criteria(state)
        return jnp.any(jnp.stack(list(criteria.values())))
