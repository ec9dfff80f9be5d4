"""The one template every evolution algorithm is written on.

The public ``init / ask / tell / best`` are written here, once. They check shapes, apply the
fitness rule, flatten pytree genomes to a ``[pop, D]`` matrix and back, keep the best-ever
genome, count generations and return the standard metrics. An algorithm writes only its maths
on flat arrays: ``_init(key, x0) -> state``, ``_ask(key, state) -> (x, state)`` and
``_tell(key, state, x, fitness, **extra) -> (state, metrics)``.

**Fitness rule.** ``tell`` replaces every non-finite fitness (NaN, ``-inf``, ``+inf``) by
``-inf`` before ``_tell`` sees it: rank-based utilities give such individuals the worst rank's
utility, value-based ones the worst finite fitness (:mod:`evolax.algorithms.shaping`), so they
never pull the search toward themselves, and they never become the best-ever. A generation in
which no fitness is finite, or whose update breaks down numerically (NaN or ``+inf`` in the
new state, a spread that is not positive), leaves the algorithm's state as it was; the metrics
``nonfinite`` and ``skipped`` count both. With several objectives (``fitness`` of shape
``[pop, m]``, :attr:`Algorithm.objectives_shape`), an individual with any non-finite objective
gets ``-inf`` in all of them.
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
from typing import Any, ClassVar, Generic, TypeVar

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Float, Int

from evolax.algorithms.arguments import (
    FOREIGN_NAMES,
    check_call,
    check_constructor,
    check_fitness_values,
)
from evolax.algorithms.noise import gaussian
from evolax.algorithms.shaping import Shaping
from evolax.compiled import compiled, explained_hash
from evolax.types import Fitness, Metrics, Params, Population, PRNGKey
from evolax.validation import (
    check_in_interval,
    check_non_negative,
    check_positive_int,
    population_size,
)

HIGHEST = jax.lax.Precision.HIGHEST
"""Full-precision matrix products (the default on CPU; TPU and GPU would round to bf16/tf32)."""


def distinct_buffers(tree: Any, avoid: Any = None) -> Any:
    """``tree`` with every array that appears a second time (as the same buffer), or that is
    one of ``avoid``'s arrays, copied.

    A state whose fields share one buffer (``cov`` and ``eigvecs`` both the identity, two
    paths both one zero vector, the mean and the best genome both ``x0``) cannot be donated to
    a jitted ``ask`` / ``tell``: XLA refuses to donate a buffer twice. Traced values (inside
    ``jit``, whose outputs never share buffers) pass through.
    """
    seen: set[Any] = set()

    def buffer(leaf):
        if not isinstance(leaf, jax.Array) or isinstance(leaf, jax.core.Tracer):
            return None
        try:
            return leaf.unsafe_buffer_pointer()
        except Exception:  # sharded over devices, or deleted: fall back on identity
            return id(leaf)

    def fresh(leaf):
        key = buffer(leaf)
        if key is None:
            return leaf
        if key in seen:
            return jnp.copy(leaf)
        seen.add(key)
        return leaf

    seen.update(buffer(leaf) for leaf in jax.tree.leaves(avoid))
    seen.discard(None)
    return jax.tree.map(fresh, tree)


@chex.dataclass(frozen=True, kw_only=True)
class State:
    """The fields every algorithm's state has; :meth:`Algorithm.tell` keeps them.

    Attributes:
        best_genome: the best genome ever told, a pytree (``x0`` until a finite fitness is
            told). It also carries the genome's pytree structure.
        best_fitness: its fitness, ``[]`` (``-inf`` until a finite fitness is told).
        generation: the number of ``tell`` calls so far, ``i32[]``.
    """

    best_genome: Params = None
    best_fitness: Float[Array, ""] = None  # type: ignore[assignment]  # the template sets it
    generation: Int[Array, ""] = None  # type: ignore[assignment]


@chex.dataclass(frozen=True, kw_only=True)
class DistributionState(State):
    """The state of a search distribution: its mean and spread (flat arrays).

    Attributes:
        mean: the search distribution's mean, ``[D]`` (a pytree like ``x0`` where
            :attr:`Algorithm.pytree_genome`): what :meth:`Algorithm.best` returns.
        std: its spread, ``[]`` (a step size) or ``[D]`` (one per coordinate).
    """

    mean: Float[Array, " dim"]
    std: Float[Array, "..."]


@chex.dataclass(frozen=True, kw_only=True)
class GradientESState(DistributionState):
    """The state of a distribution whose mean follows an estimated gradient.

    Attributes:
        opt_state: the optax state of the mean's optimizer.
    """

    opt_state: optax.OptState


@chex.dataclass(frozen=True, kw_only=True)
class PopulationState(State):
    """The state of a population-based algorithm: its members and their fitness.

    Attributes:
        population: the current members, ``[pop, D]``.
        fitness: their fitness, ``[pop]`` (``-inf`` before they are evaluated).
    """

    population: Float[Array, "pop dim"]
    fitness: Float[Array, " pop"]


S = TypeVar("S", bound=State)


@dataclasses.dataclass(frozen=True)
class Output:
    """A record an algorithm declares for a run to write beside its metrics and checkpoints
    (as ``NAME.json``, :meth:`Algorithm.outputs`).

    Attributes:
        per_seed: one seed's values (JSON-ready, or arrays); a run of several seeds writes a
            list of them per key, one per seed.
        shared: values every seed shares (the archive's grid, say), written once.
    """

    per_seed: dict[str, Any]
    shared: dict[str, Any] = dataclasses.field(default_factory=dict)


class Algorithm(eqx.Module, Generic[S]):
    """An ask/tell evolution algorithm over pytree genomes; fitness is maximised.

    Subclasses are frozen equinox modules whose fields are configuration, and write only
    ``_init``, ``_ask`` and ``_tell`` on flat arrays (see the module's docstring).
    """

    __hash__ = explained_hash

    pop_size: eqx.AbstractVar[int]
    pytree_genome: ClassVar[bool] = False
    """Whether the maths reads the genome's pytree (its matrices, as a low-rank strategy
    does) rather than the flat view: ``_init`` then gets ``x0`` as given, ``_ask`` returns
    the population as ``ask`` does and ``_tell`` gets it as ``tell`` does, and a
    distribution's ``mean`` is a pytree like ``x0``. (At 1e8 parameters, joining the leaves
    into a flat vector costs seconds on a CPU.)"""
    genome_kind: ClassVar[str] = "real"
    """The genomes the algorithm evolves: ``"real"`` vectors (any pytree of arrays), or a
    structured kind that a genome names with its own ``genome_kind`` (and says what evolves
    it with ``evolved_by``); a real-vector algorithm's ``init`` refuses other kinds."""
    summary_metrics: ClassVar[tuple[str, ...]] = ()
    """Metrics whose last value sums up a run (a QD archive's ``coverage``, say): a run's
    summary reports each as ``final_NAME``."""
    extra_inputs: ClassVar[tuple[str, ...]] = ()
    """The names of the extra keyword arguments ``tell`` needs besides the fitness, e.g.
    ``("descriptors",)`` for quality diversity; the trainer passes what is declared here."""

    def __new__(cls, *args: Any, **kwargs: Any):
        if any(name in FOREIGN_NAMES for name in kwargs):
            names = {f.name for f in dataclasses.fields(cls)}
            check_constructor(cls, names | set(inspect.signature(cls).parameters), kwargs)
        return super().__new__(cls, *args, **kwargs)

    def __check_init__(self):
        check_positive_int("pop_size", self.pop_size)
        # any algorithm's optax optimizer (the gradient ES family, ME-ES, SV-OpenES)
        optimizer = getattr(self, "optimizer", None)
        if optimizer is not None and not isinstance(optimizer, optax.GradientTransformation):
            raise TypeError(
                "optimizer must be an optax.GradientTransformation such as optax.adam(0.05), "
                f"got {optimizer!r:.60}"
            )

    @property
    def objectives_shape(self) -> tuple[int, ...]:
        """The shape of one individual's fitness: ``()``, or ``(m,)`` for an algorithm of
        ``m`` objectives (whose best-ever genome is the one with the largest sum)."""
        return ()

    # ---- the maths, written by each algorithm ---------------------------------------------

    @abc.abstractmethod
    def _init(self, key: PRNGKey, x0: Float[Array, " dim"]) -> S:
        """The algorithm's state around the flat start genome ``x0`` (common fields unset)."""

    @abc.abstractmethod
    def _ask(self, key: PRNGKey, state: S) -> tuple[Float[Array, "pop dim"], S]:
        """The flat population to evaluate next, ``[pop, D]``."""

    @abc.abstractmethod
    def _tell(self, *args: Any, **kwargs: Any) -> tuple[S, Metrics]:
        """``_tell(key, state, x, fitness, **extra) -> (state, metrics)``: the update from
        the flat population ``x`` (``[pop, D]``) and its fitness (``[pop]``, non-finite values
        as ``-inf``); ``extra`` holds the inputs named in :attr:`extra_inputs`."""

    def _healthy(self, state: S) -> jax.Array:
        """Whether a new state is numerically sound (``False`` skips the generation)."""
        del state
        return jnp.asarray(True)

    def _tell_population(
        self, key: PRNGKey, state: S, population: Population, fitness: Fitness, **extra: Any
    ) -> tuple[S, Metrics]:
        """:meth:`_tell` on the population flattened to ``[pop, D]``; an algorithm whose
        population is not a plain array pytree (held as seeds, say) reads it here."""
        if self.pytree_genome:
            return self._tell(key, state, population, fitness, **extra)
        dim = sum(jnp.size(leaf) for leaf in jax.tree.leaves(state.best_genome))
        x = flatten_population(population, self.pop_size, dim)
        return self._tell(key, state, x, fitness, **extra)

    def _member(self, population: Population, index: Int[Array, ""]) -> Params:
        """Member ``index`` of ``population``, a genome pytree; an algorithm whose population
        is not a plain array pytree (held as seeds, say) draws it here."""
        return jax.tree.map(lambda leaf: leaf[index], population)

    def _ask_population(self, key: PRNGKey, state: S) -> tuple[Population, S]:
        """:meth:`_ask`'s flat population as ``x0``'s pytree (as it is with
        :attr:`pytree_genome`); an algorithm that holds its population otherwise (as seeds,
        say) makes it here."""
        x, state = self._ask(key, state)
        if self.pytree_genome:
            return x, state
        return unflatten_population(x, state.best_genome), state

    # ---- the public interface, written once -----------------------------------------------

    @compiled
    def init(self, key: PRNGKey, x0: Params, *params: Any) -> S:
        """The initial state; ``x0`` fixes the genome's pytree structure and dtype (float32,
        or float64 genomes under ``jax_enable_x64``) and is the start point."""
        check_call(f"{type(self).__name__}.init", "key, x0", State, params, key=key, x0=x0)
        given, kind = x0, getattr(x0, "genome_kind", "real")
        if kind != self.genome_kind and self.genome_kind == "real":
            raise ValueError(f"{type(self).__name__} searches real vectors; {x0.evolved_by}")
        if self.pytree_genome:  # the maths reads the leaves as they are (integers too)
            x0 = jax.tree.map(jnp.asarray, x0)
        else:
            x0 = jax.tree.map(lambda leaf: jnp.asarray(leaf, genome_dtype(leaf)), x0)
        flat, _ = ravel_pytree(x0)
        state = self._init(key, x0 if self.pytree_genome else flat)
        state = state.replace(  # type: ignore[attr-defined]
            best_genome=x0,
            best_fitness=jnp.asarray(-jnp.inf, flat.dtype),
            generation=jnp.zeros([], jnp.int32),
        )
        return distinct_buffers(state, avoid=given)  # donatable, the caller's x0 untouched

    @compiled
    def ask(self, key: PRNGKey, state: S, *params: Any) -> tuple[Population, S]:
        """Sample a population: ``x0``'s pytree with a leading ``pop_size`` axis."""
        check_call(f"{type(self).__name__}.ask", "key, state", State, params, key=key, state=state)
        return self._ask_population(key, state)

    @compiled
    def tell(
        self,
        key: PRNGKey,
        state: S,
        population: Population,
        fitness: Fitness,
        *params: Any,
        **extra: Any,
    ) -> tuple[S, Metrics]:
        """Update the state from the fitness (``[pop_size]``, higher is better; a
        multi-objective algorithm takes ``[pop_size, n_objectives]``, each maximised).

        ``key`` feeds algorithms whose update is random (others ignore it); ``extra`` holds
        the inputs named in :attr:`extra_inputs`.
        """
        check_call(
            f"{type(self).__name__}.tell",
            "key, state, population, fitness",
            State,
            params,
            key=key,
            state=state,
            population=population,
            fitness=fitness,
        )
        missing = [name for name in self.extra_inputs if extra.get(name) is None]
        if missing:
            raise ValueError(
                f"{type(self).__name__}.tell needs {', '.join(missing)} (declared in "
                f"extra_inputs), got none"
            )
        dtype = jnp.result_type(*jax.tree.leaves(state.best_genome))
        fitness = check_fitness(fitness, self.pop_size, dtype, self.objectives_shape)
        finite = jnp.all(jnp.isfinite(fitness.reshape(self.pop_size, -1)), axis=1)
        fitness = jnp.where(
            finite.reshape(finite.shape + (1,) * (fitness.ndim - 1)), fitness, -jnp.inf
        )
        new, metrics = self._tell_population(key, state, population, fitness, **extra)
        nonfinite = jnp.sum(~finite)  # one reduction for the metric and the keep test
        keep = nonfinite < self.pop_size
        if type(self)._healthy is Algorithm._healthy:
            # the fitness alone decides: a select fuses into the update's own element-wise
            # work, where a lax.cond after it copies the [pop, D] arrays it carries (PSO at pop
            # 1024, D = 10,000: 31 -> 23 ms a generation; DE 54 -> 44 ms)
            new = jax.tree.map(lambda a, b: jnp.where(keep, a, b), new, state)
        else:  # the health check reads the new state: keep or skip it after the update
            keep = keep & self._healthy(new)
            # a select under vmap; a select here would let XLA:CPU fuse the update's last
            # element-wise steps into it, which moves the last bit of some algorithms' results
            new = jax.lax.cond(keep, lambda: new, lambda: state)
        score = fitness.reshape(self.pop_size, -1).sum(axis=1)  # several objectives: their sum
        top = jnp.argmax(score)
        improved = score[top] > state.best_fitness
        best_fitness = jnp.where(improved, score[top], state.best_fitness)
        new = new.replace(
            # leaf by leaf: at 1e8 parameters a flat genome's concatenation costs seconds
            best_genome=jax.tree.map(
                lambda new, old: jnp.where(improved, new.astype(old.dtype), old),
                self._member(population, top),
                state.best_genome,
            ),
            best_fitness=best_fitness,
            generation=state.generation + 1,
        )
        metrics = {
            **metrics,
            "best_fitness": best_fitness,
            "nonfinite": nonfinite.astype(jnp.float32),
            "skipped": 1.0 - keep.astype(jnp.float32),
        }
        return new, metrics

    @compiled
    def best(self, state: S) -> Params:
        """The solution to deploy, a genome pytree: the best genome ever told (distribution
        algorithms return their mean)."""
        check_call(f"{type(self).__name__}.best", "state", State, (), state=state)
        return state.best_genome

    def outputs(self, state: S) -> dict[str, Output]:
        """What a run writes besides its metrics and checkpoints, by file name (a
        multi-objective population's ``pareto_front``, a QD ``archive``), from one seed's
        state on the host; none by default."""
        del state
        return {}


class DistributionAlgorithm(Algorithm[S]):
    """An algorithm that samples from a search distribution (a mean and a spread) and deploys
    its mean; a generation whose update is not finite is skipped."""

    def _healthy(self, state: S) -> jax.Array:
        """No NaN or ``+inf`` in the state's vectors and scalars (matrices are checked through
        their diagonals: a breakdown there reaches the diagonal within a generation) and a
        positive spread."""
        own = [
            leaf if jnp.ndim(leaf) <= 1 else diagonal(leaf)
            for name, value in state.items()  # type: ignore[attr-defined]
            if name not in ("best_genome", "best_fitness", "generation")
            for leaf in jax.tree.leaves(value)
            if jnp.issubdtype(jnp.asarray(leaf).dtype, jnp.floating)
        ]
        # one reduction over all of them (XLA:CPU would launch one per leaf); widened to the
        # widest dtype, which keeps every NaN, inf and sign
        dtype = jnp.result_type(*own)
        values = jnp.concatenate([jnp.ravel(leaf).astype(dtype) for leaf in own])
        std = jnp.ravel(state.std)  # type: ignore[attr-defined]
        sound = jnp.concatenate([~jnp.isnan(values) & (values != jnp.inf), std > 0])
        return jnp.all(sound)

    @compiled
    def best(self, state: S) -> Params:
        check_call(f"{type(self).__name__}.best", "state", State, (), state=state)
        if self.pytree_genome:
            return state.mean  # type: ignore[attr-defined]
        _, unravel = ravel_pytree(state.best_genome)
        return unravel(state.mean)  # type: ignore[attr-defined]


class GradientES(DistributionAlgorithm[S]):
    """A distribution algorithm that turns fitness into utilities (``fitness_shaping``) and
    moves its mean along an estimated gradient with an optax ``optimizer`` (its state extends
    :class:`GradientESState`)."""

    optimizer: eqx.AbstractVar[optax.GradientTransformation]
    fitness_shaping: eqx.AbstractVar[Shaping]

    def _start(self, x0: Float[Array, " dim"], std: Float[Array, "..."]) -> dict[str, Any]:
        """The fields ``mean``, ``std`` and ``opt_state`` of a first state."""
        return dict(mean=x0, std=std, opt_state=self.optimizer.init(x0))

    def _ascend(self, state: S, ascent: Float[Array, " dim"]) -> dict[str, Any]:
        """The fields ``mean`` and ``opt_state`` after a step along ``ascent`` (the optimizer
        receives ``-ascent``, like a loss gradient)."""
        updates, opt_state = self.optimizer.update(
            jax.tree.map(jnp.negative, ascent),
            state.opt_state,  # type: ignore[attr-defined]
            state.mean,  # type: ignore[attr-defined]
        )
        return dict(mean=optax.apply_updates(state.mean, updates), opt_state=opt_state)  # type: ignore[attr-defined]


class PopulationAlgorithm(Algorithm[S]):
    """An algorithm that keeps a population and its fitness and deploys the best-ever genome."""

    tells_in_place: ClassVar[bool] = False
    """Whether ``tell`` reads the members where ``ask`` left them in ``state.population`` (a
    particle swarm's positions): :meth:`init_population` then puts yours there."""

    @compiled
    def init_population(
        self, key: PRNGKey, population: Population, fitness: Fitness, **extra: Any
    ) -> S:
        """A state that starts from your own evaluated ``population`` (``x0``'s pytree with a
        leading ``pop_size`` axis) and its ``fitness`` (``[pop_size]``, maximised), as if they
        were the first generation: ``init`` around the first member, ``ask``, then ``tell``
        of your population in place of the one asked (evosax's ``init(key, population,
        fitness, params)``). The best of them is the best-ever; ``generation`` is 1.
        """
        init_key, ask_key, tell_key = jax.random.split(key, 3)
        state = self.init(init_key, jax.tree.map(lambda leaf: leaf[0], population))
        _, state = self.ask(ask_key, state)
        if self.tells_in_place:
            dim = state.population.shape[1]  # type: ignore[attr-defined]
            flat = flatten_population(population, self.pop_size, dim)
            state = state.replace(population=flat)  # type: ignore[attr-defined]
        return self.tell(tell_key, state, population, fitness, **extra)[0]


def diagonal(matrix: Float[Array, "*batch m n"]) -> Float[Array, "*batch k"]:
    """The diagonal of the last two axes, ``k = min(m, n)`` (``jnp.diagonal``'s values): every
    ``(n + 1)``-th element of the flattened matrix, a strided slice that fuses into its
    consumer where ``jnp.diagonal``'s gather is a kernel of its own, with its indices another."""
    m, n = matrix.shape[-2:]
    flat = matrix.reshape(*matrix.shape[:-2], m * n)
    return flat[..., : min(m, n) * (n + 1) : n + 1]


def genome_dtype(leaf) -> jnp.dtype:
    """The dtype a genome leaf is searched in: its own floating dtype, else float32."""
    dtype = jnp.result_type(leaf)
    return dtype if jnp.issubdtype(dtype, jnp.floating) else jnp.dtype(jnp.float32)


def check_antithetic_pop_size(pop_size: int, alternative: str = "") -> None:
    """Raise unless ``pop_size`` is even, suggesting the nearest even sizes (and
    ``alternative``, another way out, if given)."""
    if isinstance(pop_size, int) and pop_size % 2:
        other = f", or {alternative}" if alternative else ""
        raise ValueError(
            f"pop_size must be even for antithetic sampling, got {pop_size} "
            f"(use {pop_size - 1 or 2} or {pop_size + 1}{other})"
        )


def check_min_pop_size(pop_size: int, minimum: int, why: str) -> None:
    """Raise unless ``pop_size`` is at least ``minimum`` (``why``: what needs it)."""
    if isinstance(pop_size, int) and pop_size < minimum:
        raise ValueError(f"pop_size must be at least {minimum} {why}, got {pop_size}")


def check_std_decay(std_decay: float, std_min: float) -> None:
    """Raise unless ``std_decay`` is in ``(0, 1]`` and ``std_min >= 0``: the settings of a
    ``std`` that decays geometrically to a floor (:func:`decayed_std`)."""
    check_in_interval("std_decay", std_decay, 0, 1, low_open=True)
    check_non_negative("std_min", std_min)


def decayed_std(std: Array, std_decay, std_min) -> Array:
    """``max(std * std_decay, std_min)``: one generation's geometric decay of ``std`` to the
    floor ``std_min``."""
    return jnp.maximum(std * std_decay, std_min)


def check_fitness(
    fitness: Fitness, pop_size: int, dtype=jnp.float32, objectives: tuple[int, ...] = ()
) -> Float[Array, " pop *m"]:
    """Check ``fitness`` has shape ``(pop_size, *objectives)`` (at trace time) and cast it to
    ``dtype``."""
    check_fitness_values(fitness)
    shape, expected = jnp.shape(fitness), (pop_size, *objectives)
    if shape != expected:
        names = "(pop_size, n_objectives)" if objectives else "(pop_size,)"
        raise ValueError(f"fitness must have shape {names} = {expected}, got {shape}")
    return jnp.asarray(fitness, dtype)


def flatten_population(
    population: Population, pop_size: int | None = None, dim: int | None = None
) -> Float[Array, "pop dim"]:
    """Flatten a population pytree into a ``[pop, D]`` matrix (row order = leaf order),
    checking its leading axis (and ``D``) when given."""
    size = population_size(population)
    flat = jax.vmap(lambda x: ravel_pytree(x)[0])(population)
    if (pop_size is not None and size != pop_size) or (dim is not None and flat.shape[1] != dim):
        raise ValueError(
            f"population must hold pop_size = {pop_size} genomes of {dim} parameters, got "
            f"{size} of {flat.shape[1]}"
        )
    return flat


def unflatten_population(flat: Float[Array, "pop dim"], like: Params) -> Population:
    """Inverse of :func:`flatten_population`, using one genome ``like`` as the template."""
    _, unravel = ravel_pytree(like)
    return jax.vmap(unravel)(flat)


def mirrored(
    mean: Float[Array, " dim"], steps: Float[Array, "half dim"]
) -> Float[Array, "pop dim"]:
    """The antithetic population ``[mean + steps; mean - steps]``, ``[2 half, dim]``.

    Built by broadcasting against the signs, not ``concatenate``: XLA's CPU concatenation of
    ``[x, -x]`` ran 4x slower at ``512 x 100,000``.
    """
    signs = jnp.array([1.0, -1.0], steps.dtype)[:, None, None]
    return (mean[None, None] + signs * steps[None]).reshape(-1, steps.shape[-1])


def normal(key: PRNGKey, shape: tuple[int, ...], like: Array) -> Float[Array, "..."]:
    """Standard normal draws of ``shape`` in ``like``'s dtype (:func:`~evolax.algorithms.noise.
    gaussian`, the one noise source of every algorithm)."""
    return gaussian(key, shape, like.dtype)
