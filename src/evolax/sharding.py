"""Population sharding over devices and hosts.

The population axis is split over the ``"pop"`` axis of a one-axis mesh of all devices (of all
processes); each device runs the rollouts of its own individuals with no communication until
the episode statistics are summed at the end, so no device waits for another inside the rollout
loop. A population too small to split (one multi-agent environment, say) is evaluated whole on
every device, and the devices split its episodes instead (:func:`split_axis`). Everything in a
:class:`~evolax.trainer.TrainState` is replicated: population-shaped arrays live only within a
generation. Several hosts run the same program under JAX's multi-controller runtime
(:func:`initialize_distributed`)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh

POP_AXIS = "pop"
_DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"


def population_mesh(devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A mesh with one axis, ``"pop"``, over ``devices`` (default: all devices of all processes)."""
    devices = list(jax.devices() if devices is None else devices)
    if not devices:
        raise ValueError("devices must not be empty")
    return Mesh(np.array(devices), (POP_AXIS,))


def even_split(pop_size: int, n_repeats: int, n_devices: int, group: int = 1) -> str | None:
    """What ``n_devices`` devices can split evenly: ``"pop"`` (each evaluates its slice of the
    population), ``"repeats"`` (each evaluates the whole population on its share of the
    episodes), or ``None`` (neither).

    The population is split when every device gets whole groups of ``group`` individuals (a
    multi-agent task's environment holds ``group``); otherwise the episodes are, when
    ``n_repeats`` divides evenly.
    """
    if pop_size % (n_devices * group) == 0:
        return "pop"
    if n_repeats % n_devices == 0:
        return "repeats"
    return None


def split_axis(pop_size: int, n_repeats: int, n_devices: int, group: int = 1) -> str:
    """:func:`even_split`, raising a ``ValueError`` that names the valid population sizes when
    neither the population nor the episodes divide evenly."""
    split = even_split(pop_size, n_repeats, n_devices, group)
    if split is not None:
        return split
    unit = n_devices * group
    below = pop_size // unit * unit
    options = [s for s in (below, below + unit) if s > 0]
    what = "" if group == 1 else f" in whole environments of {group} agents"
    raise ValueError(
        f"pop_size={pop_size} does not divide evenly over {n_devices} devices{what}, nor does "
        f"n_repeats={n_repeats}; use pop_size={' or '.join(map(str, options))}, or an "
        f"n_repeats that is a multiple of {n_devices} so the devices split the episodes"
    )


def default_mesh(
    pop_size: int, n_repeats: int, group: int = 1, devices: Sequence[jax.Device] | None = None
) -> Mesh | None:
    """The mesh a trainer uses by default: the most of ``devices`` (default: all devices of
    all processes) that split the population into whole groups of ``group`` or, failing that,
    its ``n_repeats`` episodes (:func:`even_split`); ``None`` when that is one device."""
    available = list(jax.devices() if devices is None else devices)
    splits = [n for n in range(1, len(available) + 1) if even_split(pop_size, n_repeats, n, group)]
    best = max(splits, default=1)
    return population_mesh(available[:best]) if best > 1 else None


def use_cpu_cores(n: int | None = None) -> int:
    """Give JAX one CPU device per core (or ``n``), so a trainer splits its population over
    the cores: call it once, before the first JAX computation (right after the imports).

    A device count already set in ``XLA_FLAGS`` (``--xla_force_host_platform_device_count``)
    is left alone. Accelerators are unaffected. Returns the number of CPU devices asked for.

    Raises:
        RuntimeError: JAX has already run a computation (its devices are fixed by then).
    """
    n = (os.cpu_count() or 1) if n is None else n
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive number of CPU devices, got {n!r}")
    match = re.search(rf"{_DEVICE_COUNT_FLAG}=(\d+)", os.environ.get("XLA_FLAGS", ""))
    if match:
        return int(match.group(1))
    try:
        jax.config.update("jax_num_cpu_devices", n)
    except RuntimeError:
        raise RuntimeError(
            "evolax.use_cpu_cores() must run before the first JAX computation: call it right "
            "after the imports"
        ) from None
    return n


def request_cpu_devices(n: int) -> bool:
    """Ask XLA for ``n`` CPU devices (one per core) so populations can be split across cores.

    Must run before JAX initialises its backends. Leaves an explicit user setting of the device
    count in ``XLA_FLAGS`` alone. Returns whether the request was made.
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if re.search(rf"{_DEVICE_COUNT_FLAG}=\d+", flags) or n <= 1:
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {_DEVICE_COUNT_FLAG}={n}".strip()
    return True


def initialize_distributed(
    coordinator: str | None = None, num_processes: int | None = None, process_id: int | None = None
) -> bool:
    """Join a multi-process run (``jax.distributed``) if one is described; return whether joined.

    Arguments left ``None`` come from the environment: ``JAX_COORDINATOR_ADDRESS``
    (``host:port`` of process 0), ``JAX_NUM_PROCESSES`` and ``JAX_PROCESS_ID``. Without a
    coordinator nothing happens (a single-process run). On CPU the processes talk through gloo.
    Must run before JAX initialises its backends.
    """
    env = os.environ
    coordinator = coordinator or env.get("JAX_COORDINATOR_ADDRESS")
    if not coordinator:
        if num_processes is not None or process_id is not None:
            raise ValueError("num_processes/process_id need a coordinator address (HOST:PORT)")
        return False
    if num_processes is None and "JAX_NUM_PROCESSES" in env:
        num_processes = int(env["JAX_NUM_PROCESSES"])
    if process_id is None and "JAX_PROCESS_ID" in env:
        process_id = int(env["JAX_PROCESS_ID"])
    if num_processes is None or process_id is None:
        raise ValueError("a multi-process run needs num_processes and process_id")
    if not 0 <= process_id < num_processes:
        raise ValueError(f"process_id must be in [0, {num_processes}), got {process_id}")
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator, num_processes=num_processes, process_id=process_id)
    return True


def to_host(tree: Any) -> Any:
    """NumPy copies of a pytree of arrays, also of global arrays spanning several processes.

    Replicated arrays are read from a local shard; other arrays are gathered from all processes.
    """

    def copy(x):
        if not isinstance(x, jax.Array) or x.is_fully_addressable:
            return np.asarray(jax.device_get(x))
        if x.sharding.is_fully_replicated:
            return np.asarray(x.addressable_data(0))
        return np.asarray(multihost_utils.process_allgather(x, tiled=True))

    return jax.tree.map(copy, tree)


def broadcast_from_first_process(tree: Any) -> Any:
    """Process 0's values of ``tree`` (NumPy leaves) on every process; identity in one process."""
    if jax.process_count() == 1:
        return tree
    return to_host(multihost_utils.broadcast_one_to_all(tree))
