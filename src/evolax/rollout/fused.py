"""Whole episodes fused into a Pallas kernel: many steps of an MLP policy on an elementwise
task (cart-pole, double pole) per kernel launch, the episodes' state kept in registers.

:func:`run_fused_episodes` is :func:`~evolax.rollout.episode.run_episodes` (same arguments,
same returns and lengths) for the pairs :func:`fused_supported` accepts. One kernel program
runs one individual's repeats side by side, each episode's state a *lane* (see
:meth:`Task.to_lanes <evolax.tasks.base.Task.to_lanes>`); a launch runs ``steps_per_launch``
steps of the MLP's forward pass and the task's :meth:`~evolax.tasks.base.Task.fused_step`,
masking each episode after its first ``done``, and launches repeat until every episode is
done. The physics is the task's own code, shared with its ``step``. Whether it is faster than
the XLA loop is for the placement layer to measure on the device at hand; on a CPU the kernel
runs only in interpret mode (as XLA operations), for tests.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jaxtyping import Array, Float, Int

from evolax.policies.base import Policy
from evolax.policies.mlp import MLP, OUTPUT_ACTIVATIONS
from evolax.population import materialize
from evolax.tasks.base import Task
from evolax.types import Population
from evolax.validation import check_positive_int, population_size

ELEMENTWISE_OUTPUTS = ("tanh", "sigmoid", "linear")
"""The MLP output activations a kernel applies lane by lane (softmax mixes the outputs)."""
MIN_WIDTH = 16
"""Repeats and hidden widths are padded (with inert lanes, zero weights) to a power of two of
at least 16: a GPU kernel's blocks have power-of-two shapes and its matmuls 16 rows."""


def fused_supported(policy: Policy, task: Task) -> bool:
    """Whether :func:`run_fused_episodes` can run ``policy`` on ``task``: an :class:`MLP` with
    an elementwise output activation, and a task with a fused step
    (:attr:`~evolax.tasks.base.Task.fusable`), one reward per step and its constants as Python
    numbers (a kernel cannot close over arrays). Wrapped tasks (observation normalisation,
    descriptors, action costs) and multi-agent tasks have no fused step."""
    return (
        type(policy) is MLP
        and policy.output_activation in ELEMENTWISE_OUTPUTS
        and task.fusable
        and tuple(task.reward_shape) == ()
        and not jax.tree.leaves(eqx.filter(task, eqx.is_array))
    )


def _padded(width: int) -> int:
    return max(MIN_WIDTH, pl.next_power_of_2(width))


def _pad_params(params: list[dict[str, Array]]) -> list[Array]:
    """``[w_0, b_0, w_1, b_1, ...]`` (leading ``pop`` axis) with the hidden widths padded by
    zeros (:data:`MIN_WIDTH`): padded units are ``tanh(0) = 0`` and feed nothing."""
    flat = []
    for i, layer in enumerate(params):
        w, b = layer["w"], layer["b"]
        rows = w.shape[1] if i == 0 else _padded(w.shape[1])
        cols = b.shape[1] if i == len(params) - 1 else _padded(b.shape[1])
        flat.append(jnp.pad(w, ((0, 0), (0, rows - w.shape[1]), (0, cols - w.shape[2]))))
        flat.append(jnp.pad(b, ((0, 0), (0, cols - b.shape[1]))))
    return flat


def _forward(activation: str, refs: Sequence[Any], obs: Sequence[Array]) -> tuple[Array, ...]:
    """:meth:`MLP.apply` on lanes: ``obs`` lanes ``[lanes]`` in, action lanes out. The first
    layer sums the observation's lanes times the weights' rows, the middle ones are matmuls
    ``[lanes, width] @ [width, width]``, the last reads the weights' columns."""
    output = OUTPUT_ACTIVATIONS[activation]
    n_layers = len(refs) // 2
    w, b = refs[0], refs[1]
    if n_layers == 1:  # a linear policy: every output a sum of lanes
        return tuple(
            output(functools.reduce(jnp.add, (x * w[i, j] for i, x in enumerate(obs)), b[j]))
            for j in range(w.shape[1])
        )
    h = functools.reduce(jnp.add, (x[:, None] * w[i, :][None, :] for i, x in enumerate(obs)))
    h = jnp.tanh(h + b[...][None, :])
    for layer in range(1, n_layers - 1):
        w, b = refs[2 * layer], refs[2 * layer + 1]
        product = jnp.dot(h, w[...], precision=jax.lax.Precision.HIGHEST)
        h = jnp.tanh(product + b[...][None, :])
    w, b = refs[-2], refs[-1]
    return tuple(output(jnp.sum(h * w[:, j][None, :], axis=1) + b[j]) for j in range(w.shape[1]))


def _kernel(
    activation: str, task: Task, n_params: int, n_lanes: int, steps: int, *refs: Any
) -> None:
    """``steps`` steps of one individual's episodes: the refs are the parameters, the lanes,
    returns, lengths and running flags in, then the same (but the parameters) out."""
    params, state = refs[:n_params], refs[n_params : n_params + n_lanes + 3]
    out = refs[n_params + n_lanes + 3 :]
    n_obs = math.prod(task.obs_shape)
    lanes = tuple(ref[...] for ref in state[:n_lanes])
    returns, lengths, running = (ref[...] for ref in state[n_lanes:])

    def step(_, carry):
        lanes, returns, lengths, running = carry
        live = running != 0
        action = _forward(activation, params, lanes[:n_obs])
        new, reward, done = task.fused_step(lanes, action)
        # an episode keeps the state its first `done` (or the step limit) left it in
        lanes = tuple(
            jnp.where(live, n.astype(o.dtype), o) for n, o in zip(new, lanes, strict=True)
        )
        returns = returns + jnp.where(live, reward.astype(jnp.float32), 0.0)
        lengths = lengths + live.astype(jnp.int32)
        going = live & ~done & (lengths < task.max_steps)
        return lanes, returns, lengths, going.astype(jnp.int32)

    carry = jax.lax.fori_loop(0, steps, step, (lanes, returns, lengths, running))
    for ref, value in zip(out, (*carry[0], *carry[1:]), strict=True):
        ref[...] = value


def run_fused_episodes(
    policy: Policy,
    task: Task,
    population: Population,
    initial: tuple[Any, ...],
    fixed_length: bool = False,
    *,
    steps_per_launch: int = 64,
    interpret: bool = False,
) -> tuple[Float[Array, "pop repeats"], Int[Array, "pop repeats"], Any]:
    """:func:`~evolax.rollout.episode.run_episodes` with the episodes fused into a Pallas
    kernel, for the policies and tasks :func:`fused_supported` accepts.

    Every individual plays every episode of ``initial`` (see
    :func:`~evolax.rollout.episode.initial_states`) to its first ``done`` or
    ``task.max_steps``, ``steps_per_launch`` steps per kernel launch; launches stop once every
    episode is done (with ``fixed_length``, after ``task.max_steps`` steps: the same results;
    reverse-mode differentiation does not go through the kernel). The returns and lengths
    are ``run_episodes``' up to float32 round-off (the MLP's sums run in another order).

    Args:
        policy, task, population, initial, fixed_length: as ``run_episodes``'.
        steps_per_launch: steps per kernel launch, positive (at most ``task.max_steps`` are
            run); more launches cost their overhead, longer ones run past the last ``done``.
        interpret: run the kernel as XLA operations (the only way on a CPU, for tests);
            otherwise it is compiled for a GPU with Triton.

    Returns:
        ``(returns, lengths, final)``, each with leading axes ``[pop, repeats]``: the final
        task states are those each episode ended in, as far as the task's lanes keep them
        (:meth:`~evolax.tasks.base.Task.from_lanes`); ``run_episodes`` goes on stepping an
        episode after its ``done`` until all are done.
    """
    check_positive_int("steps_per_launch", steps_per_launch)
    if not fused_supported(policy, task):
        raise ValueError(
            f"run_fused_episodes runs an MLP (output {', '.join(ELEMENTWISE_OUTPUTS)}) on a "
            f"task with a fused step: got {type(policy).__name__} on {type(task).__name__} "
            "(see fused_supported)"
        )
    assert isinstance(policy, MLP)  # for the type checker: fused_supported said so
    pop_size = population_size(population)
    params = _pad_params(materialize(population))
    task_state, _, episode_step_keys = initial
    n_repeats = episode_step_keys.shape[0]
    width = _padded(n_repeats)  # the padded repeats start done and never step
    lanes = tuple(
        jnp.broadcast_to(jnp.pad(lane, (0, width - n_repeats), mode="edge"), (pop_size, width))
        for lane in task.to_lanes(task_state)
    )
    running = jnp.broadcast_to((jnp.arange(width) < n_repeats).astype(jnp.int32), lanes[0].shape)
    zeros = jnp.zeros((pop_size, width), jnp.int32)
    carry = (*lanes, zeros.astype(jnp.float32), zeros, running)
    n_params, n_lanes = len(params), len(lanes)
    steps = min(steps_per_launch, task.max_steps)

    def lane_spec(x):
        return pl.BlockSpec((pl.squeezed, width), lambda i: (i, 0))

    def param_spec(x):
        return pl.BlockSpec((pl.squeezed, *x.shape[1:]), lambda i: (i,) + (0,) * (x.ndim - 1))

    launch = pl.pallas_call(
        functools.partial(_kernel, policy.output_activation, task, n_params, n_lanes, steps),
        out_shape=[jax.ShapeDtypeStruct(x.shape, x.dtype) for x in carry],
        grid=(pop_size,),
        in_specs=[*map(param_spec, params), *map(lane_spec, carry)],
        out_specs=[lane_spec(x) for x in carry],
        input_output_aliases={n_params + i: i for i in range(len(carry))},
        interpret=interpret,
        compiler_params=None if interpret else _triton_params(),
        name="fused_episodes",
    )

    def body(carry):
        return tuple(launch(*params, *carry))

    if fixed_length:
        n_launches = -(-task.max_steps // steps)
        carry = jax.lax.fori_loop(0, n_launches, lambda _, c: body(c), carry)
    else:
        carry = jax.lax.while_loop(lambda c: jnp.any(c[-1] != 0), body, carry)
    final = task.from_lanes(tuple(lane[:, :n_repeats] for lane in carry[:n_lanes]))
    returns, lengths = carry[n_lanes], carry[n_lanes + 1]
    return returns[:, :n_repeats], lengths[:, :n_repeats], final


def _triton_params() -> Any:
    """Compile with Triton (Pallas' Mosaic GPU backend wants another kernel API)."""
    from jax.experimental.pallas import triton as plt

    return plt.CompilerParams()
