"""One-line errors for the slips of a loop ported from evosax or EvoJAX: arguments in another
library's order, a state where a population belongs, and those libraries' argument names.

The checks read types and dtypes only, so they run at trace time and cost nothing in the
compiled program.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

FOREIGN_NAMES: dict[str, str] = {
    "population_size": "pop_size",
    "popsize": "pop_size",
    "std_init": "init_std",
    "sigma_init": "init_std",
    "init_stdev": "init_std",
    "stdev_learning_rate": "std_lr",
    "stdev_max_change": "std_max_change",
    "num_dims": "init's x0 (evolax reads the genome's size from the start point x0 in "
    "init(key, x0))",
    "solution": "init's x0 (evolax reads the genome's structure from the start point x0 in "
    "init(key, x0))",
    "param_size": "init's x0 (evolax reads the genome's size from the start point x0 in "
    "init(key, x0))",
    "init_params": "init's x0 (init(key, x0) starts the search at x0)",
    "lrate_init": "optimizer (e.g. optimizer=optax.adam(lrate_init))",
    "center_learning_rate": "optimizer (e.g. optimizer=optax.adam(center_learning_rate))",
    "learning_rate": "optimizer (e.g. optimizer=optax.adam(learning_rate))",
    "optimizer_config": "optimizer (an optax transformation, e.g. optax.adam(0.05))",
    "seed": "the keys of init, ask and tell (evolax holds no random state)",
    "logger": "nothing (evolax.train logs; an algorithm does not)",
    "maximize": "nothing: evolax always maximises (negate a cost, e.g. with evolax.to_fitness)",
    "fitness_shaping_fn": "fitness_shaping",
    "std_schedule": "init_std with std_decay and std_min (or mutation_std for SimpleGA)",
}
"""evosax's and EvoJAX's constructor arguments, and what evolax calls them."""

EVOSAX_TELL = " (evosax's order, tell(key, population, fitness, state, params), is not evolax's)"


def check_constructor(cls: type, fields: set[str], kwargs: dict[str, Any]) -> None:
    """Raise a ``TypeError`` naming evolax's argument for another library's name in
    ``kwargs`` that is not one of ``cls``'s ``fields``."""
    for name in kwargs:
        if name in FOREIGN_NAMES and name not in fields:
            raise TypeError(
                f"{cls.__name__} got {name}=, another library's argument: evolax's is "
                f"{FOREIGN_NAMES[name]}"
            )


def is_key(value: Any) -> bool:
    """Whether ``value`` is a PRNG key: a typed key array, or a raw ``uint32[2]`` key."""
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return False
    if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
        return True
    return dtype == jnp.uint32 and tuple(np.shape(value))[-1:] == (2,)


def describe(value: Any, state_type: type) -> str:
    """What ``value`` is, in a few words: a state, a key, an array of a shape, a pytree."""
    if isinstance(value, state_type):
        return f"a state ({type(value).__name__})"
    if is_key(value):
        return "a PRNG key"
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"an array of shape {tuple(value.shape)}"
    return f"a {type(value).__name__}"


def check_call(
    method: str, signature: str, state_type: type, extra: tuple[Any, ...], **given: Any
) -> None:
    """Raise a ``TypeError`` when an argument of ``method`` (in ``signature``'s order) is of
    the wrong kind: ``key`` must be a PRNG key, ``state`` a state of ``state_type``, and
    ``population``, ``fitness`` and ``x0`` must not be states; ``extra`` (positional
    arguments beyond the signature, evosax's ``params``) must be empty."""
    wrong = []
    for name, value in given.items():
        if name == "key":
            ok = is_key(value)
        elif name == "state":
            ok = isinstance(value, state_type)
        else:
            ok = not isinstance(value, state_type)
        if not ok:
            wrong.append(f"{describe(value, state_type)} where the {name} belongs")
    if extra:
        wrong.append(
            f"{len(extra)} more positional argument(s): evolax's algorithms take no params "
            f"(their settings are constructor arguments)"
        )
    if not wrong:
        return
    evosax = ""
    if method.endswith(".tell") and any(
        isinstance(x, state_type) for x in (*extra, given["fitness"])
    ):
        evosax = EVOSAX_TELL
    raise TypeError(f"{method}({signature}): got {' and '.join(wrong)}{evosax}")


def check_fitness_values(fitness: Any) -> None:
    """Raise a ``TypeError`` unless ``fitness`` is an array (or array-like) of real numbers."""
    try:
        if isinstance(fitness, dict):
            raise TypeError
        dtype = jnp.result_type(fitness)
    except (TypeError, ValueError):
        raise TypeError(
            f"fitness must be an array of real numbers, [pop_size], got a {type(fitness).__name__}"
        ) from None
    if not (jnp.issubdtype(dtype, jnp.floating) or jnp.issubdtype(dtype, jnp.integer)):
        raise TypeError(f"fitness must hold real numbers (floats or integers), got {dtype}")
