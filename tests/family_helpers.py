"""Shared checks of the JAX environment family adapters (evolax.tasks.jax_env): the adapter
and the family's own API, given the same keys and actions, play the same episode."""

from __future__ import annotations

import sys
from collections.abc import Callable

import equinox as eqx
import jax
import numpy as np

from evolax.tasks.spaces import ActionMap


def flat(obs) -> np.ndarray:
    """The family's observation as the adapter should give it: every leaf raveled, in
    ``jax.tree.leaves`` order, as float32."""
    return np.concatenate([np.ravel(np.asarray(x)) for x in jax.tree.leaves(obs)]).astype(
        np.float32
    )


def random_env_action(actions: ActionMap, mask, rng: np.random.Generator) -> np.ndarray:
    """A random action of the family's space, allowed by ``mask`` when there is one."""
    if actions.nvec is not None:
        if mask is not None and mask.shape == actions.nvec:  # a joint mask
            allowed = np.flatnonzero(mask) if mask.any() else np.arange(mask.size)
            return np.array(np.unravel_index(rng.choice(allowed), actions.nvec), np.int32)
        return np.array(
            [
                rng.choice(np.flatnonzero(mask[i, :n]) if mask is not None else np.arange(n))
                for i, n in enumerate(actions.nvec)
            ],
            np.int32,
        )
    if actions.discrete:
        n = actions.action_shape[0]
        allowed = np.flatnonzero(mask) if mask is not None and mask.any() else np.arange(n)
        return np.asarray(rng.choice(allowed), np.int32)
    low, high = np.asarray(actions.low), np.asarray(actions.high)
    return rng.uniform(low, high).reshape(actions.env_shape).astype(np.float32)


def output_for(actions: ActionMap, env_action: np.ndarray) -> np.ndarray:
    """A policy output the action map should turn into ``env_action`` (worked out here
    independently: one-hot scores, or the inverse of the ``[-1, 1]`` rescaling)."""
    if actions.nvec is not None:
        return np.concatenate(
            [np.eye(n, dtype=np.float32)[a] for n, a in zip(actions.nvec, env_action, strict=True)]
        )
    if actions.discrete:
        return np.eye(actions.action_shape[0], dtype=np.float32)[int(env_action)]
    low, high = np.asarray(actions.low), np.asarray(actions.high)
    return (2 * (np.ravel(env_action) - low) / (high - low) - 1).astype(np.float32)


def allow_ranks(fun: Callable) -> Callable:
    """``fun`` traced with rank promotion allowed (the families promote ranks, as Brax)."""

    def wrapped(*args):
        with jax.numpy_rank_promotion("allow"):
            return fun(*args)

    return wrapped


def check_same_episodes(
    task,
    ref_reset: Callable,
    ref_step: Callable,
    n_steps: int,
    seed: int = 0,
    ref_mask: Callable | None = None,
) -> int:
    """Play ``n_steps`` random allowed actions through ``task`` and through the family's API
    (``ref_reset(key) -> (obs, state)``, ``ref_step(key, state, action) -> (obs, state,
    reward, done)``, both jitted here) with the same keys, starting a new episode after each
    ``done``; assert equal observations, rewards and dones step by step. Returns the number of
    episodes that ended."""
    keys = jax.random.split(jax.random.key(seed), n_steps + 1)
    rng = np.random.default_rng(seed)
    ref_reset, ref_step = jax.jit(allow_ranks(ref_reset)), jax.jit(allow_ranks(ref_step))
    reset, step = eqx.filter_jit(task.reset), eqx.filter_jit(task.step)
    ends, start = 0, True
    for t in range(n_steps):
        if start:
            ref_obs, ref_state = ref_reset(keys[t])
            state = reset(keys[t])
            np.testing.assert_allclose(state.obs, flat(ref_obs), rtol=1e-6, atol=1e-6)
            assert state.obs.shape == task.obs_shape
            start = False
            continue
        mask = None if state.action_mask is None else np.asarray(state.action_mask)
        if ref_mask is not None:
            np.testing.assert_array_equal(mask, np.asarray(ref_mask(ref_obs)))
        action = random_env_action(task.actions, mask, rng)
        ref_obs, ref_state, ref_reward, ref_done = ref_step(keys[t], ref_state, action)
        state, reward, done = step(state, output_for(task.actions, action), keys[t])
        np.testing.assert_allclose(state.obs, flat(ref_obs), rtol=1e-6, atol=1e-6, err_msg=t)
        np.testing.assert_allclose(reward, ref_reward, rtol=1e-6, atol=1e-6, err_msg=str(t))
        assert bool(done) == bool(ref_done), t
        if bool(done):
            ends, start = ends + 1, True
    return ends


def check_name_and_install_errors(monkeypatch, make, near_name, closest, modules, extra):
    """``make(near_name)`` names ``closest`` among the closest registered names, and with
    ``modules`` unimportable ``make(closest)`` says which extra installs the family."""
    import pytest

    with pytest.raises(ValueError, match=rf"did you mean .*'{closest}'"):
        make(near_name)
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)  # `import module` now fails
    with pytest.raises(ImportError, match=rf"pip install 'evolax\[{extra}\]'"):
        make(closest)
