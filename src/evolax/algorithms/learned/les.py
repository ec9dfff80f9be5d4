"""LES: the learned evolution strategy of Lange et al. (2023), "Discovering Evolution Strategies
via Meta-Black-Box Optimization" (ICLR 2023)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.algorithms.base import (
    HIGHEST,
    DistributionAlgorithm,
    DistributionState,
    check_min_pop_size,
    normal,
)
from evolax.algorithms.learned.common import (
    Learned,
    Weights,
    dense,
    dense_shapes,
    fitness_features,
    in_dtype,
)

PATH_TIMESCALES = (0.1, 0.5, 0.9)
"""The evolution paths' learning rates ``c``: ``p <- (1 - c) p + c * step``."""

TIME_SCALES = (1, 3, 10, 30, 50, 100, 250, 500, 750, 1000, 1250, 1500, 2000)
"""The generation embedding ``tanh(g / T - 1)`` for each ``T`` (Metz et al., 2022)."""

ATTENTION_DIM = 8
HIDDEN = 8

LES_SHAPES: dict[str, tuple] = {
    **dense_shapes("recombination.key", 3, ATTENTION_DIM),
    **dense_shapes("recombination.query", 3, ATTENTION_DIM),
    **dense_shapes("recombination.value", 3, 1),
    **dense_shapes("lr.hidden", 2 * len(PATH_TIMESCALES) + len(TIME_SCALES), HIDDEN),
    **dense_shapes("lr.mean", HIDDEN, 1),
    **dense_shapes("lr.std", HIDDEN, 1),
}
"""The names and shapes of LES's network parameters (246 numbers)."""


@chex.dataclass(frozen=True, kw_only=True)
class LESState(DistributionState):
    """LES state: the diagonal Gaussian ``N(mean, diag(std^2))`` (``std``: ``[D]``) and its
    evolution paths.

    Attributes:
        path_mean: the weighted steps' paths ``[D, 3]``, one column per timescale.
        path_std: the weighted normalised steps' paths ``[D, 3]``.
    """

    path_mean: Float[Array, "dim 3"]
    path_std: Float[Array, "dim 3"]


def recombination_weights(params: Weights, features: Float[Array, "pop 3"]) -> Float[Array, " pop"]:
    """The self-attention layer's recombination weights, ``[pop]`` summing to 1: keys, queries
    and values are dense maps of the fitness features, ``A = softmax(Q K^T / sqrt(pop))`` and
    the weights are ``softmax(A V)`` over the members (Lange et al., 2023, eq. 3)."""
    keys = dense(params, "recombination.key", features)
    queries = dense(params, "recombination.query", features)
    values = dense(params, "recombination.value", features)[:, 0]
    scores = jnp.dot(queries, keys.T, precision=HIGHEST) / jnp.sqrt(features.shape[0])
    return jax.nn.softmax(jnp.dot(jax.nn.softmax(scores, axis=-1), values, precision=HIGHEST))


def learning_rates(
    params: Weights,
    path_mean: Float[Array, "dim 3"],
    path_std: Float[Array, "dim 3"],
    time: Float[Array, " 13"],
) -> tuple[Float[Array, " dim"], Float[Array, " dim"]]:
    """Each coordinate's learning rates ``(alpha_mean, alpha_std)`` in ``(0, 1)``: one hidden
    ReLU layer over its paths and the generation embedding, then two sigmoid heads."""
    dim = path_mean.shape[0]
    inputs = jnp.concatenate([path_mean, path_std, jnp.broadcast_to(time, (dim, time.shape[0]))], 1)
    hidden = jax.nn.relu(dense(params, "lr.hidden", inputs))
    lr_mean = jax.nn.sigmoid(dense(params, "lr.mean", hidden))[:, 0]
    return lr_mean, jax.nn.sigmoid(dense(params, "lr.std", hidden))[:, 0]


def time_embedding(generation, dtype) -> Float[Array, " 13"]:
    """``tanh(g / T - 1)`` for each of :data:`TIME_SCALES`."""
    return jnp.tanh(jnp.asarray(generation, dtype) / jnp.asarray(TIME_SCALES, dtype) - 1.0)


def update_paths(paths: Float[Array, "dim 3"], step: Float[Array, " dim"]) -> Float[Array, "dim 3"]:
    """``(1 - c) p + c step`` for each timescale ``c`` of :data:`PATH_TIMESCALES`."""
    c = jnp.asarray(PATH_TIMESCALES, paths.dtype)
    return (1 - c[None]) * paths + c[None] * step[:, None]


class LES(Learned, DistributionAlgorithm[LESState]):
    """Learned Evolution Strategy (Lange, Schaul, Chen, Zahavy, Dalibard, Lu, Singh &
    Flennerhag, 2023, "Discovering Evolution Strategies via Meta-Black-Box Optimization").

    A diagonal Gaussian whose update rule is a small neural network. Each member's fitness
    features (``improved`` over the best so far, centred rank, z-score) pass through a
    self-attention layer that gives recombination weights ``w`` (:func:`recombination_weights`,
    invariant to the members' order). Two evolution paths per coordinate, of the weighted step
    ``sum_j w_j (x_j - m)`` and of the normalised step ``sum_j w_j (x_j - m) / std``, each at
    three timescales, feed a per-coordinate MLP with a generation embedding that gives learning
    rates ``alpha_m, alpha_s`` in ``(0, 1)`` (:func:`learning_rates`); then
    ``m <- m + alpha_m sum_j w_j (x_j - m)`` and
    ``std <- (1 - alpha_s) std + alpha_s sqrt(sum_j w_j (x_j - m)^2)``.
    A member with non-finite fitness gets weight 0.

    The network parameters (246 numbers, :data:`LES_SHAPES`) default to the weights shipped
    with evolax (the paper's own checkpoint is not published), meta-trained by
    ``benchmarks/meta_train_learned.py`` with evolax's OpenES (32 members, 1,624 generations,
    30 minutes on 2 CPU cores) on 10 BBOB functions (f1, f4, f6, f8, f11, f15, f16, f17, f19,
    f20) in 2, 5 and 10 dimensions, 16 samples, 100 generations, ``init_std = 1`` from
    ``x0 ~ U[-4, 4]^d``. On the 14 held-out BBOB functions (d = 10) they match SNES at
    ``100 d`` evaluations and trail it slightly at ``1000 d``; both beat OpenES
    (``docs/results/learned_es.md``). Other population sizes, horizons and scales work
    but were not trained for.

    Args:
        pop_size: number of samples, at least 2 (the shipped weights were meta-trained with 16).
        init_std: initial standard deviation of every coordinate, positive (evosax's 1.0).
        params: the network parameters: a dict ``{name: array}`` with the names and shapes of
            :data:`LES_SHAPES`, a path to an ``.npz`` file holding them, or ``None`` for the
            shipped meta-trained weights.
    """

    NAME = "les"
    SHAPES = LES_SHAPES

    def __check_init__(self):
        check_min_pop_size(self.pop_size, 2, "to rank samples")

    def _init(self, key, x0):
        del key
        paths = jnp.zeros((x0.shape[0], len(PATH_TIMESCALES)), x0.dtype)
        std = jnp.full(x0.shape, self.init_std, x0.dtype)
        return LESState(mean=x0, std=std, path_mean=paths, path_std=paths)

    def _ask(self, key, state):
        z = normal(key, (self.pop_size, state.mean.shape[0]), state.mean)
        return state.mean[None] + state.std[None] * z, state

    def _tell(self, key, state, x, fitness):
        del key
        params = in_dtype(self.params, x.dtype)
        weights = recombination_weights(params, fitness_features(fitness, state.best_fitness))
        weights = jnp.where(jnp.isfinite(fitness), weights, 0.0)
        weights = weights / jnp.sum(weights)
        # population sums as products (XLA's CPU column reductions are slow)
        step = x - state.mean[None]
        weighted_step = jnp.dot(weights, step, precision=HIGHEST)
        path_mean = update_paths(state.path_mean, weighted_step)
        path_std = update_paths(state.path_std, weighted_step / state.std)
        time = time_embedding(state.generation, x.dtype)
        lr_mean, lr_std = learning_rates(params, path_mean, path_std, time)
        mean = state.mean + lr_mean * (jnp.dot(weights, x, precision=HIGHEST) - state.mean)
        spread = jnp.sqrt(jnp.dot(weights, step**2, precision=HIGHEST))
        std = state.std + lr_std * (spread - state.std)
        new_state = state.replace(mean=mean, std=std, path_mean=path_mean, path_std=path_std)
        metrics = {"std": jnp.mean(std), "lr_mean": jnp.mean(lr_mean), "lr_std": jnp.mean(lr_std)}
        return new_state, metrics
