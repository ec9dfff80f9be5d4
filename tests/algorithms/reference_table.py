"""The machinery of the reference table (``test_reference_table.py``): one harness for every
comparison of an evolax algorithm with a reference implementation (evosax 0.3.2, or EvoX 1.4
in PyTorch).

A :class:`Row` names the algorithm, the reference's constructor, how the two share their
random draws (:class:`Draws`) and the tolerance; :func:`check` runs any row:

- ``TOLD``, ``REPLAYED``, ``THEIRS``: a :class:`Trajectory`, generation by generation. After
  every tell the row's :class:`Field` s of evolax's state and of the reference's must agree
  within the tolerance (a failure names the generation). evosax minimises: it is told the
  negated fitness. A row's hooks carry what else its mapping needs.
- ``INPUTS``: :class:`Outputs`, values computed by both from the same inputs.
- ``SEEDS``: a :class:`Precision`: nothing is shared but the seeds and the start, and the
  final best ``f - f*`` of both on a BBOB function must show the row's :class:`Outcome`.

Its other names (:data:`X0`, :func:`quadratic`, the learned algorithms' weight layouts, ...)
are mappings shared by the table and the algorithms' own files, which keep the checks that
show where a reference departs from its paper.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import re
from collections.abc import Callable, Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.flatten_util import ravel_pytree

from evolax.coco import bbob_runs
from evolax.problems import bbob_problem

Tolerance = tuple[float, float]
F32: Tolerance = (2e-5, 2e-6)
"""``(rtol, atol)`` of float32 states after a few updates: most rows'."""
EXACT: Tolerance = (0.0, 0.0)


class Draws(enum.Enum):
    """How a row shares the random draws between evolax and the reference."""

    TOLD = "evolax asks; both are told its population, with the same keys"
    REPLAYED = "evolax draws what the reference draws from the same key: both ask, compared"
    THEIRS = "the reference asks from a state set in both; both are told its population"
    INPUTS = "nothing random: both compute from the same inputs"
    SEEDS = "nothing shared but the seeds and the start: final precisions compared"


@dataclasses.dataclass(frozen=True)
class Row:
    """One comparison of the table; its test id is ``name``, the algorithm's.

    ``ours()`` builds evolax's algorithm (for ``INPUTS``: its parameters), ``theirs`` the
    reference: ``theirs(ours)`` for a trajectory or outputs, ``theirs()`` for evosax's BBOB
    runs, ``theirs(lb=, ub=)`` for EvoX's. ``params(reference, ours)`` are the reference's
    parameters (evosax's ``default_params`` unless mapped). ``tol`` is ``(rtol, atol)``, or
    for ``SEEDS`` the :class:`Outcome`. ``slow`` rows run in ``nox -s slow`` only."""

    name: str
    ours: Callable[[], Any]
    theirs: Callable[..., Any]
    draws: Draws
    tol: Tolerance | Outcome
    how: Trajectory | Outputs | Precision
    params: Callable[[Any, Any], Any] = lambda theirs, ours: theirs.default_params
    slow: bool = True
    marks: tuple = ()


def check(row: Row) -> None:
    """Run ``row``: the one harness of the table."""
    if row.draws is Draws.SEEDS:
        precision(row)
    elif row.draws is Draws.INPUTS:
        outputs(row)
    elif row.how.fails_at is None:
        trajectory(row)
    else:  # the row shows that its comparison can fail, and where
        try:
            trajectory(row)
        except AssertionError as error:
            assert re.search(rf"\bgeneration {row.how.fails_at}\b", str(error)), error
        else:
            raise AssertionError(f"{row.name} agreed in every generation")


def allow():
    """evosax broadcasts implicitly: its calls run with rank promotion allowed (the suite
    raises on it, and evolax's own calls still do)."""
    return jax.numpy_rank_promotion("allow")


class Reference:
    """A reference algorithm whose attributes and methods are read and run under
    :func:`allow`."""

    def __init__(self, algorithm):
        self.algorithm = algorithm

    def __getattr__(self, name):
        with allow():
            attribute = getattr(self.algorithm, name)
        if not callable(attribute):
            return attribute

        @functools.wraps(attribute)
        def lenient(*args, **kwargs):
            with allow():
                return attribute(*args, **kwargs)

        return lenient


def companion(cls, name: str):
    """``name`` from the module that defines ``cls`` or one of its bases: an algorithm's own
    helper, found through its public class wherever the modules live."""
    for klass in cls.__mro__:
        module = importlib.import_module(klass.__module__)
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"no {name} beside {cls.__name__}")


def assert_close(ours, theirs, tol: Tolerance, err: str = "") -> None:
    """``ours`` and ``theirs`` (arrays, numbers or pytrees of them, leaf by leaf) agree."""
    leaves, their_leaves = jax.tree.leaves(ours), jax.tree.leaves(theirs)
    assert len(leaves) == len(their_leaves), f"{err}: {len(leaves)} vs {len(their_leaves)} leaves"
    for leaf, their_leaf in zip(leaves, their_leaves, strict=True):
        np.testing.assert_allclose(leaf, their_leaf, rtol=tol[0], atol=tol[1], err_msg=err)


# ------------------------------------------------------------------------------------------
# Trajectories (TOLD, REPLAYED, THEIRS)


@dataclasses.dataclass(frozen=True)
class Field:
    """A quantity that must agree: ``ours`` of evolax's state, ``theirs`` of the reference's
    (attribute names or functions of the state; ``theirs`` is ``ours`` unless given), within
    ``tol`` (the row's unless given), from generation ``since`` on."""

    ours: str | Callable[[Any], Any]
    theirs: str | Callable[[Any], Any] | None = None
    tol: Tolerance | None = None
    since: int = 0

    def assert_agrees(self, state, their_state, tol: Tolerance, err: str) -> None:
        theirs = self.ours if self.theirs is None else self.theirs
        assert_close(read(self.ours, state), read(theirs, their_state), self.tol or tol, err)


def read(what: str | Callable[[Any], Any], state):
    return getattr(state, what) if isinstance(what, str) else what(state)


def assert_fields(fields: Iterable[Field], state, their_state, tol, err: str, step: int = 0):
    for field in fields:
        if step >= field.since:
            field.assert_agrees(state, their_state, tol, err)


@dataclasses.dataclass(frozen=True)
class Sample:
    """A population and the state its ``ask`` returned: ``population``, or any attribute of
    the state, for :attr:`Trajectory.asked`."""

    population: Any
    state: Any

    def __getattr__(self, name):
        return getattr(self.state, name)


@dataclasses.dataclass(eq=False)
class Run:
    """One run of a trajectory, as the row's hooks see it and change it: both algorithms,
    their current states (``state`` is evolax's before this generation's ``ask``), and this
    generation's keys, population, fitness and results. ``memo`` keeps what a row's hooks
    share between generations."""

    ours: Any
    theirs: Reference
    params: Any
    key: jax.Array
    x0: Any
    state: Any = None
    their_state: Any = None
    step: int = 0
    ask_key: jax.Array | None = None
    tell_key: jax.Array | None = None
    population: Any = None
    asked: Any = None
    their_population: Any = None
    fitness: jax.Array | None = None
    tell_kwargs: dict = dataclasses.field(default_factory=dict)
    new: Any = None
    metrics: dict | None = None
    memo: dict = dataclasses.field(default_factory=dict)

    @property
    def err(self) -> str:
        return f"generation {self.step}"

    def tell_theirs(self, population, fitness, their_state=None, params=None):
        """The reference told ``population`` (``fitness`` negated) from ``their_state``
        (this run's unless given), with this generation's tell key; its new state."""
        their_state = self.their_state if their_state is None else their_state
        params = self.params if params is None else params
        return self.theirs.tell(self.tell_key, population, -fitness, their_state, params)[0]


def folded(key: jax.Array, step: int) -> tuple[jax.Array, jax.Array]:
    """The ``(ask, tell)`` keys of generation ``step``: ``split(fold_in(key, step))``."""
    ask_key, tell_key = jax.random.split(jax.random.fold_in(key, step))
    return ask_key, tell_key


def from_key(first: int) -> Callable[[jax.Array, int], tuple[jax.Array, jax.Array]]:
    """Generation ``step``'s keys: ``split(jax.random.key(first + step))``."""
    return lambda key, step: tuple(jax.random.split(jax.random.key(first + step)))


def init_both(**overrides) -> Callable[[Run], None]:
    """The usual start: both initialised from ``x0`` with the run's key, the reference's state
    with ``overrides`` replaced."""

    def start(run: Run) -> None:
        run.state = run.ours.init(run.key, run.x0)
        run.their_state = run.theirs.init(run.key, run.x0, run.params).replace(**overrides)

    return start


def told_first(
    fitness: Callable[[Any], jax.Array],
    first: Callable[[Any], Any] | None = None,
    tell_key: int = 2,
) -> Callable[[Run], None]:
    """The start of a population-based reference: evolax initialises with key 0, asks with
    key 1 and is told ``fitness`` with ``tell_key`` (``first(ours)``, another evolax
    algorithm, does it where the row's draws only apply later); the reference is
    initialised with key 2 from that evaluated population."""

    def start(run: Run) -> None:
        algo = run.ours if first is None else first(run.ours)
        state = algo.init(jax.random.key(0), run.x0)
        x, state = jax.jit(algo.ask)(jax.random.key(1), state)
        run.state, _ = jax.jit(algo.tell)(jax.random.key(tell_key), state, x, fitness(x))
        run.their_state = run.theirs.init(jax.random.key(2), x, -fitness(x), run.params)

    return start


def mean_moved(state, new) -> float:
    return float(jnp.max(jnp.abs(new.mean - state.mean)))


@dataclasses.dataclass(frozen=True)
class Trajectory:
    """``generations`` generations from ``x0`` for each of ``seeds``. Each generation: the keys
    (``keys(key, step)``); ``sync`` (the reference's state set from evolax's, say); the
    ``ask`` of evolax (``THEIRS``: of the reference), and with ``REPLAYED`` the reference's,
    both samples then agreeing in ``asked``; ``fitness``; ``before_tell``; both tells (the
    reference's by ``tell_theirs``, which tells it evolax's population unless replaced); then
    ``fields`` agree, the update ``moved`` (more than ``1e-3``, where given) and ``check``'s
    value is kept for ``finish``, which is given them all (every seed's) and the last run at
    the end. evolax's ``ask`` is jitted where it replays the reference's draws (``jit_ask``
    says otherwise), its ``tell`` always.

    ``fails_at``: the row shows that the comparison can fail: it must, at that generation."""

    generations: int
    fields: tuple[Field, ...]
    asked: tuple[Field, ...] = ()
    start_fields: tuple[Field, ...] = ()
    x0: Any = None
    seeds: tuple[int, ...] = (0,)
    keys: Callable[[jax.Array, int], tuple[jax.Array, jax.Array]] = folded
    start: Callable[[Run], None] = dataclasses.field(default_factory=init_both)
    sync: Callable[[Run], None] | None = None
    fitness: Callable[[Run], jax.Array] = lambda run: quadratic(run.population)
    before_tell: Callable[[Run], None] | None = None
    tell_theirs: Callable[[Run], Any] = lambda run: run.tell_theirs(run.population, run.fitness)
    moved: Callable[[Any, Any], float] | None = mean_moved
    check: Callable[[Run], Any] | None = None
    finish: Callable[[list, Run], None] | None = None
    jit_ask: bool | None = None
    fails_at: int | None = None


def trajectory(row: Row) -> None:
    how: Trajectory = row.how
    kept = []
    for seed in how.seeds:
        ours = row.ours()
        with allow():
            theirs = row.theirs(ours)
            params = row.params(theirs, ours)
        x0 = X0 if how.x0 is None else how.x0
        run = Run(ours, Reference(theirs), params, jax.random.key(seed), x0)
        how.start(run)
        assert_fields(how.start_fields, run.state, run.their_state, row.tol, "start")
        jit_ask = row.draws is Draws.REPLAYED if how.jit_ask is None else how.jit_ask
        ask, tell = jax.jit(ours.ask) if jit_ask else ours.ask, jax.jit(ours.tell)
        for step in range(how.generations):
            run.step, (run.ask_key, run.tell_key) = step, how.keys(run.key, step)
            if how.sync is not None:
                how.sync(run)
            if row.draws is Draws.THEIRS:
                their_ask = run.theirs.ask(run.ask_key, run.their_state, params)
                (run.population, run.their_state), run.asked = their_ask, run.state
            else:
                run.population, run.asked = ask(run.ask_key, run.state)
            if row.draws is Draws.REPLAYED:
                run.their_population, run.their_state = run.theirs.ask(
                    run.ask_key, run.their_state, params
                )
                ours_sample = Sample(run.population, run.asked)
                their_sample = Sample(run.their_population, run.their_state)
                assert_fields(how.asked, ours_sample, their_sample, row.tol, run.err)
            run.fitness, run.tell_kwargs = how.fitness(run), {}
            if how.before_tell is not None:
                how.before_tell(run)
            run.new, run.metrics = tell(
                run.tell_key, run.asked, run.population, run.fitness, **run.tell_kwargs
            )
            run.their_state = how.tell_theirs(run)
            assert_fields(how.fields, run.new, run.their_state, row.tol, run.err, step)
            if how.moved is not None:
                assert how.moved(run.state, run.new) > 1e-3, f"{run.err}: nothing moved"
            kept.append(None if how.check is None else how.check(run))
            run.state = run.new
    if how.finish is not None:
        how.finish(kept, run)


# ------------------------------------------------------------------------------------------
# Outputs (INPUTS)


@dataclasses.dataclass(frozen=True)
class Outputs:
    """``pairs(ours, theirs)`` yields ``(what, evolax's value, the reference's, tol)`` computed
    from the same inputs (``tol`` ``None``: the row's)."""

    pairs: Callable[[Any, Any], Iterable[tuple[str, Any, Any, Tolerance | None]]]


def outputs(row: Row) -> None:
    ours = row.ours()
    with allow():
        theirs = row.theirs(ours)
    for what, value, their_value, tol in row.how.pairs(ours, theirs):
        assert_close(value, their_value, tol or row.tol, what)


# ------------------------------------------------------------------------------------------
# Final precisions (SEEDS)


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What evolax's and the reference's final precisions (``f - f*``: medians over the seeds,
    or each seed's pair) must show."""

    describe: str
    holds: Callable[[float, float], bool]


def both_solve(target: float) -> Outcome:
    return Outcome(f"both below {target:g}", lambda ours, theirs: max(ours, theirs) < target)


def only_ours(target: float, theirs_above: float) -> Outcome:
    return Outcome(
        f"evolax below {target:g}, the reference above {theirs_above:g}",
        lambda ours, theirs: ours < target and theirs > theirs_above,
    )


def ahead(factor: float) -> Outcome:
    return Outcome(f"evolax {factor:g} times closer", lambda ours, theirs: ours < theirs / factor)


def on_par(factor: float, solved: float = 0.0) -> Outcome:
    """Within ``factor`` of each other, precisions below ``solved`` counting as solved."""
    return Outcome(
        f"within a factor {factor:g}",
        lambda ours, theirs: 1 / factor < (ours + solved) / (theirs + solved) < factor,
    )


def not_worse(factor: float, floor: float = 1e-8) -> Outcome:
    """One-sided: evolax at most ``factor`` times further, precisions floored at ``floor``
    (COCO's last target: both count as solved below it)."""
    return Outcome(
        f"evolax at most {factor:g} times further",
        lambda ours, theirs: max(ours, floor) <= factor * max(theirs, floor),
    )


@dataclasses.dataclass(frozen=True)
class Protocol:
    """How both are run on a BBOB function: ``ours(algorithm, precision)`` and
    ``theirs(make, precision)`` give the best ``f - f*`` per seed."""

    ours: Callable[[Any, Precision], np.ndarray]
    theirs: Callable[[Callable[..., Any], Precision], np.ndarray]


@dataclasses.dataclass(frozen=True)
class Precision:
    """BBOB ``function`` (instance 1) in ``dim`` dimensions, ``budget`` generations (EvoX:
    evaluations), ``seeds`` seeds; the row's outcome must hold of the medians, or with
    ``each`` of every seed's pair."""

    protocol: Protocol
    function: int
    dim: int
    budget: int
    seeds: int = 1
    each: bool = False


def precision(row: Row) -> None:
    how: Precision = row.how
    ours = how.protocol.ours(row.ours(), how)
    theirs = how.protocol.theirs(row.theirs, how)
    print(f"{row.name}: evolax {ours}, reference {theirs}")
    pairs = zip(ours, theirs, strict=True) if how.each else [(np.median(ours), np.median(theirs))]
    for value, their_value in pairs:
        assert row.tol.holds(value, their_value), (
            f"{row.tol.describe}: evolax {np.sort(ours)}, reference {np.sort(theirs)}"
        )


def best_after(algo, problem, generations, key, params=None):
    """The best ``f - f*`` seen in ``generations`` generations from 0 with the algorithm's
    defaults, for an evolax algorithm or, with its ``params``, an evosax one (which minimises
    ``f - f*`` and keeps its own best). Jit it with ``static_argnums=(0, 2)``."""
    ours = params is None

    def generation(state, key):
        ask_key, tell_key = jax.random.split(key)
        if ours:
            population, state = algo.ask(ask_key, state)
            state, _ = algo.tell(tell_key, state, population, problem.fitness(population))
        else:
            population, state = algo.ask(ask_key, state, params)
            state, _ = algo.tell(tell_key, population, problem.delta_f(population), state, params)
        return state, None

    zeros = jnp.zeros(problem.dim)
    state = algo.init(key, zeros) if ours else algo.init(key, zeros, params)
    state, _ = jax.lax.scan(generation, state, jax.random.split(key, generations))
    return -state.best_fitness if ours else state.best_fitness


def from_zero_ours(algorithm, how: Precision) -> np.ndarray:
    problem = bbob_problem(how.function, how.dim)
    run = jax.jit(best_after, static_argnums=(0, 2))
    keys = [jax.random.key(seed) for seed in range(how.seeds)]
    return np.array([float(run(algorithm, problem, how.budget, key)) for key in keys])


def from_zero_theirs(make, how: Precision) -> np.ndarray:
    problem = bbob_problem(how.function, how.dim)
    run = jax.jit(best_after, static_argnums=(0, 2))
    keys = [jax.random.key(seed) for seed in range(how.seeds)]
    with allow():
        theirs = make()
        params = theirs.default_params
        return np.array([float(run(theirs, problem, how.budget, key, params)) for key in keys])


FROM_ZERO = Protocol(from_zero_ours, from_zero_theirs)
"""evosax's distribution algorithms: both start at 0 with their defaults, seed ``s`` is key
``s`` for ``init`` and the generations (:func:`best_after`)."""

SPREAD = 2.0
"""The initial spread of :data:`FROM_POPULATION`: evosax's first population is ``SPREAD *
N(0, I)``; evolax's rows draw theirs with ``init_std = SPREAD``."""


def from_population_ours(algorithm, how: Precision) -> np.ndarray:
    problem = bbob_problem(how.function, how.dim)

    @jax.jit
    def run(key):
        init_key, key = jax.random.split(key)
        state = algorithm.init(init_key, jnp.zeros(how.dim))

        def generation(state, key):
            ask_key, tell_key = jax.random.split(key)
            x, state = algorithm.ask(ask_key, state)
            return algorithm.tell(tell_key, state, x, -problem.delta_f(x))[0], None

        state, _ = jax.lax.scan(generation, state, jax.random.split(key, how.budget))
        return -state.best_fitness

    return np.array([run(key) for key in jax.random.split(jax.random.key(0), how.seeds)])


def from_population_theirs(make, how: Precision) -> np.ndarray:
    problem = bbob_problem(how.function, how.dim)
    with allow():
        theirs = make()
        params = theirs.default_params

    @jax.jit
    def run(key):
        init_key, key = jax.random.split(key)
        x = SPREAD * jax.random.normal(init_key, (theirs.population_size, how.dim))
        state = theirs.init(init_key, x, problem.delta_f(x), params)

        def generation(state, key):
            ask_key, tell_key = jax.random.split(key)
            x, state = theirs.ask(ask_key, state, params)
            return theirs.tell(tell_key, x, problem.delta_f(x), state, params)[0], None

        state, _ = jax.lax.scan(generation, state, jax.random.split(key, how.budget))
        return state.best_fitness

    with allow():
        return np.array([run(key) for key in jax.random.split(jax.random.key(0), how.seeds)])


FROM_POPULATION = Protocol(from_population_ours, from_population_theirs)
"""evosax's population-based algorithms, whose ``init`` takes an evaluated population: it gets
``SPREAD * N(0, I)`` around 0, evolax draws its own first generation; seed ``s`` is the
``s``-th key of ``split(key(0), seeds)``."""


def evolax_precisions(algorithm, how: Precision) -> np.ndarray:
    """``[seeds]``: the best ``f - f_opt`` evolax's ``algorithm`` reached on BBOB
    ``function`` (instance 1) within ``budget`` evaluations (whole generations), as
    :func:`evolax.coco.bbob_runs` runs it (``x0 ~ U[-4, 4]^d``, ``init_std = 1``)."""
    runs = bbob_runs(
        algorithm, how.dim, functions=[how.function], seeds=how.seeds, budget=how.budget / how.dim
    )
    return runs.precision[0, :, -1]


def evox_precisions(make, how: Precision) -> np.ndarray:
    """``[seeds]``: the best ``f - f_opt`` an EvoX algorithm ``make(lb=, ub=)`` (``torch``
    bounds ``[-5, 5]^d``, COCO's box) reached within ``budget`` evaluations: the run stops
    after the step that reaches them. Seed ``s`` seeds ``torch`` and its population, replaced
    by ``x0 + N(0, I)`` with ``x0 ~ U[-4, 4]^d`` as evolax's (EvoX's own initial population is
    uniform in the box)."""
    import torch

    with jax.enable_x64(True):
        problem = bbob_problem(how.function, how.dim, 1)
        delta_f = jax.jit(lambda x: problem.delta_f(x))
        best = np.full(how.seeds, np.inf)
        for seed in range(how.seeds):
            torch.manual_seed(seed)
            rng = np.random.default_rng(seed)
            algorithm = make(lb=torch.full((how.dim,), -5.0), ub=torch.full((how.dim,), 5.0))
            x0 = rng.uniform(-4.0, 4.0, how.dim)
            start = x0 + rng.standard_normal((algorithm.pop_size, how.dim))
            algorithm.pop = torch.tensor(start, dtype=torch.float32)
            spent = 0

            def evaluate(population, seed=seed):
                nonlocal spent
                values = np.asarray(delta_f(population.detach().cpu().numpy().astype(np.float64)))
                spent += values.shape[0]
                best[seed] = min(best[seed], float(values.min()))
                return torch.tensor(values, dtype=population.dtype)

            algorithm.evaluate = evaluate
            algorithm.init_step()
            while spent < how.budget:
                algorithm.step()
    return best


EVOX = Protocol(evolax_precisions, evox_precisions)
"""EvoX draws its random numbers inside ``step`` with ``torch``'s generator, so nothing can be
replayed: both start from the same distribution (:func:`evox_precisions`) and spend the same
evaluations. ``nox -s slow`` installs ``evox`` and the CPU build of ``torch`` (the
``reference-torch`` extra); only these rows import them."""


# ------------------------------------------------------------------------------------------
# Mappings shared with the algorithms' own files


X0 = {"b": jnp.array([0.5, -1.0]), "w": jnp.arange(6.0).reshape(3, 2) / 4}
"""The start genome of the update-by-update comparisons with evosax (``D = 8``)."""


def flat(population):
    """Each member of a pytree population as one vector."""
    return jax.vmap(lambda x: ravel_pytree(x)[0])(population)


def quadratic(population):
    """A fixed random ellipsoid over :data:`X0`'s 8 parameters (or 8-vectors), maximised at a
    random target: no ties between samples (evosax ranks ties by average rank, evolax by
    position)."""
    rng = np.random.default_rng(0)
    scales = jnp.asarray(rng.uniform(0.5, 3.0, 8), jnp.float32)
    target = jnp.asarray(rng.normal(size=8), jnp.float32)
    return -jnp.sum(scales[None] * (flat(population) - target[None]) ** 2, axis=1)


def to_norm_dim(dim: int):
    """evosax's (and the ASEBO authors' code's) rescaling of the gradient to norm ``D``, as an
    optax transformation chained before evolax's optimizer."""
    return optax.stateless(lambda u, params: u / (jnp.linalg.norm(u) / dim + 1e-8))


def asebo_projector(algo, state):
    """The projector ``U U^T`` on ASEBO's active subspace (evosax's ``UUT``)."""
    basis = state.basis * algo.active(state)[:, None]
    return basis.T @ basis


def authors_cosine(num_step):
    """Diffusion Evolution authors' ``DDIMSchedulerCosine``'s ``alpha``, clean first:
    ``(cos(linspace(0, pi, T)) + 1) / 2``."""
    return (jnp.cos(jnp.linspace(0.0, jnp.pi, num_step)) + 1.0) / 2.0


LES_LAYERS = {
    "recomb_weights": ("recombination.key", "recombination.query", "recombination.value"),
    "lrate_modulation": ("lr.hidden", "lr.mean", "lr.std"),
}
"""evosax's ``LearnedES`` networks and their ``Dense_i`` layers in evolax's names: evolax's
``recombination.{key,query,value}`` are ``recomb_weights``'s ``Dense_0, 1, 2``
(``AttentionWeights``: keys, queries, values, in that call order), ``lr.{hidden,mean,std}``
``lrate_modulation``'s (``EvoPathMLP``); ``kernel``/``bias`` keep their names and shapes."""


def les_to_evosax(weights):
    """evolax's LES ``{name: array}`` as evosax's ``{network: {"params": {Dense_i: ...}}}``."""
    return {
        net: {
            "params": {
                f"Dense_{i}": {
                    leaf: jnp.asarray(weights[f"{prefix}.{leaf}"]) for leaf in ("kernel", "bias")
                }
                for i, prefix in enumerate(prefixes)
            }
        }
        for net, prefixes in LES_LAYERS.items()
    }


def les_from_evosax(tree):
    """evosax's LES parameter tree in evolax's names."""
    return {
        f"{prefix}.{leaf}": np.asarray(tree[net]["params"][f"Dense_{i}"][leaf])
        for net, prefixes in LES_LAYERS.items()
        for i, prefix in enumerate(prefixes)
        for leaf in ("kernel", "bias")
    }
