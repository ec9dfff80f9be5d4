"""LGA against evosax 0.3.2's ``LearnedGA`` given the SAME network parameters (slow).

There is no published reference of the paper's LGA (its checkpoint was never released), so
the check is of the architecture and the update: evolax's parameters are mapped into evosax's
flax modules, both start from the same evaluated population, evolax asks, both are told the
SAME children (evosax the negated fitness) with the same key, and after every generation the
children's mutation strengths (``ask``) and the parents, their fitness, mutation strengths
and ages (``tell``) agree. Both draw the parents of the children with
``jax.random.choice(split(key)[0], ..., p)`` and the selection with
``jax.random.categorical(key, ...)``, so equal networks give equal draws. It runs with three
sets of weights (evolax's shipped ones, evosax's own ``2023_04_lga_v4.pkl`` mapped into
evolax's names, random ones), and each network alone on random inputs.

Mappings: evolax ``sampling``/``mutation`` (attention ``query, key, value, out``) and
``sampling.logit``/``mutation.log_var`` are evosax ``sampling``/``mutation``'s
``MultiHeadSelfAttention_0`` and ``Dense_0``; ``selection`` (attention) and
``selection.query_s``/``selection.key_s`` are evosax ``selection``'s
``MultiHeadCrossAttention_0``, ``Dense_0`` and ``Dense_1``. ``pop_size`` is
``population_size`` (evosax's ``elite_ratio`` is 1: as many parents as children);
``init_std`` is ``std_init`` (1.0); evosax's mutation features are its ``SYMMETRIC``
encoding (``std`` scaled to ``[-1, 1]``, what it uses for parameters passed in; its own v4
checkpoint was trained with the ``LEGACY_2023`` encoding, ``+2``, which evolax does not
offer). evolax's first ``ask``/``tell`` (``x0 + init_std N(0, I)``, evaluated) is evosax's
``init`` with that population and fitness.

Two conventions differ and are aligned by patching evosax's state after each tell:

* evosax's "improved" feature compares with ``best_fitness_shaped``, which it sets only
  from the parents *kept after selection* and leaves at ``+inf`` after ``init`` (so right
  after ``init`` every parent counts as an improvement); the paper's feature, and evolax's,
  compares with the best fitness found so far. :func:`test_lga_matches_evosax` shows
  evosax's ``+inf`` and sets ``best_fitness_shaped`` to evolax's best-ever.
* evosax counts generations from its ``init``, evolax from the first ``tell`` (which
  evaluates that population), one more; the age feature ``tanh(age / generation - 1)``
  reads evolax's count in both.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.learned.common import initial_weights, load_weights
from evolax.algorithms.learned.lga import (
    LGA,
    LGA_SHAPES,
    mutation_strengths,
    sampling_probabilities,
    selection_logits,
)
from helpers import X0, quadratic

evosax = pytest.importorskip("evosax")
from evosax.algorithms import LearnedGA  # noqa: E402
from evosax.learned_evolution.lga_tools import (  # noqa: E402
    MutationAttention,
    MutationFeatureEncoding,
    SamplingAttention,
    SelectionAttention,
)

pytestmark = pytest.mark.slow

MODULES = {
    "sampling": {"MultiHeadSelfAttention_0": "sampling", "Dense_0": "sampling.logit"},
    "mutation": {"MultiHeadSelfAttention_0": "mutation", "Dense_0": "mutation.log_var"},
    "selection": {
        "MultiHeadCrossAttention_0": "selection",
        "Dense_0": "selection.query_s",
        "Dense_1": "selection.key_s",
    },
}
PARTS = ("query", "key", "value", "out")
LEAVES = ("kernel", "bias")
RTOL, ATOL = 2e-5, 2e-6


def to_evosax(weights):
    """evolax's ``{name: array}`` as evosax's ``{network: {"params": {module: ...}}}``."""
    tree = {}
    for net, modules in MODULES.items():
        params = {}
        for module, prefix in modules.items():
            if module.startswith("MultiHead"):
                params[module] = {
                    part: {leaf: jnp.asarray(weights[f"{prefix}.{part}.{leaf}"]) for leaf in LEAVES}
                    for part in PARTS
                }
            else:
                params[module] = {leaf: jnp.asarray(weights[f"{prefix}.{leaf}"]) for leaf in LEAVES}
        tree[net] = {"params": params}
    return tree


def from_evosax(tree):
    """evosax's parameter tree in evolax's names."""
    weights = {}
    for net, modules in MODULES.items():
        for module, prefix in modules.items():
            layer = tree[net]["params"][module]
            if module.startswith("MultiHead"):
                for part in PARTS:
                    for leaf in LEAVES:
                        weights[f"{prefix}.{part}.{leaf}"] = np.asarray(layer[part][leaf])
            else:
                for leaf in LEAVES:
                    weights[f"{prefix}.{leaf}"] = np.asarray(layer[leaf])
    return weights


def weights(which):
    if which == "shipped":
        return load_weights("lga")
    if which == "evosax-2023-04-v4":
        return from_evosax(LearnedGA(population_size=4, solution=X0).lga_params)
    return initial_weights(jax.random.key(3), LGA_SHAPES)


WHICH = ["shipped", "evosax-2023-04-v4", "random"]


@pytest.mark.parametrize("which", WHICH)
def test_networks_match_evosax(which):
    params = weights(which)
    theirs = to_evosax(params)
    rng = np.random.default_rng(0)
    parents = jnp.asarray(rng.normal(size=(16, 4)), jnp.float32)
    np.testing.assert_allclose(
        sampling_probabilities(params, parents, jnp.ones(16, bool)),
        SamplingAttention(2, 16).apply(theirs["sampling"], parents),
        rtol=RTOL,
        atol=1e-7,
    )
    features = jnp.asarray(rng.normal(size=(16, 3)), jnp.float32)
    std = jnp.asarray(rng.uniform(0.1, 2.0, 16), jnp.float32)
    mutation = MutationAttention(2, 16, feature_encoding=MutationFeatureEncoding.SYMMETRIC)
    np.testing.assert_allclose(
        mutation_strengths(params, std, features),
        mutation.apply(theirs["mutation"], std[:, None], features)[:, 0],
        rtol=RTOL,
        atol=ATOL,
    )
    children = jnp.asarray(rng.normal(size=(16, 3)), jnp.float32)
    logits = selection_logits(params, children, features)
    for seed in range(5):  # evosax returns the sampled mask: compare the draws
        key = jax.random.key(seed)
        mask = SelectionAttention(2, 16).apply(theirs["selection"], key, children, features)
        choice = jax.random.categorical(key, jnp.concatenate([logits, jnp.ones((16, 1))], 1), 1)
        expected = jax.nn.one_hot(choice, 17)[:, :16]
        np.testing.assert_array_equal(mask, expected)


@pytest.mark.parametrize("which", WHICH)
def test_lga_matches_evosax(which):
    params = weights(which)
    pop = 16
    ours = LGA(pop_size=pop, params=params)
    theirs = LearnedGA(population_size=pop, solution=X0, params=to_evosax(params))
    their_params = theirs.default_params
    assert their_params.std_init == 1.0 == ours.init_std and theirs.num_elites == pop
    assert theirs.mutation_feature_encoding is MutationFeatureEncoding.SYMMETRIC
    key = jax.random.key(0)
    state = ours.init(key, X0)
    population, state = ours.ask(key, state)
    fitness = quadratic(population)
    state, _ = ours.tell(key, state, population, fitness)
    with jax.numpy_rank_promotion("allow"):
        their_state = theirs.init(key, population, -fitness, their_params)
    assert float(their_state.best_fitness_shaped) == np.inf  # every parent "improves" on it

    def aligned(their_state, state):
        return their_state.replace(
            best_fitness_shaped=-state.best_fitness, generation_counter=state.generation
        )

    their_state = aligned(their_state, state)
    tell = jax.jit(ours.tell)
    replaced = []
    for step in range(6):
        ask_key, tell_key = jax.random.split(jax.random.fold_in(key, step))
        population, asked = ours.ask(ask_key, state)
        with jax.numpy_rank_promotion("allow"):
            _, their_asked = theirs.ask(ask_key, their_state, their_params)
        err = f"generation {step}"
        np.testing.assert_allclose(asked.child_std, their_asked.std_C, rtol=RTOL, err_msg=err)
        fitness = quadratic(population)
        new, _ = tell(tell_key, asked, population, fitness)
        with jax.numpy_rank_promotion("allow"):
            their_state, _ = theirs.tell(tell_key, population, -fitness, their_asked, their_params)
        np.testing.assert_array_equal(new.population, their_state.population, err_msg=err)
        np.testing.assert_array_equal(new.fitness, -their_state.fitness, err_msg=err)
        np.testing.assert_allclose(new.std, their_state.std, rtol=RTOL, err_msg=err)
        np.testing.assert_array_equal(new.age, their_state.age, err_msg=err)
        replaced.append(int(np.sum(np.asarray(new.age) == 0)))
        state, their_state = new, aligned(their_state, new)
    assert 0 < sum(replaced) < 6 * pop  # selection both kept and replaced parents
