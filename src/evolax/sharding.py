"""Population sharding: a one-axis device mesh on which each device evaluates its slice.

The population axis is split over the ``"pop"`` mesh axis; each device runs the rollouts of its
own individuals with no communication until the episode statistics are summed at the end, so a
device never waits for another inside the rollout loop. Algorithm state stays replicated.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

import jax
import numpy as np
from jax.sharding import Mesh

POP_AXIS = "pop"
_DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"


def population_mesh(devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A mesh with one axis, ``"pop"``, over ``devices`` (default: all devices of all processes)."""
    devices = list(jax.devices() if devices is None else devices)
    if not devices:
        raise ValueError("devices must not be empty")
    return Mesh(np.array(devices), (POP_AXIS,))


def check_divisible(pop_size: int, mesh: Mesh) -> None:
    """Raise ``ValueError`` unless ``pop_size`` splits evenly over the mesh's devices."""
    n = mesh.size
    if pop_size % n:
        below = pop_size // n * n
        options = [s for s in (below, below + n) if s > 0]
        raise ValueError(
            f"pop_size={pop_size} does not divide evenly over {n} devices; "
            f"use a multiple of {n}, e.g. pop_size={' or '.join(map(str, options))}"
        )


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
