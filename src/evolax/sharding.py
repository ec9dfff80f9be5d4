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
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh

POP_AXIS = "pop"
_DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"
#: The number of CPU devices importing evolax gives JAX (``1``: JAX's own single device).
CPU_DEVICES_ENV = "EVOLAX_CPU_DEVICES"


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


def cpu_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS tells it)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _count_in_xla_flags() -> bool:
    return re.search(rf"{_DEVICE_COUNT_FLAG}=\d+", os.environ.get("XLA_FLAGS", "")) is not None


def _jax_started() -> bool:
    from jax._src import xla_bridge  # JAX has no public test for it

    return xla_bridge.backends_are_initialized()


def arrange_cpu_devices(environ: Mapping[str, str] = os.environ) -> int | None:
    """What importing evolax does: give JAX one CPU device per core, so that a trainer splits
    its population over the cores with no setting (on 2 cores cart-pole's generation is
    2-3x faster than on one device, ``docs/results/cartpole_speed.md``).

    ``EVOLAX_CPU_DEVICES=N`` asks for ``N`` devices instead (``1``: JAX's single device). A
    count the user gave JAX (``XLA_FLAGS``' ``--xla_force_host_platform_device_count``,
    ``JAX_NUM_CPU_DEVICES``) is left alone, and :func:`use_cpu_cores` may still change it
    until JAX's first computation. Accelerators are unaffected. Where JAX has already run a
    computation on its one CPU device of several cores, a warning says so (once: Python
    imports a module once). Returns the number of devices asked for, ``None`` if none.
    """
    wanted = environ.get(CPU_DEVICES_ENV, "").strip()
    if wanted and not (wanted.isdigit() and int(wanted) >= 1):
        raise ValueError(f"{CPU_DEVICES_ENV} must be a positive number of devices, got {wanted!r}")
    n = int(wanted) if wanted else cpu_cores()
    if _jax_started():
        if not wanted and n > 1 and jax.default_backend() == "cpu" and jax.device_count() == 1:
            warnings.warn(
                f"JAX ran a computation before evolax was imported, so it has one CPU device "
                f"for the {n} cores here and a trainer evaluates on one core: import evolax "
                "first, or call evolax.use_cpu_cores() before JAX's first computation",
                stacklevel=3,
            )
        return None
    if n == 1 or _count_in_xla_flags() or getattr(jax.config, "jax_num_cpu_devices", -1) >= 0:
        return None
    jax.config.update("jax_num_cpu_devices", n)
    return n


def use_cpu_cores(n: int | None = None) -> int:
    """Give JAX ``n`` CPU devices (default: one per core), so a trainer splits its population
    over them: call it before the first JAX computation (right after the imports). Importing
    evolax already asks for one per core (:func:`arrange_cpu_devices`); this call changes
    the count, or asks where the import could not.

    A device count already set in ``XLA_FLAGS`` (``--xla_force_host_platform_device_count``)
    is left alone. Accelerators are unaffected. Returns the number of CPU devices asked for.

    Raises:
        RuntimeError: JAX has already run a computation (its devices are fixed by then).
    """
    n = cpu_cores() if n is None else n
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
    """Ask JAX for ``n`` CPU devices (``1``: one for all cores), as :func:`use_cpu_cores` does,
    where JAX has not started yet and ``XLA_FLAGS`` sets no count of its own (the command line's
    ``run.cpu_devices``). Returns whether the request was made."""
    if _count_in_xla_flags() or _jax_started():
        return False
    jax.config.update("jax_num_cpu_devices", n)
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
