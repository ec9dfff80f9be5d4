"""Simulated annealing: Metropolis acceptance under a cooling temperature (Kirkpatrick, Gelatt &
Vecchi, 1983)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from evolax.algorithms.base import (
    PopulationAlgorithm,
    PopulationState,
    decayed_std,
    normal,
)
from evolax.algorithms.baselines.common import DecayingStep
from evolax.validation import check_in_interval, check_non_negative, check_positive


@chex.dataclass(frozen=True, kw_only=True)
class SimulatedAnnealingState(PopulationState):
    """SimulatedAnnealing state: a one-member population, the chain's current point.
    ``population`` holds it (``[1, D]``, ``x0`` until a generation is told) and ``fitness``
    its fitness (``[1]``, ``-inf`` until then: ``x0`` itself is never evaluated).

    Attributes:
        std: the proposals' step size, ``[]``.
        temperature: the current temperature ``T``, ``[]``.
    """

    std: Float[Array, ""]
    temperature: Float[Array, ""]


def metropolis(
    delta: Float[Array, ""], temperature: Float[Array, ""], uniform: Float[Array, ""]
) -> Bool[Array, ""]:
    """The Metropolis criterion for a fitness change ``delta`` (maximised: ``delta < 0`` is
    worse): accept if ``delta >= 0``, else with probability ``exp(delta / T)``, i.e. if the
    uniform ``[0, 1)`` draw ``uniform`` is below it (``T = 0`` accepts no worse move)."""
    return (delta >= 0) | (uniform < jnp.exp(delta / temperature))


class SimulatedAnnealing(DecayingStep, PopulationAlgorithm[SimulatedAnnealingState]):
    """Simulated annealing (Kirkpatrick, Gelatt & Vecchi, 1983, "Optimization by Simulated
    Annealing", Science 220, 671-680) with Gaussian proposals, as evosax's
    ``SimulatedAnnealing``.

    Each generation samples ``pop_size`` proposals ``x_k = current + std * N(0, I)``; the
    fittest of them replaces the current point by the Metropolis criterion
    (:func:`metropolis`): always if it is not worse, else with probability
    ``exp(delta / T)``, where ``delta < 0`` is its fitness minus the current point's (the
    paper's ``exp(-dE / k_B T)``, with ``k_B`` folded into ``T``). The uniform draw comes from
    ``tell``'s key (``jax.random.uniform(key)``, evosax's draw). Then ``T`` cools
    geometrically to ``temperature_min`` and ``std`` decays to ``std_min``. With
    ``pop_size = 1`` this is the paper's single-proposal chain; more proposals make each move
    greedier. ``x0`` is not evaluated, so the first generation always moves.

    A :class:`~evolax.algorithms.base.PopulationAlgorithm`: the chain accepts worse points,
    so its current point is not the solution to deploy; :meth:`best` is the best genome ever
    told. The temperature is in fitness units; the defaults are evosax's (``T_0 = 1``,
    decay ``0.999``, floor ``0.1``, times its Boltzmann constant 5; ``std = 1``, constant).

    Args:
        pop_size: proposals per generation.
        init_std: the initial step size of the proposals, positive.
        std_decay: factor applied to ``std`` after each generation, in ``(0, 1]``.
        std_min: floor of ``std``, ``>= 0``.
        init_temperature: the initial temperature ``T_0`` (in fitness units), positive.
        temperature_decay: factor applied to ``T`` after each generation, in ``(0, 1]``.
        temperature_min: floor of ``T``, ``>= 0``.
    """

    init_temperature: float = 5.0
    temperature_decay: float = 0.999
    temperature_min: float = 0.5

    def __check_init__(self):
        self.check_step()
        check_positive("init_temperature", self.init_temperature)
        check_in_interval("temperature_decay", self.temperature_decay, 0, 1, low_open=True)
        check_non_negative("temperature_min", self.temperature_min)

    def _init(self, key, x0):
        del key
        return SimulatedAnnealingState(
            population=x0[None],
            fitness=jnp.full(1, -jnp.inf, x0.dtype),
            std=jnp.asarray(self.init_std, x0.dtype),
            temperature=jnp.asarray(self.init_temperature, x0.dtype),
        )

    def _ask(self, key, state):
        z = normal(key, (self.pop_size, state.population.shape[1]), state.population)
        return state.population + state.std * z, state

    def _tell(self, key, state, x, fitness):
        top = jnp.argmax(fitness)
        delta = fitness[top] - state.fitness[0]
        uniform = jax.random.uniform(key, (), fitness.dtype)
        accept = metropolis(delta, state.temperature, uniform)
        temperature = jnp.maximum(state.temperature * self.temperature_decay, self.temperature_min)
        std = decayed_std(state.std, self.std_decay, self.std_min)
        new_state = state.replace(
            population=jnp.where(accept, x[top][None], state.population),
            fitness=jnp.where(accept, fitness[top][None], state.fitness),
            std=std,
            temperature=temperature,
        )
        metrics = {"temperature": temperature, "std": std, "accepted": accept.astype(jnp.float32)}
        return new_state, metrics
