"""Guided ES: random search augmented with surrogate gradients (Maheswaranathan, Metz,
Tucker, Choi & Sohl-Dickstein, 2019)."""

from __future__ import annotations

from typing import ClassVar

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Float

from evolax.algorithms.base import (
    HIGHEST,
    GradientES,
    GradientESState,
    check_antithetic_pop_size,
    mirrored,
)
from evolax.algorithms.es.common import principal_directions, subspace_sample
from evolax.algorithms.shaping import Shaping, raw
from evolax.optim import optimizer_field
from evolax.types import Params
from evolax.validation import check_in_interval, check_positive, check_positive_int


@chex.dataclass(frozen=True, kw_only=True)
class GuidedESState(GradientESState):
    """Guided ES state: ``mean``, the perturbations' scale ``std`` (``sigma``, ``[]``), the
    optimizer's state and the guiding surrogate gradients.

    Attributes:
        surrogates: the last ``k`` surrogate gradients told, oldest first, ``[k, D]`` (rows
            of zeros until ``k`` have been told).
    """

    surrogates: Float[Array, "k dim"]


class GuidedES(GradientES[GuidedESState]):
    """Guided evolutionary strategies (Maheswaranathan, Metz, Tucker, Choi & Sohl-Dickstein,
    2019, "Guided evolutionary strategies: augmenting random search with surrogate
    gradients", algorithm 1).

    Samples ``P = pop_size / 2`` antithetic pairs ``mean +- eps_i`` (laid out ``[mean +
    eps_1..P, mean - eps_1..P]``) with ``eps_i ~ N(0, sigma^2 Sigma)``, ``Sigma = alpha / D I +
    (1 - alpha) / k U U^T``, where ``U``'s ``k`` orthonormal columns span the last ``k``
    surrogate gradients (``E |eps|^2 = sigma^2``), and follows ``g = beta / (2 sigma^2 P)
    sum_i (f_i+ - f_i-) eps_i`` with any optax optimizer (the paper's ``x -= eta g`` on a loss
    is ``optax.sgd(eta)`` here). evosax's ``GuidedES`` leaves out the ``1 / P`` (its step grows
    with the population) and starts from ``k`` zero gradients, whose QR factorisation puts
    arbitrary coordinate axes in ``U`` until ``k`` gradients have arrived.

    **The surrogate gradient** is an extra input of :meth:`tell`, ``surrogate_gradient``: a
    flat ``[D]`` array or a pytree like the genome, e.g. a biased or noisy gradient of the
    fitness (or of the loss: only the span of ``U`` matters, not its sign) at the mean the
    population was sampled around, ``best(state)`` before ``tell``. ``tell`` appends it to the
    state's ``surrogates`` (the oldest drops out) and the next ``ask`` samples in their span:
    the subspace lags the paper's by one generation, since ``ask`` takes no inputs besides the
    state and the new mean is only known once ``tell`` returns. Until a surrogate has been
    told (the first generation) sampling is isotropic, ``N(0, sigma^2 / D I)``, and ``U``
    spans the surrogates told so far (``k`` is replaced by their rank). A surrogate that is
    not finite is not kept.

    Defaults: ``alpha = 0.5``, ``beta = 1``, ``sigma = 0.1``, ``k = 1`` and ``optax.sgd(0.2)``
    are the authors' demonstration of the paper's figure 1 (also evosax's, but for its
    ``sgd(1e-3)``).

    Args:
        pop_size: ``2 P``, even and at least 2.
        subspace_dims: ``k``, the number of recent surrogate gradients spanning the guiding
            subspace, at least 1 (at most ``D`` are independent).
        optimizer: optax transformation for the mean (default ``optax.sgd(0.2)``); it
            receives ``-g``, like a loss gradient.
        init_std: ``sigma``, the perturbations' root-mean-square norm, positive (fixed); each
            coordinate of the isotropic part has standard deviation ``sigma sqrt(alpha / D)``.
        alpha: the isotropic share of the search covariance, in ``[0, 1]`` (1 ignores the
            surrogate: plain antithetic ES).
        beta: the scale of the gradient estimate, positive.
        fitness_shaping: ``(fitness, x) -> utilities`` (default
            :func:`~evolax.algorithms.shaping.raw`, the paper's function values).
    """

    extra_inputs: ClassVar[tuple[str, ...]] = ("surrogate_gradient",)

    pop_size: int = eqx.field(static=True)
    subspace_dims: int = eqx.field(static=True, default=1)
    optimizer: optax.GradientTransformation = optimizer_field(optax.sgd, 0.2)
    init_std: float = 0.1
    alpha: float = 0.5
    beta: float = 1.0
    fitness_shaping: Shaping = eqx.field(static=True, default=raw)

    def __check_init__(self):
        check_antithetic_pop_size(self.pop_size)
        check_positive_int("subspace_dims", self.subspace_dims)
        check_positive("init_std", self.init_std)
        check_in_interval("alpha", self.alpha, 0, 1)
        check_positive("beta", self.beta)

    def _init(self, key, x0):
        del key
        return GuidedESState(
            **self._start(x0, jnp.asarray(self.init_std, x0.dtype)),
            surrogates=jnp.zeros((self.subspace_dims, x0.shape[0]), x0.dtype),
        )

    def _ask(self, key, state):
        values, basis = principal_directions(state.surrogates)
        active = values > 0
        alpha = jnp.asarray(self.alpha, state.mean.dtype)
        eps, _ = subspace_sample(key, basis, active, alpha, self.pop_size // 2)
        return mirrored(state.mean, state.std * eps), state

    def _tell(self, key, state, x, fitness, surrogate_gradient):
        surrogate = flat_surrogate(surrogate_gradient, state.best_genome)
        surrogate = surrogate.astype(state.mean.dtype)
        n = self.pop_size // 2
        utility = self.fitness_shaping(fitness, x)
        eps = x[:n] - state.mean[None]  # the second half mirrors it
        grad = jnp.dot(utility[:n] - utility[n:], eps, precision=HIGHEST)
        grad = grad * (self.beta / (2 * state.std**2 * n))
        pushed = jnp.concatenate([state.surrogates[1:], surrogate[None]])
        kept = jnp.all(jnp.isfinite(surrogate))
        new_state = state.replace(
            surrogates=jnp.where(kept, pushed, state.surrogates), **self._ascend(state, grad)
        )
        metrics = {
            "std": state.std,
            "grad_norm": jnp.linalg.norm(grad),
            "surrogate_kept": kept.astype(jnp.float32),
        }
        return new_state, metrics

    def _healthy(self, state):
        return super()._healthy(state) & jnp.all(jnp.isfinite(state.surrogates))


def flat_surrogate(surrogate: Params, genome: Params) -> Float[Array, " dim"]:
    """The surrogate gradient as a flat ``[D]`` array: given flat, or as a pytree like the
    genome (flattened in the genome's order); raise ``ValueError`` otherwise."""
    flat_genome, _ = ravel_pytree(genome)
    dim = flat_genome.shape[0]
    leaves = jax.tree.leaves(surrogate)
    if len(leaves) == 1 and jnp.shape(leaves[0]) == (dim,):
        return jnp.asarray(leaves[0])
    if leaf_shapes(surrogate) != leaf_shapes(genome):
        shapes = jax.tree.map(jnp.shape, surrogate)
        raise ValueError(
            f"surrogate_gradient must be a flat ({dim},) array or a pytree like the genome, "
            f"got {shapes}"
        )
    return ravel_pytree(surrogate)[0]


def leaf_shapes(tree: Params) -> list[tuple[str, tuple[int, ...]]]:
    """Each leaf's path and shape: equal for two pytrees of the same structure and shapes."""
    return [
        (jax.tree_util.keystr(path), jnp.shape(leaf))
        for path, leaf in jax.tree_util.tree_leaves_with_path(tree)
    ]
