"""How the runner executes a trainer: its ``run`` compiled ahead of time per chunk length, or
for a :class:`~evolax.placement.HostTrainer` called eagerly; and its ``test`` likewise. The one
place that tells the two kinds of trainer apart."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax

from evolax.placement.host import each_seed
from evolax.sharding import to_host
from evolax.trainer import Trainer, TrainState


class Chunks:
    """``Trainer.run`` per chunk length (``vmap``-ped over a leading seed axis when
    ``batched``), compiled ahead of time, with compile and run times; for a host trainer,
    ``run`` called eagerly for each seed in turn (its compilation counts as running).

    The trainer's arrays (a task's dataset, say) are passed as arguments, not baked into the
    program as constants.
    """

    def __init__(self, trainer: Trainer, batched: bool = False):
        self._trainer, self._batched = trainer, batched
        self._arrays, static = eqx.partition(trainer, eqx.is_array)

        def run(arrays, state, n):
            run_one = functools.partial(eqx.combine(arrays, static).run, n_generations=n)
            return jax.vmap(run_one)(state) if batched else run_one(state)

        self._run = jax.jit(run, static_argnums=2)
        self._compiled: dict[int, Any] = {}

    def __call__(self, state: TrainState, n: int) -> tuple[TrainState, dict, float, float]:
        """``n`` generations from ``state``: the new state, the metrics on the host, and the
        seconds spent compiling and running."""
        start = time.perf_counter()
        if self._trainer.hosted:  # eager steps, the seeds one after another
            run = functools.partial(self._trainer.run, n_generations=n)
            state, history = jax.block_until_ready(each_seed(run, state, self._batched))
            return state, to_host(history), 0.0, time.perf_counter() - start
        if n not in self._compiled:
            self._compiled[n] = self._run.lower(self._arrays, state, n).compile()
        program = self._compiled[n]
        state = jax.tree.map(_laid_out, state, program.input_shardings[0][1])
        compiled = time.perf_counter()
        state, history = jax.block_until_ready(program(self._arrays, state))
        return state, to_host(history), compiled - start, time.perf_counter() - compiled


def _laid_out(x: Any, sharding: jax.sharding.Sharding) -> Any:
    """A state leaf as a compiled chunk takes it. XLA may return a chunk's state laid out
    otherwise than the chunk took it (NEAT's genomes came back replicated after going in
    split). Host values (a checkpoint restored and broadcast to every process) go in as
    they are: in a multi-process run ``device_put`` takes only this process's devices."""
    if not isinstance(x, jax.Array) or x.sharding.is_equivalent_to(sharding, x.ndim):
        return x
    if sharding.is_fully_addressable:
        return jax.device_put(x, sharding)
    return jax.jit(_identity, out_shardings=sharding)(x)  # across processes


def _identity(x: Any) -> Any:
    return x


def tester(
    trainer: Trainer, n_episodes: int, batched: bool = False
) -> Callable[[TrainState, jax.Array], jax.Array]:
    """``Trainer.test`` on ``n_episodes`` as a function of a state and a key, compiled (for a
    host trainer: eager). With ``batched``, the state has a leading seed axis and the key is
    one per seed (``[seeds]``) or one for all; the returns then lead with the seed axis."""

    def test_one(state: TrainState, key: jax.Array) -> jax.Array:
        return trainer.test(state, key, n_episodes)

    if trainer.hosted:

        def each(state: TrainState, key: jax.Array) -> jax.Array:
            if not batched or key.ndim == 0:
                return each_seed(lambda s: test_one(s, key), state, batched)
            return each_seed(lambda pair: test_one(*pair), (state, key), batched)

        return each
    if not batched:
        return eqx.filter_jit(test_one)

    @eqx.filter_jit
    def vmapped(state: TrainState, key: jax.Array) -> jax.Array:
        return jax.vmap(test_one, in_axes=(0, 0 if key.ndim else None))(state, key)

    return vmapped
