"""Stochastic hill climbing: the elitist (1 + lambda) evolution strategy with a fixed step size
(Beyer & Schwefel, 2002)."""

from __future__ import annotations

import chex
import jax.numpy as jnp

from evolax.algorithms.base import DistributionAlgorithm, decayed_std, normal
from evolax.algorithms.baselines.common import ClimbState, DecayingStep, climb, climb_start


@chex.dataclass(frozen=True, kw_only=True)
class HillClimbingState(ClimbState):
    """HillClimbing state: the current point ``mean`` (``[D]``), the step size ``std``
    (``[]``) and the current point's ``fitness`` (``[]``, ``-inf`` until a generation is
    told: ``x0`` itself is never evaluated)."""


class HillClimbing(DecayingStep, DistributionAlgorithm[HillClimbingState]):
    """Stochastic (Gaussian) hill climbing: the (1 + lambda)-ES of Rechenberg and Schwefel
    without step-size adaptation (Beyer & Schwefel, 2002, "Evolution strategies - A
    comprehensive introduction", Natural Computing 1, 3-52); evosax's ``HillClimbing``.

    Each generation samples ``x_k = mean + std * N(0, I)``, ``k = 1..pop_size``, around the
    current point and moves to the fittest sample if it is strictly fitter than the current
    point (:func:`~evolax.algorithms.baselines.common.climb`); ``std`` then decays
    geometrically to ``std_min``. ``x0`` is not evaluated, so the first generation always
    moves to its best sample.

    A :class:`~evolax.algorithms.base.DistributionAlgorithm`: the state is a current point and
    a positive step size, and since the climb is elitist the current point is the fittest
    genome told so far, the solution to deploy (:meth:`best` returns it). The defaults are
    evosax's (``std = 1``, constant).

    Args:
        pop_size: samples per generation (``lambda``).
        init_std: the initial step size, positive.
        std_decay: factor applied to ``std`` after each generation, in ``(0, 1]``.
        std_min: floor of ``std``, ``>= 0``.
    """

    def __check_init__(self):
        self.check_step()

    def _init(self, key, x0):
        del key
        return HillClimbingState(**climb_start(x0, self.init_std))

    def _ask(self, key, state):
        z = normal(key, (self.pop_size, state.mean.shape[0]), state.mean)
        return state.mean[None] + state.std * z, state

    def _tell(self, key, state, x, fitness):
        del key
        mean, current, moved = climb(state.mean, state.fitness, x, fitness)
        std = decayed_std(state.std, self.std_decay, self.std_min)
        new_state = state.replace(mean=mean, std=std, fitness=current)
        return new_state, {"std": std, "moved": moved.astype(jnp.float32)}
