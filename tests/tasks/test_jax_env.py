"""The shared parts of the JAX environment family adapters: multi-discrete and masked action
maps, task distributions, and Trainer running each family in one compiled program."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import evolax
from evolax.tasks import ParamSet, UniformParams
from evolax.tasks.spaces import ActionMap


class MultiDiscrete:  # the attributes of gymnax-style MultiDiscrete spaces
    def __init__(self, nvec):
        self.nvec, self.shape, self.dtype = np.asarray(nvec), (len(nvec),), np.int32


def test_multi_discrete_blocks_and_masks():
    actions = ActionMap.from_space(MultiDiscrete([3, 2]), "test")
    assert actions.action_shape == (5,) and actions.env_shape == (2,)
    scores = jnp.array([0.1, 0.9, 5.0, 1.0, 2.0])
    np.testing.assert_array_equal(actions(scores), [2, 1])
    rows = jnp.array([[True, True, False], [True, False, False]])  # one row per component
    np.testing.assert_array_equal(actions(scores, rows), [1, 0])
    joint = jnp.zeros((3, 2), bool).at[0, 0].set(True).at[1, 1].set(True)  # (0,0) or (1,1)
    # block sums: (0, 0) -> 0.1 + 1.0; (1, 1) -> 0.9 + 2.0: the joint argmax is (1, 1)
    np.testing.assert_array_equal(actions(scores, joint), [1, 1])
    np.testing.assert_array_equal(actions(scores, joint.at[1, 1].set(False)), [0, 0])
    assert actions.mask_fits((3, 2)) and actions.mask_fits((2, 3))
    assert not actions.mask_fits((5,))
    with pytest.raises(TypeError, match="1-d vector of positive sizes"):
        ActionMap.from_space(MultiDiscrete([2, 0]), "test")


class Params(eqx.Module):  # stands in for an environment's parameter struct
    gravity: jax.Array
    level: jax.Array

    def replace(self, **changes):
        return eqx.tree_at(lambda p: [getattr(p, k) for k in changes], self, list(changes.values()))


def test_param_set_and_uniform_params():
    params = Params(jnp.float32(9.8), jnp.zeros(2))
    levels = ParamSet(jnp.arange(10.0).reshape(5, 2), replace="level")
    keys = jax.random.split(jax.random.key(0), 200)
    drawn = jax.vmap(lambda k: levels.sample(k, params).level)(keys)
    counts = np.bincount(np.asarray(drawn[:, 0] // 2, int), minlength=5)
    assert counts.min() > 20  # uniform over the five members
    train, held_out = levels.split(3)
    assert train.size == 3 and held_out.size == 2
    np.testing.assert_array_equal(held_out.member(0), [6.0, 7.0])
    gravity = jax.vmap(lambda k: UniformParams({"gravity": (9.0, 10.0)}).sample(k, params))(keys)
    assert 9.0 <= float(gravity.gravity.min()) and float(gravity.gravity.max()) <= 10.0
    np.testing.assert_array_equal(gravity.level, 0.0)  # other fields unchanged
    with pytest.raises(ValueError, match="leading axis"):
        ParamSet({"a": jnp.zeros(3), "b": jnp.zeros(4)})
    with pytest.raises(ValueError, match=r"\(low, high\) pair"):
        UniformParams({"gravity": 9.0})


def make(name):
    from evolax import tasks

    if name == "jumanji":
        return tasks.Jumanji("Snake-v1", max_steps=8, num_rows=6, num_cols=6)
    if name == "navix":
        return tasks.Navix("Navix-Empty-5x5-v0", max_steps=8)
    if name == "xminigrid":
        return tasks.XLandMiniGrid("MiniGrid-Empty-5x5", max_steps=8)
    if name == "craftax":
        return tasks.Craftax("Craftax-Classic-Symbolic-v1", max_steps=8)
    return tasks.JaxMARL("MPE_simple_spread_v3", max_steps=8)


@pytest.mark.parametrize(
    "family",
    [
        "jumanji",
        "jaxmarl",  # the multi-agent path: teams of n_agents members
        *[pytest.param(f, marks=pytest.mark.slow) for f in ("navix", "xminigrid", "craftax")],
    ],
)
def test_trainer_runs_each_family_in_one_program(family):
    pytest.importorskip(family)
    trainer = evolax.Trainer(
        algorithm=evolax.PGPE(pop_size=6, optimizer=optax.adam(0.05), init_std=0.1),
        policy=evolax.MLP(hidden_sizes=(4,)),
        task=make(family),
        n_repeats=1,
    )
    traces = []

    @eqx.filter_jit
    def run(state):
        traces.append(1)  # (chex.assert_max_traces counts by code: across the parameters)
        return trainer.run(state, 2)

    state, history = run(trainer.init(jax.random.key(0)))
    state, history = run(state)
    assert len(traces) == 1, "the training program compiled more than once"
    assert int(state.generation) == 4
    assert np.all(np.isfinite(np.asarray(jax.tree.leaves(history)[0])))
