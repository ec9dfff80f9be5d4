"""LGA: the learned genetic algorithm of Lange et al. (2023), "Discovering Attention-Based Genetic
Algorithms via Meta-Black-Box Optimization" (GECCO 2023)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import (
    HIGHEST,
    PopulationAlgorithm,
    PopulationState,
    check_min_pop_size,
    normal,
)
from evolax.algorithms.learned.common import (
    Learned,
    Weights,
    attention,
    attention_shapes,
    dense,
    dense_shapes,
    fitness_features,
    in_dtype,
)
from evolax.types import PRNGKey

HEADS = 2
FEATURES = 16

LGA_SHAPES: dict[str, tuple] = {
    **attention_shapes("sampling", 4, HEADS, FEATURES),
    **dense_shapes("sampling.logit", FEATURES, 1),
    **attention_shapes("mutation", 5, HEADS, FEATURES),
    **dense_shapes("mutation.log_var", FEATURES, 1),
    **attention_shapes("selection", 3, HEADS, FEATURES),
    **dense_shapes("selection.query_s", FEATURES, FEATURES),
    **dense_shapes("selection.key_s", 3, FEATURES),
}
"""The names and shapes of LGA's network parameters (1,906 numbers)."""


@chex.dataclass(frozen=True, kw_only=True)
class LGAState(PopulationState):
    """LGA state: ``population`` holds the parents (``[pop, D]``, every row ``x0`` before the
    first ``tell``) and ``fitness`` theirs (``[pop]``, ``-inf`` before the first ``tell``).

    Attributes:
        std: each parent's mutation strength, ``[pop]``.
        age: generations each parent has survived, ``[pop]``.
        child_std: the mutation strength of each child of the last ``ask``, ``[pop]``.
    """

    std: Float[Array, " pop"]
    age: Float[Array, " pop"]
    child_std: Float[Array, " pop"]


def sampling_probabilities(
    params: Weights, features: Float[Array, "parents 4"], alive: Float[Array, " parents"]
) -> Float[Array, " parents"]:
    """Each parent's probability to be sampled: self-attention over the parents' fitness
    features and age, a dense logit, a softmax over the ``alive`` (finite-fitness) parents."""
    logits = dense(params, "sampling.logit", attention(params, "sampling", features, features))
    return jax.nn.softmax(jnp.where(alive, logits[:, 0], -jnp.inf))


def mutation_strengths(
    params: Weights, std: Float[Array, " n"], features: Float[Array, "n 3"]
) -> Float[Array, " n"]:
    """The children's adapted mutation strengths ``std * exp(log_var / 2)``: self-attention over
    their parents' fitness features, their z-scored ``std`` and ``std`` scaled to ``[-1, 1]``."""
    centred = std - jnp.mean(std)
    z = centred / (jnp.sqrt(jnp.mean(centred**2)) + 1e-10)
    spread = jnp.max(std) - jnp.min(std)
    scaled = 2 * (std - jnp.min(std)) / (spread + 1e-10) - 1
    inputs = jnp.concatenate([features, z[:, None], scaled[:, None]], axis=1)
    log_var = dense(params, "mutation.log_var", attention(params, "mutation", inputs, inputs))
    return std * jnp.exp(0.5 * log_var[:, 0])


def selection_logits(
    params: Weights, children: Float[Array, "n 3"], parents: Float[Array, "parents 3"]
) -> Float[Array, "parents n"]:
    """Row ``i``: the logit of each child replacing parent ``i`` (keeping it has logit 1).
    Each parent attends to the children (cross-attention), and its attended features are
    compared with each child's through dense queries and keys."""
    attended = attention(params, "selection", parents, children)
    queries = dense(params, "selection.query_s", attended)
    keys = dense(params, "selection.key_s", children)
    return jnp.dot(queries, keys.T, precision=HIGHEST) / jnp.sqrt(FEATURES)


class LGA(Learned, PopulationAlgorithm[LGAState]):
    """Learned Genetic Algorithm (Lange, Schaul, Chen, Lu, Zahavy, Dalibard & Flennerhag, 2023,
    "Discovering Attention-Based Genetic Algorithms via Meta-Black-Box Optimization").

    A genetic algorithm of ``pop_size`` parents whose operators are attention layers over
    fitness features (``improved`` over the best so far, centred rank, z-score). ``ask``
    samples ``pop_size`` parents with replacement, with probabilities from a self-attention
    layer over the parents' features and ages (:func:`sampling_probabilities`), adapts each
    child's mutation strength with a second self-attention layer (:func:`mutation_strengths`)
    and mutates: ``x_c = x_parent + std_c N(0, I)``. ``tell`` lets every parent attend to the
    children and draws, per parent, one child to replace it or keeps it (logit 1;
    :func:`selection_logits`); survivors age by one, replacements start at age 0 with their
    mutation strength. Children with non-finite fitness are never selected, and parents with
    non-finite fitness are always replaced.

    Before the first ``tell``, ``ask`` returns ``x0 + init_std N(0, I)`` and the first ``tell``
    takes these children as the parents (evosax's ``init`` with an evaluated population).

    The network parameters (1,906 numbers, :data:`LGA_SHAPES`) default to the weights shipped
    with evolax (the paper's own checkpoint is not published), meta-trained by
    ``benchmarks/meta_train_learned.py`` with evolax's OpenES (32 members, 526 generations,
    31 minutes on 2 CPU cores) on 10 BBOB functions (f1, f4, f6, f8, f11, f15, f16, f17, f19,
    f20) in 2, 5 and 10 dimensions, 16 members, 100 generations, ``init_std = 1`` from
    ``x0 ~ U[-4, 4]^d``. On the 14 held-out BBOB functions (d = 10) they beat OpenES but not
    SNES (``docs/results/learned_es.md``).

    Args:
        pop_size: number of parents and of children, at least 2 (the shipped weights were
            meta-trained with 16).
        init_std: the first mutation strength, positive (evosax's 1.0).
        params: the network parameters: a dict ``{name: array}`` with the names and shapes of
            :data:`LGA_SHAPES`, a path to an ``.npz`` file holding them, or ``None`` for the
            shipped meta-trained weights.
    """

    NAME = "lga"
    SHAPES = LGA_SHAPES

    def __check_init__(self):
        check_min_pop_size(self.pop_size, 2, "to rank members")

    def _init(self, key, x0):
        del key
        std = jnp.full(self.pop_size, self.init_std, x0.dtype)
        return LGAState(
            population=jnp.broadcast_to(x0[None], (self.pop_size, x0.shape[0])),
            fitness=jnp.full(self.pop_size, -jnp.inf, x0.dtype),
            std=std,
            age=jnp.zeros(self.pop_size, x0.dtype),
            child_std=std,
        )

    def parent_choice(self, key: PRNGKey, state: LGAState) -> Int[Array, " pop"]:
        """Each child's parent, drawn with the sampling layer's probabilities."""
        params = in_dtype(self.params, state.population.dtype)
        features = fitness_features(state.fitness, state.best_fitness)
        age = jnp.tanh(state.age / (state.generation + 1e-8) - 1.0)
        features = jnp.concatenate([features, age[:, None]], axis=1)
        alive = state.fitness > -jnp.inf
        alive = alive | ~jnp.any(alive)  # before the first tell (its draw is not used)
        probabilities = sampling_probabilities(params, features, alive)
        return jax.random.choice(key, self.pop_size, (self.pop_size,), p=probabilities)

    def _ask(self, key, state):
        choice_key, noise_key = jax.random.split(key)
        dim = state.population.shape[1]
        eps = normal(noise_key, (self.pop_size, dim), state.population)
        choice = self.parent_choice(choice_key, state)
        params = in_dtype(self.params, state.population.dtype)
        features = fitness_features(state.fitness[choice], state.best_fitness)
        child_std = mutation_strengths(params, state.std[choice], features)
        children = state.population[choice] + child_std[:, None] * eps
        told = jnp.any(state.fitness > -jnp.inf)
        first = state.population[0][None] + self.init_std * eps  # every row is x0
        x = jnp.where(told, children, first)
        return x, state.replace(child_std=jnp.where(told, child_std, self.init_std))

    def _tell(self, key, state, x, fitness):
        params = in_dtype(self.params, x.dtype)
        n = self.pop_size
        features = fitness_features(jnp.concatenate([fitness, state.fitness]), state.best_fitness)
        logits = selection_logits(params, features[:n], features[n:])
        logits = jnp.where(jnp.isfinite(fitness)[None], logits, -jnp.inf)
        keep = jnp.where(state.fitness > -jnp.inf, 1.0, -jnp.inf).astype(logits.dtype)
        choice = jax.random.categorical(key, jnp.concatenate([logits, keep[:, None]], 1), axis=1)
        kept = choice == n
        child = jnp.minimum(choice, n - 1)
        told = jnp.any(state.fitness > -jnp.inf)
        kept = kept & told  # the first tell takes every child as a parent
        child = jnp.where(told, child, jnp.arange(n))
        new_state = state.replace(
            population=jnp.where(kept[:, None], state.population, x[child]),
            fitness=jnp.where(kept, state.fitness, fitness[child]),
            std=jnp.where(kept, state.std, state.child_std[child]),
            age=jnp.where(kept, state.age + 1, 0.0),
        )
        metrics = {"std": jnp.mean(new_state.std), "replaced": jnp.sum(~kept).astype(x.dtype)}
        return new_state, metrics

    def _healthy(self, state):
        """Finite parents and mutation strengths."""
        return jnp.all(jnp.isfinite(state.population)) & jnp.all(jnp.isfinite(state.std))
