"""Public methods that compile themselves: fast when called eagerly, free under a trace.

:func:`compiled` wraps a function whose arguments are pytrees (modules, states, arrays). Called
eagerly, it compiles the function once per *configuration* (the arguments' pytree structure,
their non-array leaves, compared by ``==``, and their arrays' shapes and dtypes) and reuses
the program afterwards, so an evosax-style Python loop of ``ask``/``tell`` runs about as fast
as the same loop under ``jax.jit``. Called on a tracer (inside the caller's ``jit``, ``vmap``,
``grad`` or ``scan``), it calls the function straight through: nothing is added to the
caller's program.

Two instances built from equal arguments therefore share one program. The cache holds only
compiled programs, keyed by what they were traced with; it never changes a result.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Callable
from typing import Any, TypeVar

import jax
import numpy as np
from jax.dtypes import canonicalize_dtype as canonical

F = TypeVar("F", bound=Callable[..., Any])

_ARRAYS = (jax.Array, np.ndarray, np.generic)
_CONCRETE: list[type] = [_ARRAYS[0]]  # the class of concrete jax arrays, once one is seen
_MAX_PROGRAMS = 64
"""Programs kept per function (the oldest is dropped first)."""


def _unhashable(fn: Callable, leaf: Any) -> TypeError:
    return TypeError(
        f"{fn.__qualname__}: an argument holds {type(leaf).__name__} {leaf!r:.60}, which is "
        "neither an array nor hashable; make it an array, or a hashable value "
        "(see evolax.compiled)"
    )


def compiled(fn: F) -> F:
    """``fn`` compiled on its first eager call per configuration and reused afterwards, and
    called straight through when any argument is a tracer (see the module's docstring).

    Array leaves (``jax.Array``, NumPy arrays) are the program's inputs; every other leaf (a
    Python number, a string, a static field's value) is part of the configuration, so a new
    value compiles a new program: pass ``jnp.asarray(x)`` for a number that changes from call
    to call. Outputs may hold non-array leaves (they are kept from the trace).
    """
    programs: dict[Any, tuple[Callable, list]] = {}

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
        signature = []
        arrays = []
        for leaf in leaves:
            kind = type(leaf)
            if kind is _CONCRETE[0]:  # the common case first: a concrete jax.Array
                arrays.append(leaf)
                signature.append((leaf.shape, leaf.dtype))
            elif isinstance(leaf, _ARRAYS):
                if isinstance(leaf, jax.core.Tracer):
                    return fn(*args, **kwargs)
                arrays.append(leaf)
                if isinstance(leaf, jax.Array):
                    _CONCRETE[0] = kind
                dtype = leaf.dtype if isinstance(leaf, jax.Array) else canonical(leaf.dtype)
                signature.append((leaf.shape, dtype))
            else:
                signature.append((kind, leaf))
        key = (treedef, tuple(signature))
        try:
            entry = programs.get(key)
        except TypeError:
            for leaf in leaves:
                if isinstance(leaf, _ARRAYS):
                    continue
                try:
                    hash(leaf)
                except TypeError:
                    raise _unhashable(fn, leaf) from None
            raise
        if entry is None:
            entry = programs[key] = _program(fn, treedef, leaves)
            if len(programs) > _MAX_PROGRAMS:
                del programs[next(iter(programs))]
        program, out = entry
        try:
            result = program(*arrays)
        except (ValueError, TypeError) as error:  # a check of ours, raised while tracing
            _one_line(error)
            raise
        if not out[1]:  # every output leaf is an array
            return jax.tree_util.tree_unflatten(out[0], result)
        filled = iter(result)
        return jax.tree_util.tree_unflatten(
            out[0], [next(filled) if is_array else leaf for is_array, leaf in out[1]]
        )

    return Compiled(fn, wrapper)  # type: ignore[return-value]


class Compiled:
    """A function wrapped by :func:`compiled`: called, it runs the wrapper; as a method
    (looked up on an instance), it binds as a :class:`BoundCompiled`."""

    def __init__(self, fn: Callable, call: Callable):
        functools.update_wrapper(self, fn)
        self.__wrapped_compiled__ = fn
        self._call = call

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        return self if obj is None else BoundCompiled(self, obj)


class BoundCompiled:
    """A compiled method bound to its module: a pytree whose child is the module (as
    equinox's bound methods are), but cheap to make (a lookup on every eager call makes
    one). It hashes as its module does, which ``jax.jit(trainer.run)`` needs."""

    __slots__ = ("__func__", "__self__", "__weakref__")

    def __init__(self, func: Compiled, obj: Any):
        self.__func__ = func
        self.__self__ = obj

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__func__._call(self.__self__, *args, **kwargs)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, BoundCompiled)
            and other.__func__ is self.__func__
            and other.__self__ is self.__self__
        )

    def __hash__(self) -> int:
        return hash((self.__func__, self.__self__))

    @property
    def __name__(self) -> str:
        return self.__func__.__name__  # type: ignore[attr-defined]

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self.__func__.__doc__

    def __repr__(self) -> str:
        return f"<compiled method {self.__name__} of {type(self.__self__).__name__}>"


jax.tree_util.register_pytree_node(
    BoundCompiled,
    lambda bound: ((bound.__self__,), bound.__func__),
    lambda func, children: BoundCompiled(func, children[0]),
)


def _one_line(error: BaseException) -> None:
    """Drop the note JAX adds to an error raised while it traced (its frames were filtered):
    a user's mistake stays the one line our check wrote, as when called outside ``jit``."""
    notes = getattr(error, "__notes__", None)
    if notes:
        notes[:] = [n for n in notes if "JAX has removed its internal frames" not in n]


def _program(fn: Callable, treedef: Any, leaves: list) -> tuple[Callable, list]:
    """The jitted ``fn`` over the array leaves of arguments structured as ``treedef`` with
    these non-array ``leaves``, and a cell ``[out_treedef, statics]`` its trace fills:
    ``statics`` lists ``(False, leaf)`` for the outputs' non-array leaves (empty when every
    output leaf is an array)."""
    template = [None if isinstance(leaf, _ARRAYS) else leaf for leaf in leaves]
    positions = [i for i, leaf in enumerate(leaves) if isinstance(leaf, _ARRAYS)]
    out: list = [None, []]

    def flat(*arrays: Any) -> list:
        filled = list(template)
        for i, array in zip(positions, arrays, strict=True):
            filled[i] = array
        args, kwargs = jax.tree_util.tree_unflatten(treedef, filled)
        out_leaves, out[0] = jax.tree_util.tree_flatten(fn(*args, **kwargs))
        kinds = [isinstance(leaf, jax.Array) for leaf in out_leaves]
        pairs = list(zip(kinds, out_leaves, strict=True))
        out[1] = [] if all(kinds) else [(k, None if k else leaf) for k, leaf in pairs]
        return [leaf for k, leaf in pairs if k]

    return jax.jit(flat), out


def is_compiled(method: Callable) -> bool:
    """Whether ``method`` (a function or a bound method) was wrapped by :func:`compiled`."""
    return isinstance(getattr(method, "__func__", method), Compiled)


class ByIdentity:
    """``obj`` hashed and compared by identity: what :func:`configuration_key` falls back to,
    and a way to hold an unhashable object as static configuration of a module."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any):
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ByIdentity) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __repr__(self) -> str:
        return f"{type(self.obj).__name__}(...)"


_SCALARS = (int, float, complex, str, bytes, bool, type(None))


def configuration_key(obj: Any, _path: frozenset[int] = frozenset()) -> Any:
    """A hashable value equal for two objects built the same way: a function by its code,
    defaults and the configuration its closure holds (``optax.adam(0.05)`` twice gives equal
    keys; ``optax.adam(0.01)`` another), tuples, lists, dicts and partials element-wise,
    arrays by value, any other hashable object as itself and the rest by identity."""
    if isinstance(obj, _SCALARS):
        return (type(obj), obj)
    if id(obj) in _path or len(_path) > 64 or isinstance(obj, jax.core.Tracer):
        return ByIdentity(obj)
    path = _path | {id(obj)}
    if isinstance(obj, tuple | list):
        return (type(obj), tuple(configuration_key(x, path) for x in obj))
    if isinstance(obj, dict):
        items = [(configuration_key(k, path), configuration_key(v, path)) for k, v in obj.items()]
        return (dict, tuple(items))
    if isinstance(obj, types.FunctionType):
        cells = []
        for cell in obj.__closure__ or ():
            try:
                cells.append(configuration_key(cell.cell_contents, path))
            except ValueError:  # an empty cell
                cells.append(None)
        defaults = configuration_key((obj.__defaults__, obj.__kwdefaults__), path)
        return ("function", obj.__module__, obj.__code__, defaults, tuple(cells))
    if isinstance(obj, functools.partial):
        return (
            "partial",
            *(configuration_key(x, path) for x in (obj.func, obj.args, obj.keywords)),
        )
    if isinstance(obj, types.MethodType):
        return (
            "method",
            configuration_key(obj.__func__, path),
            configuration_key(obj.__self__, path),
        )
    if isinstance(obj, _ARRAYS):
        value = np.asarray(obj)
        return ("array", value.shape, value.dtype.str, value.tobytes())
    try:
        hash(obj)
    except TypeError:
        return ByIdentity(obj)
    return (type(obj), obj)


def explained_hash(module: Any) -> int:
    """An equinox module's hash (its fields'), or, for one holding arrays, a ``TypeError``
    saying how to compile its methods: ``jax.jit`` hashes the ``self`` of a bound method
    (``jax.jit(trainer.run)``), which arrays cannot give."""
    try:
        return hash(tuple((f.name, getattr(module, f.name)) for f in dataclasses.fields(module)))
    except TypeError:
        name = type(module).__name__
        paths = [
            jax.tree_util.keystr(path)
            for path, leaf in jax.tree_util.tree_flatten_with_path(module)[0]
            if isinstance(leaf, _ARRAYS)
        ]
        raise TypeError(
            f"{name} holds arrays ({name.lower()}{paths[0] if paths else ''}), so it cannot be "
            f"hashed as jax.jit's static argument or the self of a method jax.jit compiles: "
            f"call the method as it is (evolax's public methods compile themselves), or "
            f"compile it with eqx.filter_jit: eqx.filter_jit({name.lower()}.method) in place "
            f"of jax.jit({name.lower()}.method)"
        ) from None
