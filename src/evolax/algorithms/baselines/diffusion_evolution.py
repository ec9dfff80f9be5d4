"""Diffusion Evolution: evolution as the denoising of a diffusion model (Zhang, Hartl, Hazan &
Levin, 2025)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import HIGHEST, PopulationAlgorithm, PopulationState, normal
from evolax.types import PRNGKey
from evolax.validation import (
    check_in_interval,
    check_int_at_least,
    check_positive,
    check_positive_int,
)

SCHEDULES = ("cosine", "linear")


def alpha_schedule(name: str, n_generations: int) -> np.ndarray:
    """The ``T = n_generations`` levels ``alpha_T .. alpha_1`` of the authors' code
    (github.com/Zhangyanbo/diffusion-evolution, ``diffevo/ddim.py``), noisiest first, in
    float64: ``"cosine"`` is ``DDIMSchedulerCosine``, ``alpha = (cos(pi s) + 1) / 2`` from 0 to
    1 (the authors' experiments), ``"linear"`` is ``DDIMScheduler``, ``alpha`` linear from
    ``1e-8`` to ``1 - 1e-4``."""
    if name == "cosine":
        alphas = (np.cos(np.linspace(0.0, np.pi, n_generations)) + 1.0) / 2.0
    else:
        alphas = np.linspace(1.0 - 1e-4, 1e-8, n_generations)
    return alphas[::-1].copy()


def denoise(
    z: Float[Array, "pop dim"],
    latent: Float[Array, "pop latent"],
    log_fitness: Float[Array, " pop"],
    alpha: Float[Array, ""],
    alpha_next: Float[Array, ""],
    noise: float | Float[Array, ""],
    draws: Float[Array, "pop dim"],
) -> tuple[Float[Array, "pop dim"], Float[Array, "pop dim"]]:
    """One generation of Diffusion Evolution (the paper's algorithm 1) on the diffused
    population ``z`` (``x_t``), as the authors' ``BayesianGenerator`` with the uniform density.

    Each member's origin is estimated as ``x0_i = sum_j w_ij z_j / sum_j w_ij`` with ``w_ij =
    g(f_j) N(latent_i; sqrt(alpha) latent_j, (1 - alpha) I)`` (``log g = log_fitness``), then
    DDIM steps to ``alpha_next``: ``z_i <- sqrt(alpha_next) x0_i + sqrt(1 - alpha_next -
    s^2) eps_i + s draws_i`` with ``eps_i = (z_i - sqrt(alpha) x0_i) / sqrt(1 - alpha)`` and
    ``s = noise sqrt((1 - alpha_next) / (1 - alpha) (1 - alpha / alpha_next))``. The weights
    are the paper's, normalised in log space, so they never all underflow; the authors' code
    adds ``1e-9`` to each factor instead, which floors every weight near ``1e-9 g_j`` and
    pulls a member whose own weight is that small towards the fit ones.

    Returns:
        The next population and the estimated origins ``x0``.
    """
    # |l_i - c l_j|^2 through the Gram matrix: no [pop, pop, latent] array
    scale = jnp.sqrt(alpha)
    gram = jnp.dot(latent, latent.T, precision=HIGHEST)
    norms = jnp.diagonal(gram)
    squared = norms[:, None] - 2.0 * scale * gram + alpha * norms[None, :]
    log_w = log_fitness[None, :] - 0.5 * jnp.maximum(squared, 0.0) / (1.0 - alpha)
    weights = jax.nn.softmax(log_w, axis=1)
    origin = jnp.dot(weights, z, precision=HIGHEST)
    eps = (z - scale * origin) / jnp.sqrt(1.0 - alpha)
    std = noise * jnp.sqrt((1.0 - alpha_next) / (1.0 - alpha) * (1.0 - alpha / alpha_next))
    keep = jnp.sqrt(jnp.maximum(1.0 - alpha_next - std**2, 0.0))
    return jnp.sqrt(alpha_next) * origin + keep * eps + std * draws, origin


def energy(fitness: Float[Array, " pop"], temperature: float | Float[Array, ""]):
    """``log g(f) = (f - max f) / T``: the authors' ``Energy`` mapping ``exp(-E / T)`` of the
    energy ``E = -f`` (up to a constant); a non-finite fitness (``-inf``) weighs nothing, and
    with no finite fitness every member weighs the same."""
    told = fitness > -jnp.inf
    log_g = jnp.where(told, (fitness - jnp.max(fitness)) / temperature, -jnp.inf)
    return jnp.where(jnp.any(told), log_g, 0.0)


@chex.dataclass(frozen=True, kw_only=True)
class DiffusionEvolutionState(PopulationState):
    """Diffusion Evolution state: ``population`` is the last told generation (``[pop, D]``,
    the initial one before the first ``tell``), ``fitness`` its fitness (``-inf`` before).

    Attributes:
        origin: ``x0``, the centre of the diffusion space, ``[D]``.
        projection: the random projection to the latent space, ``[D, latent_dim]`` (unit
            columns), or ``None`` without latent diffusion.
        step: the number of generations told, ``i32[]`` (skipped ones not counted): the
            schedule's position.
    """

    origin: Float[Array, " dim"]
    projection: Float[Array, "dim latent"] | None
    step: Int[Array, ""]


class DiffusionEvolution(PopulationAlgorithm[DiffusionEvolutionState]):
    """Diffusion Evolution (Zhang, Hartl, Hazan & Levin, 2025, "Diffusion Models are
    Evolutionary Algorithms", ICLR; arXiv:2410.02543), as the authors' code runs it.

    The population is a diffusion model's sample, denoised from ``alpha_T ~ 0`` (noise) to
    ``alpha_1 = 1`` (the cosine schedule) over ``n_generations``: each generation
    (:func:`denoise`) estimates every member's noise-free origin as the average of the
    members, weighted by their fitness mapped to a probability (:func:`energy`, temperature
    ``temperature``) times how likely they diffuse to it, ``N(x_i; sqrt(alpha_t) x_j, (1 -
    alpha_t) I)``, and takes a DDIM step towards it with the fraction ``noise`` of DDPM's
    noise. Early on (wide kernels) every member moves to the population's fitness-weighted
    centre; later (narrow kernels) only to its fit neighbours', which keeps several optima.

    The diffusion runs in ``z = (x - x0) / init_std``: the first population is ``x0 + init_std
    N(0, I)`` (the authors' ``scaling * randn``, about ``x0``). With ``latent_dim``, the
    kernels compare members through a random projection onto ``latent_dim`` unit vectors
    (latent diffusion, the authors' ``RandomProjection``), while the origins average the
    members themselves. ``ask`` returns the first population, then each denoised one; after
    ``n_generations`` tells the schedule is spent and ``ask`` returns the last population
    again. :meth:`best` is the best genome ever told.

    Defaults: the authors' (``DiffEvo``: 100 steps, ``noise = 1``, ``scaling = 1``; their
    experiments' cosine schedule and, for maximisation, their ``exp((f - max f) / T)`` with
    ``T = 1``). evosax's are the same but for 128 steps and its cosine schedule, shrunk to
    ``[1e-3, 1 - 1e-3]``.

    Args:
        pop_size: number of members.
        n_generations: ``T``, the schedule's length (``T - 1`` denoising steps), at least 2.
        schedule: ``"cosine"`` or ``"linear"`` (:func:`alpha_schedule`).
        noise: the fraction of DDPM's noise in each step, in ``[0, 1]`` (0 is DDIM).
        temperature: ``T`` of the fitness mapping ``exp(f / T)``, positive, in fitness units.
        init_std: the initial population's std about ``x0``, which is also the unit of the
            diffusion space (the authors' ``scaling``), positive.
        latent_dim: the latent space's dimension, or ``None`` to diffuse the genomes.
    """

    pop_size: int = eqx.field(static=True)
    n_generations: int = eqx.field(static=True, default=100)
    schedule: str = eqx.field(static=True, default="cosine")
    noise: float = 1.0
    temperature: float = 1.0
    init_std: float = 1.0
    latent_dim: int | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        check_int_at_least("n_generations", self.n_generations, 2)
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        check_in_interval("noise", self.noise, 0.0, 1.0)
        check_positive("temperature", self.temperature)
        check_positive("init_std", self.init_std)
        if self.latent_dim is not None:
            check_positive_int("latent_dim", self.latent_dim)

    def alphas(self, dtype=jnp.float32) -> Float[Array, " T"]:
        """The schedule ``alpha_T .. alpha_1``, noisiest first (:func:`alpha_schedule`)."""
        return jnp.asarray(alpha_schedule(self.schedule, self.n_generations), dtype)

    def draws(self, key: PRNGKey, like: Float[Array, " dim"]) -> Float[Array, "pop dim"]:
        """The standard normal noise one :meth:`ask` adds, ``[pop, D]``, for genomes like
        ``like`` (its size and dtype)."""
        return normal(key, (self.pop_size, like.shape[0]), like)

    def _init(self, key, x0):
        start_key, projection_key = jax.random.split(key)
        population = x0[None] + self.init_std * self.draws(start_key, x0)
        projection = None
        if self.latent_dim is not None:
            projection = normal(projection_key, (x0.shape[0], self.latent_dim), x0)
            projection = projection / jnp.linalg.norm(projection, axis=0, keepdims=True)
        return DiffusionEvolutionState(
            population=population,
            fitness=jnp.full(self.pop_size, -jnp.inf, x0.dtype),
            origin=x0,
            projection=projection,
            step=jnp.zeros([], jnp.int32),
        )

    def _ask(self, key, state):
        z = (state.population - state.origin[None]) / self.init_std
        latent = z if state.projection is None else jnp.dot(z, state.projection, precision=HIGHEST)
        alphas = self.alphas(z.dtype)
        last = self.n_generations - 1
        alpha = alphas[jnp.clip(state.step - 1, 0, last - 1)]
        alpha_next = alphas[jnp.clip(state.step, 1, last)]
        denoised, _ = denoise(
            z,
            latent,
            energy(state.fitness, self.temperature),
            alpha,
            alpha_next,
            self.noise,
            self.draws(key, state.origin),
        )
        moving = (state.step >= 1) & (state.step <= last)  # the first and the spent ask stay
        x = jnp.where(moving, state.origin[None] + self.init_std * denoised, state.population)
        return x, state

    def _tell(self, key, state, x, fitness):
        del key
        alphas = self.alphas(x.dtype)
        new_state = state.replace(population=x, fitness=fitness, step=state.step + 1)
        return new_state, {"alpha": alphas[jnp.minimum(state.step, self.n_generations - 1)]}
