"""Low-rank evolution strategies: EGGROLL's perturbations, drawn from seeds inside the forward
pass."""

from __future__ import annotations

import dataclasses
from typing import Any

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import PyTree

from evolax.algorithms.base import GradientESState, decayed_std
from evolax.algorithms.es.common import check_open_es_settings, noise_weights
from evolax.algorithms.es.seeded import SeededES
from evolax.algorithms.shaping import Shaping, centered_rank
from evolax.optim import optimizer_field
from evolax.seeded import noise_sums
from evolax.validation import check_positive, check_positive_int

LAYER_SCALE_RULES = ("rms",)


@dataclasses.dataclass(frozen=True)
class LeafScales:
    """A pytree of positive scalars, one per leaf of the genome, held as hashable static
    configuration (:attr:`LowRankES.layer_scale` given as a pytree).

    Attributes:
        treedef: the pytree's structure.
        values: its leaves, in ``jax.tree.leaves`` order.
    """

    treedef: jax.tree_util.PyTreeDef
    values: tuple[float, ...]

    def tree(self) -> PyTree:
        """The scales as the pytree they were given as."""
        return jax.tree.unflatten(self.treedef, self.values)


def layer_scale_option(value: Any) -> str | LeafScales | None:
    """``layer_scale`` checked: ``None``, a rule's name, or a pytree of positive scalars
    (frozen as :class:`LeafScales`)."""
    if value is None or isinstance(value, LeafScales):
        return value
    expected = f"None, one of {list(LAYER_SCALE_RULES)} or a pytree of positive scalars"
    if isinstance(value, str):
        if value not in LAYER_SCALE_RULES:
            raise ValueError(f"layer_scale must be {expected}, got {value!r}")
        return value
    pairs, treedef = jax.tree_util.tree_flatten_with_path(value)
    if not pairs:
        raise ValueError(f"layer_scale must be {expected}, got an empty {type(value).__name__}")
    for path, x in pairs:
        if not (np.ndim(x) == 0 and np.isfinite(x) and x > 0):
            where = jax.tree_util.keystr(path)
            raise ValueError(f"layer_scale must be {expected}: its leaf {where} is {x!r}")
    return LeafScales(treedef, tuple(float(x) for _, x in pairs))


@chex.dataclass(frozen=True, kw_only=True)
class LowRankESState(GradientESState):
    """LowRankES state: the ``mean`` (a pytree like the genome), the isotropic ``std``
    (``[]``) and the optimizer's state."""


@chex.dataclass(frozen=True, kw_only=True)
class LayerScaledESState(LowRankESState):
    """LowRankES state with a ``layer_scale``: also each leaf's noise scale relative to
    ``std``, ``layer_scale`` (a pytree like the mean of ``[]`` leaves). A subclass, so that a
    state without one keeps its structure (and its checkpoints)."""

    layer_scale: PyTree


class LowRankES(SeededES[LowRankESState]):
    """EGGROLL (Sarkar et al., 2025, "Evolution Strategies at the Hyperscale",
    arXiv:2511.16652): OpenAI-ES whose members perturb every matrix of the genome by a
    rank-``r`` product and exist only as seeds.

    Member ``i`` perturbs each matrix leaf ``W`` (``[m, n]``; a leaf of more axes is a
    matrix over all but its last) by ``std * a_i b_i^T / sqrt(r)`` with ``a_i ~ N(0, I_{m x
    r})`` and ``b_i ~ N(0, I_{n x r})``, and each vector leaf by full-rank noise ``std *
    eps_i``, all drawn from ``fold_in(key, i)`` (:mod:`evolax.seeded`; antithetic pairs by
    default, ``[mean + std E_1..n, mean - std E_1..n]``). :meth:`ask` returns the population
    as seeds (``O(pop)`` numbers besides the shared mean); the rollout draws the factors of
    the members it evaluates, and the policy applies them inside its forward pass (``x @ W
    + std (x @ a) b^T / sqrt(r)``: :class:`~evolax.seeded.LowRank`). The update is OpenES's,
    ``g = sum_i u_i E_i / (pop_size * std)`` over the perturbations' directions ``E_i``,
    summed as ``A^T diag(u) B`` per matrix from the factors redrawn from the same seeds: no
    ``[pop, m, n]`` array, and nothing population-sized but the fitness, is ever formed or
    crosses devices. The directions have the identity covariance of OpenES's Gaussian
    steps, so on a quadratic the estimate's mean is the gradient at any rank; EGGROLL shows
    the estimate converges to the full-rank one at ``O(1/r)`` in general.

    ``layer_scale`` gives each leaf ``l`` of the genome its own noise scale ``std * s_l``
    (EGGROLL and the full-parameter ES of Qiu et al. 2025 use one ``std`` for all): the
    member's leaf is ``mean_l + std s_l E_l`` and the update divides leaf ``l``'s sum by
    ``pop_size * std * s_l``, so on a quadratic the estimate's mean is still the gradient in
    every leaf. ``"rms"`` sets ``s_l`` to the RMS of the leaf's initial mean (at least
    ``layer_scale_floor``): each perturbation is then a fixed fraction ``std`` of its
    weights' size, norms' scales (about 1) and matrices' weights (about 0.02) alike. One
    scalar per leaf suits a rank-``r`` view as well as full-rank noise.

    ``rank = 0`` perturbs every leaf at full rank: OpenES's population held as seeds, in
    ``O(D)`` memory instead of ``O(pop D)``. The mean is kept as the genome's pytree
    (:attr:`~evolax.algorithms.Algorithm.pytree_genome`): joining 1e8 parameters into one
    vector costs seconds on a CPU.

    Deviations from the paper: the utilities are any of evolax's shapings (centred ranks by
    default, as OpenES); a shaping that reads the population (``weight_decay``) is refused
    (decay the weights in the optimizer instead, ``optax.adamw``).

    Args:
        pop_size: number of members (even when ``antithetic``).
        rank: the perturbations' rank ``r`` (``0``: full-rank members held as seeds).
        optimizer: optax transformation for the mean (default ``optax.adam(0.01)``).
        init_std: the noise scale, positive.
        std_decay: factor applied to ``std`` after each update, in ``(0, 1]``.
        std_min: floor of ``std``, ``>= 0``.
        antithetic: sample mirrored pairs.
        fitness_shaping: ``(fitness, None) -> utilities`` (:mod:`evolax.algorithms.shaping`).
        update_block: members whose noise the update draws at once (``None``: all; it must
            divide the ``pop_size`` draws, or half of them when ``antithetic``): bounds the
            update's memory at full rank.
        layer_scale: each leaf's noise scale relative to ``std``: ``None`` (``1`` for all),
            ``"rms"`` (the RMS of the leaf's initial mean) or a pytree like the genome of
            positive scalars, one per leaf.
        layer_scale_floor: the least scale ``"rms"`` gives a leaf (a leaf of zeros), positive.
    """

    pytree_genome = True
    pop_size: int = eqx.field(static=True)
    rank: int = eqx.field(static=True, default=1)
    optimizer: optax.GradientTransformation = optimizer_field(optax.adam, 0.01)
    init_std: float = 0.1
    std_decay: float = 1.0
    std_min: float = 0.0
    antithetic: bool = eqx.field(static=True, default=True)
    fitness_shaping: Shaping = eqx.field(static=True, default=centered_rank)
    update_block: int | None = eqx.field(static=True, default=None)
    layer_scale: str | PyTree | None = eqx.field(
        static=True, default=None, converter=layer_scale_option
    )
    layer_scale_floor: float = 1e-3

    def __check_init__(self):
        check_open_es_settings(self)
        check_positive("layer_scale_floor", self.layer_scale_floor)
        if not (isinstance(self.rank, int) and self.rank >= 0):
            raise ValueError(f"rank must be a non-negative integer, got {self.rank!r}")
        if self.update_block is not None:
            check_positive_int("update_block", self.update_block)
            n = self.pop_size // 2 if self.antithetic else self.pop_size
            if n % self.update_block:
                raise ValueError(
                    f"update_block must divide the {n} noise draws of a generation, got "
                    f"{self.update_block}"
                )

    def _init(self, key, x0):
        del key
        dtype = jax.tree.leaves(x0)[0].dtype
        start = self._start(x0, jnp.asarray(self.init_std, dtype))
        if self.layer_scale is None:
            return LowRankESState(**start)
        return LayerScaledESState(**start, layer_scale=self._layer_scales(x0, dtype))

    def _layer_scales(self, x0: PyTree, dtype: Any) -> PyTree:
        """Each leaf's noise scale relative to ``std`` (``[]`` leaves)."""
        given = self.layer_scale
        if isinstance(given, LeafScales):
            if given.treedef != jax.tree.structure(x0):
                raise ValueError(
                    "layer_scale must be a pytree like the genome (one positive scalar per "
                    f"leaf); its structure is not the genome's ({len(given.values)} leaves, "
                    f"the genome {len(jax.tree.leaves(x0))})"
                )
            return jax.tree.map(lambda s: jnp.asarray(s, dtype), given.tree())
        return jax.tree.map(  # "rms"
            lambda x: jnp.maximum(
                jnp.sqrt(jnp.mean(jnp.square(x.astype(jnp.float32)))), self.layer_scale_floor
            ).astype(dtype),
            x0,
        )

    def _seed_std(self, state):
        """``std``, or ``std * s_l`` per leaf with a ``layer_scale``."""
        if self.layer_scale is None:
            return state.std
        return jax.tree.map(lambda s: state.std * s, state.layer_scale)

    @property
    def holds_seeds(self) -> bool:
        return True

    def _seed_form(self):
        return self.rank, self.antithetic

    def _ask(self, key, state):
        """The population as seeds: a :class:`~evolax.seeded.Seeded` node."""
        return self._ask_seeds(key, state)

    def _tell(self, key, state, population, fitness):
        raise ValueError(
            "LowRankES.tell needs the population its ask returned (held as seeds), got "
            f"a {type(population).__name__}"
        )

    def _tell_seeds(self, state, population, fitness):
        weights = noise_weights(self.fitness_shaping(fitness, None), self.antithetic)
        total, _ = noise_sums(population, weights, block=self.update_block)
        if self.layer_scale is None:
            grad = jax.tree.map(lambda g: g / (self.pop_size * state.std), total)
        else:  # member = mean + std s_l E: leaf l's step is its sum over pop std s_l
            grad = jax.tree.map(
                lambda g, s: g / (self.pop_size * state.std * s), total, state.layer_scale
            )
        std = decayed_std(state.std, self.std_decay, self.std_min)
        new_state = state.replace(std=std, **self._ascend(state, grad))
        return new_state, {"std": std, "grad_norm": optax.tree.norm(grad)}
