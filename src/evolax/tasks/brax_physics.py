"""Randomised physics for Brax tasks: :class:`BraxPhysics`, the few physical constants an
episode of a :class:`~evolax.tasks.brax.Brax` task may change (friction, masses, actuator
gears, gravity), how they rebuild Brax's ``System``, and the checks of a distribution over
them."""

from __future__ import annotations

import dataclasses
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from evolax.tasks.distributions import ParamSet, TaskDistribution, UniformParams
from evolax.validation import did_you_mean


@chex.dataclass(frozen=True)
class BraxPhysics:
    """One episode's physics, relative to the environment's own model (the defaults are the
    model unchanged). A field left ``None`` keeps the model's value.

    Attributes:
        friction_scale: multiplies every contact's friction coefficients (MuJoCo's
            ``geom_friction`` and ``pair_friction``), ``>= 0``.
        mass_scale: multiplies every body's mass and rotational inertia (MuJoCo's
            ``body_mass``, ``body_inertia`` and ``body_subtreemass``, Brax's
            ``link.inertia``), ``> 0``. The constants MuJoCo derives from the joint-space
            inertia at load time (``mj_setConst``: the constraint solver's ``invweight0``,
            ``dof_M0``, ``actuator_acc0``) stay the model's: they set how soft contacts and
            joint limits are, and armature keeps them from scaling with the masses.
        gear_scale: multiplies every actuator's gear (MuJoCo's ``actuator_gear``, Brax's
            ``actuator.gear``): the force a control gives, ``>= 0``.
        gravity: the gravity vector ``f32[3]`` in m/s² (MuJoCo's ``opt.gravity``, Brax's
            ``gravity``); ``None``: the model's (``(0, 0, -9.81)`` in most Brax models).
    """

    friction_scale: Float[Array, ""] | float | None = 1.0
    mass_scale: Float[Array, ""] | float | None = 1.0
    gear_scale: Float[Array, ""] | float | None = 1.0
    gravity: Float[Array, "3"] | None = None


FIELDS = tuple(f.name for f in dataclasses.fields(BraxPhysics))
SHAPES = {"friction_scale": (), "mass_scale": (), "gear_scale": (), "gravity": (3,)}
"""Each field's shape (one episode's)."""
_LOWEST = {"friction_scale": (0.0, False), "mass_scale": (0.0, True), "gear_scale": (0.0, False)}
"""The scales' lower bounds: ``(bound, open)``; gravity takes any finite vector."""


def model_physics(sys: Any, physics: BraxPhysics | None = None) -> BraxPhysics:
    """``physics`` (default: the model's own) as the episode's base: every field an
    ``f32`` array of its shape, ``gravity`` the model's where ``physics`` leaves it out."""
    physics = BraxPhysics() if physics is None else physics
    values = {name: getattr(physics, name) for name in FIELDS}
    values = {name: 1.0 if value is None else value for name, value in values.items()}
    if physics.gravity is None:
        values["gravity"] = np.asarray(sys.gravity)
    return BraxPhysics(**{k: jnp.asarray(v, jnp.float32) for k, v in values.items()})


def apply_physics(sys: Any, physics: BraxPhysics) -> Any:
    """Brax's ``System`` ``sys`` with ``physics`` applied (its ``None`` fields left as they
    are); traced or batched fields give a traced or batched system."""
    updates: dict[str, Any] = {}
    scale = physics.friction_scale
    if scale is not None:
        updates["geom_friction"] = sys.geom_friction * scale
        updates["pair_friction"] = sys.pair_friction * scale
    scale = physics.mass_scale
    if scale is not None:
        for path in (
            "body_mass",
            "body_inertia",
            "body_subtreemass",
            "link.inertia.mass",
            "link.inertia.i",
        ):
            updates[path] = _at(sys, path) * scale
    scale = physics.gear_scale
    if scale is not None:
        updates["actuator_gear"] = sys.actuator_gear * scale
        updates["actuator.gear"] = sys.actuator.gear * scale
    if physics.gravity is not None:
        gravity = jnp.broadcast_to(jnp.asarray(physics.gravity, jnp.float32), (3,))
        updates["gravity"] = gravity.astype(jnp.result_type(sys.gravity))
        updates["opt.gravity"] = gravity.astype(jnp.result_type(sys.opt.gravity))
    return sys.tree_replace(updates)


def _at(tree: Any, path: str) -> Any:
    for name in path.split("."):
        tree = getattr(tree, name)
    return tree


def _concrete(value: Any) -> np.ndarray | None:
    """``value`` as a NumPy array, or ``None`` when it is traced (its values unknown)."""
    if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(value)):
        return None
    return np.asarray(value, np.float64)


def check_values(name: str, value: Any, where: str) -> None:
    """Raise a one-line ``ValueError`` unless the (concrete) values of field ``name`` are
    finite and within the field's range (``mass_scale > 0``, the other scales ``>= 0``)."""
    array = _concrete(value)
    if array is None:
        return
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{where} must be finite, got {value!r}")
    if name in _LOWEST:
        bound, open_ = _LOWEST[name]
        if np.any(array <= bound) if open_ else np.any(array < bound):
            sign = ">" if open_ else ">="
            raise ValueError(f"{where} must be {sign} {bound}, got {array.tolist()!r}")


def _check_name(name: Any, where: str) -> None:
    if name not in FIELDS:
        raise ValueError(
            f"{where} names {name!r}, not a BraxPhysics field{did_you_mean(str(name), FIELDS)};"
            f" the fields are {', '.join(FIELDS)}"
        )


def check_physics(physics: Any, where: str = "physics") -> None:
    """Raise unless ``physics`` is a :class:`BraxPhysics` whose given fields have their shapes
    and ranges (a ``TypeError`` for another type, else a one-line ``ValueError``)."""
    if not isinstance(physics, BraxPhysics):
        raise TypeError(f"{where} must be a BraxPhysics or None, got {type(physics).__name__}")
    for name in FIELDS:
        value = getattr(physics, name)
        if value is None:
            continue
        if np.shape(value) != SHAPES[name]:
            raise ValueError(
                f"{where}.{name} must have shape {SHAPES[name]}, got {np.shape(value)}"
            )
        check_values(name, value, f"{where}.{name}")


def check_distribution(distribution: Any) -> None:
    """Raise a one-line error unless ``distribution`` is a task distribution and, if a
    :class:`UniformParams`, draws known fields from ``(low, high)`` ranges inside each
    field's range (gravity's as ``f32[3]`` vectors), if a :class:`ParamSet`, holds valid
    physics (or one field's valid values, ``replace``)."""
    if not isinstance(distribution, TaskDistribution):
        raise TypeError(
            f"distribution must be an evolax TaskDistribution (UniformParams, ParamSet, ...) "
            f"or None, got {type(distribution).__name__}"
        )
    if isinstance(distribution, UniformParams):
        for name, (low, high) in distribution.ranges.items():
            where = f"distribution.ranges[{name!r}]"
            _check_name(name, where)
            shape = SHAPES[name]
            for bound in (low, high):
                if np.shape(bound) != shape:
                    example = " ((0, 0, -10.6), (0, 0, -9.0))" if name == "gravity" else ""
                    raise ValueError(
                        f"{where} must be a (low, high) pair of shape {shape}{example}, got "
                        f"{(low, high)!r}"
                    )
                check_values(name, bound, where)
            lo, hi = _concrete(low), _concrete(high)
            if lo is not None and hi is not None and np.any(lo > hi):
                raise ValueError(f"{where} must have low <= high, got {(low, high)!r}")
    elif isinstance(distribution, ParamSet):
        if distribution.replace is not None:
            _check_name(distribution.replace, "distribution.replace")
            check_values(distribution.replace, distribution.members, "distribution.members")
        elif isinstance(distribution.members, BraxPhysics):
            for name in FIELDS:
                value = getattr(distribution.members, name)
                if value is not None:
                    check_values(name, value, f"distribution.members.{name}")
        else:
            raise ValueError(
                f"distribution.members must be BraxPhysics stacked on a leading axis (or one "
                f"field's values with replace=FIELD), got {type(distribution.members).__name__}"
            )


def check_draw(distribution: TaskDistribution, base: BraxPhysics) -> None:
    """Raise a one-line ``ValueError`` unless ``distribution`` draws, from ``base``, a
    :class:`BraxPhysics` with each field's shape (checked abstractly, nothing drawn)."""
    drawn = jax.eval_shape(distribution.sample, jax.random.key(0), base)
    if not isinstance(drawn, BraxPhysics):
        raise ValueError(
            f"distribution must draw a BraxPhysics, got {type(drawn).__name__} from "
            f"{type(distribution).__name__}"
        )
    for name in FIELDS:
        value = getattr(drawn, name)
        if value is not None and tuple(value.shape) != SHAPES[name]:
            raise ValueError(
                f"distribution must draw {name} of shape {SHAPES[name]}, got {tuple(value.shape)}"
            )
