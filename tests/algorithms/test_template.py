"""The template's promises, for every exported algorithm under each of its boolean options and
in float32 and float64: the fitness rule (NaN, -inf and +inf never reach the state or the
best-ever), the skipped all-NaN generation, the standard metrics, and a single compile."""

import inspect

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import evolax.algorithms as algorithms
from evolax.algorithms import Algorithm
from evolax.policies import NEATNetwork
from evolax.qd import GridArchive, UnstructuredArchive
from evolax.seeded import densify

REQUIRED = {
    "MAPElites": dict(grid_shape=(4, 4), descriptor_low=(-1.0, -1.0), descriptor_high=(1.0, 1.0)),
    "CVTMAPElites": dict(n_cells=16, descriptor_low=(-1.0, -1.0), descriptor_high=(1.0, 1.0)),
    "ArchiveMAPElites": dict(archive=UnstructuredArchive(16, n_desc=2, min_distance=0.1)),
    "CMAME": dict(
        archive=GridArchive((4, 4), (-1.0, -1.0), (1.0, 1.0)),
        emitters=("improvement", "random_direction"),
    ),
    "MEES": dict(pop_size=9, archive=UnstructuredArchive(16, n_desc=2, min_distance=0.1)),
    "CMAMAE": dict(
        grid_shape=(4, 4), descriptor_low=(-1.0, -1.0), descriptor_high=(1.0, 1.0), n_emitters=2
    ),
    "DominatedNoveltySearch": dict(
        grid_shape=(4, 4), descriptor_low=(-1.0, -1.0), descriptor_high=(1.0, 1.0)
    ),
    "MOME": dict(
        n_objectives=2,
        grid_shape=(4, 4),
        descriptor_low=(-1.0, -1.0),
        descriptor_high=(1.0, 1.0),
        reference_point=(-100.0, -100.0),
    ),
    "MTMAPElites": dict(task_params=jnp.linspace(0.0, 1.0, 8).reshape(4, 2)),
    "CoDE": dict(pop_size=18),  # three trials for each of 6 members (rand/2 draws 5 others)
    "MOEAD": dict(n_objectives=2),
    "NSGA2": dict(n_objectives=2),
    "NSGA3": dict(n_objectives=2),
    "SMSEMOA": dict(n_objectives=2),
}
"""Constructor arguments an algorithm needs besides (or instead of) ``pop_size = POP``."""

POP = 8
GENOME = {"w": jnp.full((4, 4), 0.5), "b": jnp.linspace(-1.0, 1.0, 4)}  # D = 20
OWN_GENOME = {"NEAT": lambda: NEATNetwork(max_nodes=6, max_conns=8).init(None, (2,), (1,))}
"""Algorithms that evolve their own genome type, and a start genome of it."""
MATHS = ("_init", "_ask_population", "_tell_population")
"""What the public methods trace, once per configuration however many instances call them."""


def floats(tree) -> np.ndarray:
    """A genome's (or population's, leaf by leaf flattened) floating-point entries: what the
    fitness and the checks read (a NEAT genome's integer ids are structure)."""
    return np.concatenate(
        [np.ravel(v) for v in jax.tree.leaves(tree) if jnp.issubdtype(v.dtype, jnp.floating)]
    )


def exported_algorithms() -> list[type[Algorithm]]:
    return sorted(
        (
            cls
            for cls in vars(algorithms).values()
            if isinstance(cls, type)
            and issubclass(cls, Algorithm)
            and not getattr(cls, "__abstractmethods__", None)
        ),
        key=lambda cls: cls.__name__,
    )


SIBLINGS = {
    "IAMaLGaMUnivariate": "IAMaLGaMFull",
    "SVOpenES": "SVCMAES",
    "NoiseReuseES": "PersistentES",
    "SAMRGA": "MR15GA",
    "GESMRGA": "MR15GA",
    "SHADE": "JADE",
    "SaDE": "CoDE",
    "CSO": "CLPSO",
    "SLPSO": "CLPSO",
    "RandomSearch": "HillClimbing",
    "SimulatedAnnealing": "HillClimbing",
    "GradientlessDescent": "HillClimbing",
    "XNES": "SNES",
    "RmES": "MAES",
}
"""Algorithms whose family member (the value) runs in the default suite, their state and
non-finite handling shared: they, and every algorithm's flipped boolean options, run in
`nox -s slow` to keep the default suite under 12 minutes on 2 cores (as
tests/algorithms/test_registry.py's siblings)."""

# flipped options that change which individuals are kept or how fitness is read: the default
# suite keeps them (the others change the update's arithmetic only)
KEPT_OPTIONS = {("JADE", "archive"), ("IAMaLGaMFull", "elitist")}


def variants():
    """Each algorithm with its defaults, then with each boolean option flipped."""
    for cls in exported_algorithms():
        kwargs = {"pop_size": POP} | REQUIRED.get(cls.__name__, {})
        # NEAT's own genomes: its variants (a compile each) in nox -s slow
        own = cls.__name__ in OWN_GENOME or cls.__name__ in SIBLINGS
        yield pytest.param(cls, kwargs, id=cls.__name__, marks=[pytest.mark.slow] * own)
        for name, parameter in inspect.signature(cls).parameters.items():
            if isinstance(parameter.default, bool):  # custom __init__s included
                flipped = kwargs | {name: not parameter.default}
                slow = own or (cls.__name__, name) not in KEPT_OPTIONS
                marks = [pytest.mark.slow] * slow
                yield pytest.param(cls, flipped, id=f"{cls.__name__}-{name}", marks=marks)


def test_every_exported_algorithm_is_covered():
    names = {cls.__name__ for cls in exported_algorithms()}
    assert len(names) >= 26, names
    assert set(SIBLINGS) | set(SIBLINGS.values()) <= names  # a renamed one is not lost


def sphere(population):
    leaves = jax.tree.leaves(densify(population))  # a population held as seeds: its members
    leaves = [leaf for leaf in leaves if jnp.issubdtype(leaf.dtype, jnp.floating)]
    return -sum(jnp.sum(leaf.reshape(leaf.shape[0], -1) ** 2, axis=1) for leaf in leaves)


def objectives(algo, population, values=None):
    """The sphere as the fitness (``[pop]``), or, for ``m`` objectives, ``m`` increasing
    functions of it (``[pop, m]``, so their sum ranks as the sphere does); ``values`` replace
    it (the first objective) where they are not finite."""
    f = sphere(population)
    if values is not None:
        f = jnp.where(jnp.isfinite(values), f, jnp.asarray(values, f.dtype))
    if not algo.objectives_shape:
        return f
    others = [sphere(population) * (k + 1) + k for k in range(1, algo.objectives_shape[0])]
    return jnp.stack([f, *others], axis=1)


def score(fitness):
    """The scalar the template ranks the best-ever by: the fitness, or its objectives' sum."""
    return fitness if fitness.ndim == 1 else fitness.sum(axis=1)


def extra_inputs(algo, key):
    given = {
        "descriptors": lambda: jax.random.uniform(key, (algo.pop_size, 2), minval=-1, maxval=1),
        "surrogate_gradient": lambda: jax.tree.map(lambda x: -2 * x, GENOME),  # the sphere's
    }
    return {name: given[name]() for name in algo.extra_inputs}


def sound(tree) -> bool:
    """No NaN and no +inf in any floating leaf (``-inf`` marks unevaluated fitness)."""
    return all(
        not np.any(np.isnan(leaf)) and not np.any(leaf == np.inf)
        for leaf in map(np.asarray, jax.tree.leaves(tree))
        if np.issubdtype(leaf.dtype, np.floating)
    )


PATTERNS = {
    "nan": [np.nan, 1.0, 2.0, np.nan, 0.5, -1.0, 3.0, 0.0],
    "plus_inf": [np.inf, 1.0, 2.0, 0.0, 0.5, -1.0, 3.0, np.inf],
    "minus_inf": [-np.inf, 1.0, -np.inf, 0.0, 0.5, -1.0, 3.0, 0.0],
    "mixed": [np.nan, np.inf, -np.inf, 0.0, 0.5, -1.0, 3.0, 0.0],
}


@pytest.mark.parametrize(
    "x64", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["f32", "f64"]
)  # float64: nox -s slow
@pytest.mark.parametrize(("cls", "kwargs"), list(variants()))
def test_fitness_rule(cls, kwargs, x64, monkeypatch):
    # each call on a fresh instance built from the same arguments, eagerly: the methods'
    # maths are traced once for all of them (one compilation per configuration)
    chex.clear_trace_counter()
    for name in MATHS:
        monkeypatch.setattr(cls, name, chex.assert_max_traces(getattr(cls, name), n=1))
    with jax.enable_x64(x64):
        dtype = jnp.float64 if x64 else jnp.float32
        algo = cls(**kwargs)
        if cls.__name__ in OWN_GENOME:  # floats in the run's precision, integers kept
            x0 = jax.tree.map(
                lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x,
                OWN_GENOME[cls.__name__](),
            )
        else:
            x0 = jax.tree.map(lambda x: jnp.asarray(x, dtype), GENOME)
        key = jax.random.key(0)

        def tell(*args, **extra):
            return cls(**kwargs).tell(*args, **extra)

        def ask(*args):
            return cls(**kwargs).ask(*args)

        state = cls(**kwargs).init(key, x0)
        # two clean generations first, so population algorithms hold evaluated members
        for k in jax.random.split(key, 2):
            population, state = ask(k, state)
            state, _ = tell(
                k, state, population, objectives(algo, population), **extra_inputs(algo, k)
            )

        for name, pattern in PATTERNS.items():
            population, asked = ask(jax.random.key(7), state)
            values = np.resize(pattern, algo.pop_size)  # the pattern repeated
            fitness = objectives(algo, population, values.astype(dtype))
            new, metrics = tell(key, asked, population, fitness, **extra_inputs(algo, key))
            assert sound(new), (name, new)
            assert int(metrics["nonfinite"]) == int(np.sum(~np.isfinite(values))), name
            assert float(metrics["skipped"]) == 0.0, name
            # the best-ever is never an individual whose fitness was not finite
            best, genome = floats(algo.best(new)), floats(new.best_genome)
            flat = np.concatenate(
                [
                    np.reshape(v, (algo.pop_size, -1))
                    for v in jax.tree.leaves(densify(population))
                    if jnp.issubdtype(v.dtype, jnp.floating)
                ],
                axis=1,
            )
            previous = floats(state.best_genome)
            for row in flat[~np.isfinite(values)]:
                if np.array_equal(row, previous):
                    continue  # an elite: the best-ever genome, evaluated again
                assert not np.array_equal(best, row) and not np.array_equal(genome, row), name
            finite_best = float(np.max(np.where(np.isfinite(values), score(fitness), -np.inf)))
            assert float(new.best_fitness) == max(finite_best, float(state.best_fitness)), name
            assert best.dtype == dtype and np.isfinite(best).all(), name

        # a generation with no finite fitness leaves the algorithm's state as it was
        population, asked = ask(jax.random.key(8), state)
        for value in (jnp.nan, -jnp.inf):
            fitness = jnp.full((algo.pop_size, *algo.objectives_shape), value, dtype)
            new, metrics = tell(key, asked, population, fitness, **extra_inputs(algo, key))
            assert float(metrics["skipped"]) == 1.0
            assert int(new.generation) == int(asked.generation) + 1
            kept = new.replace(generation=asked.generation)
            chex.assert_trees_all_equal(kept, asked)


def test_tell_checks_its_inputs():
    algo = algorithms.OpenES(pop_size=4)
    state = algo.init(jax.random.key(0), jnp.zeros(3))
    population, state = algo.ask(jax.random.key(1), state)
    with pytest.raises(ValueError, match=r"fitness must have shape \(pop_size,\) = \(4,\)"):
        algo.tell(jax.random.key(2), state, population, jnp.zeros(5))
    with pytest.raises(ValueError, match="population must hold pop_size = 4 genomes of 3"):
        algo.tell(jax.random.key(2), state, population[:, :2], jnp.zeros(4))
    archive = algorithms.MAPElites(pop_size=4, **REQUIRED["MAPElites"])
    state = archive.init(jax.random.key(0), jnp.zeros(3))
    population, state = archive.ask(jax.random.key(1), state)
    with pytest.raises(ValueError, match=r"MAPElites\.tell needs descriptors"):
        archive.tell(jax.random.key(2), state, population, jnp.zeros(4))


def test_an_optimizer_field_refuses_a_bare_learning_rate():
    """Every exported algorithm with an ``optimizer`` takes an optax transformation; a float
    (the learning rate meant for it) is refused at construction, in one line."""
    with_optimizer = [
        cls for cls in exported_algorithms() if "optimizer" in inspect.signature(cls).parameters
    ]
    assert len(with_optimizer) >= 10, with_optimizer
    for cls in with_optimizer:
        kwargs = {"pop_size": POP} | REQUIRED.get(cls.__name__, {})
        if cls.__name__ == "MEES":
            kwargs["pop_size"] = POP + 1  # odd: pairs and the search point
        cls(**kwargs)
        with pytest.raises(TypeError, match=r"optimizer must be an optax\.GradientTransform"):
            cls(**kwargs | {"optimizer": 0.05})


def test_diagonal_is_jnp_diagonal():
    from evolax.algorithms.base import diagonal

    for shape in [(3, 3), (2, 5), (5, 2), (4, 3, 3), (2, 1, 4)]:
        matrix = jnp.arange(np.prod(shape), dtype=jnp.float32).reshape(shape)
        np.testing.assert_array_equal(
            diagonal(matrix), jnp.diagonal(matrix, axis1=-2, axis2=-1), str(shape)
        )


def per_leaf_health(state) -> bool:
    """The health check as it was written leaf by leaf (one reduction each): no NaN or +inf in
    the vectors, scalars and matrix diagonals of the state, and a positive std."""
    own = [
        leaf if jnp.ndim(leaf) <= 1 else jnp.diagonal(leaf, axis1=-2, axis2=-1)
        for name, value in state.items()
        if name not in ("best_genome", "best_fitness", "generation")
        for leaf in jax.tree.leaves(value)
        if jnp.issubdtype(jnp.asarray(leaf).dtype, jnp.floating)
    ]
    sound = [bool(jnp.all(~jnp.isnan(leaf) & (leaf != jnp.inf))) for leaf in own]
    return all(sound) and bool(jnp.all(state.std > 0))


@pytest.mark.parametrize("name", ["CMAES", "SepCMAES", "OpenES", "SNES", "PGPE"])
def test_the_one_reduction_health_check_is_the_per_leaf_one(name):
    """A NaN, +inf, -inf or 0 put in each float leaf in turn (its first element; a matrix's
    first diagonal element, or an off-diagonal one), and a zero std: the same verdict."""
    algo = getattr(algorithms, name)(pop_size=POP)
    state = algo.init(jax.random.key(0), jnp.zeros(5))
    population, state = algo.ask(jax.random.key(1), state)
    state, _ = algo.tell(jax.random.key(2), state, population, -jnp.sum(population**2, axis=1))
    leaves, treedef = jax.tree.flatten(state)
    cases = 0
    for i, leaf in enumerate(leaves):
        if not jnp.issubdtype(leaf.dtype, jnp.floating):
            continue
        for value in (jnp.nan, jnp.inf, -jnp.inf, 0.0):
            for index in [(0,) * leaf.ndim] + ([(0, 1)] if leaf.ndim == 2 else []):
                broken = list(leaves)
                broken[i] = leaf.at[index].set(value) if leaf.ndim else jnp.asarray(value)
                bad = jax.tree.unflatten(treedef, broken)
                assert bool(algo._healthy(bad)) == per_leaf_health(bad), (name, i, value, index)
                cases += 1
    assert bool(algo._healthy(state)) and per_leaf_health(state)
    assert cases >= 12
