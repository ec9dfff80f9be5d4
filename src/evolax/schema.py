"""Components from configuration: the schema of a class or function is its own signature.

A *component* is any class or function, named in a configuration by a short registered name
(``pgpe``), an exported class name (``PGPE``), an adapter and its first argument
(``gymnax:Pendulum-v1``, ``brax:ant``) or an import path (``package.module:Class``). Its
constructor's parameters (names, type hints, defaults and the ``Args:`` section of its
docstring) are the fields a configuration may set: no registry repeats them. A component's
configuration is a mapping ``{"name": NAME, FIELD: VALUE, ...}`` (or just ``NAME``); a field
whose type is itself a component kind (an algorithm's optimizer, a task's data) takes a
nested mapping.

Registries map a base type (``Algorithm``, ``optax.GradientTransformation``, ...) to the short
names of its components; :mod:`evolax.config` supplies them, so this module knows no
component.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

import docstring_parser
import jax
import jaxtyping
import numpy as np

from evolax.validation import did_you_mean

Registries = Mapping[Any, Mapping[str, Any]]
"""``{base type: {short name: class, function or "module:attribute"}}``; the key ``Callable``
names plain functions (fitness shapings)."""

REQUIRED = inspect.Parameter.empty


@dataclasses.dataclass(frozen=True)
class Field:
    """One constructor parameter: its name, type hint, default (``REQUIRED`` if none; a
    dataclass ``default_factory`` is ``None`` here and ``factory`` is set) and docstring."""

    name: str
    annotation: Any
    default: Any
    doc: str = ""
    factory: bool = False


def kind_registry(annotation: Any, registries: Registries) -> Mapping[str, Any]:
    """The names that may stand for a value of ``annotation`` (all its union members')."""
    names: dict[str, Any] = {}
    for arm in _arms(annotation):
        origin = typing.get_origin(arm) or arm
        for base, registry in registries.items():
            if base is Callable:  # functions: only where the hint says Callable
                matches = origin is Callable
            else:
                matches = origin is base or (
                    isinstance(origin, type) and isinstance(base, type) and issubclass(origin, base)
                )
            if matches:
                names.update(registry)
    return names


def _arms(annotation: Any) -> tuple[Any, ...]:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)


def _import(path: str, where: str) -> Any:
    module_name, _, attribute = path.partition(":")
    try:
        value: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"{where}: cannot import {path!r} ({error})") from None
    return value


def find(name: str, registry: Mapping[str, Any], where: str) -> tuple[Any, dict[str, Any]]:
    """The component ``name`` stands for, and the arguments its name sets: ``ADAPTER:ARG``
    passes ``ARG`` as the adapter's first parameter."""
    head, colon, tail = name.partition(":")
    if colon and head in registry:  # an adapter and its environment: gymnax:Pendulum-v1
        target, _ = find(head, registry, where)
        first = next(iter(fields(target)), None)
        if first is None:
            raise ValueError(f"{where}: {head!r} takes no arguments, so {name!r} is not valid")
        return target, {first.name: tail}
    if colon:
        return _import(name, where), {}
    by_class = {getattr(v, "__name__", None): v for v in registry.values()}
    target = registry.get(name, by_class.get(name))
    if target is None:
        choices = ", ".join(sorted(registry)) or "none registered"
        raise ValueError(
            f"{where}: unknown name {name!r}{did_you_mean(name, registry)}; choose from "
            f"{choices}, or give an import path package.module:Name"
        )
    return (_import(target, where) if isinstance(target, str) else target), {}


def _check_fields(where: str, target: Any, unknown: set[str], known: Iterable[str]) -> None:
    """Raise naming the ``unknown`` fields given for ``target``, and the ones it takes."""
    if unknown:
        names = sorted(unknown)
        raise ValueError(
            f"{where}: unknown field(s) {names}{did_you_mean(names, known)}; {_name(target)} "
            f"takes {sorted(known)}"
        )


def _hints(target: Any) -> dict[str, Any]:
    """Type hints of ``target``'s parameters: the constructor's, then the class's fields'."""
    hints: dict[str, Any] = {}
    sources = [cast(Any, target).__init__, target] if isinstance(target, type) else [target]
    for source in reversed(sources):
        try:
            found = typing.get_type_hints(source)
        except Exception:  # names only importable for type checkers: leave those untyped
            found = dict(getattr(source, "__annotations__", {}))
        # a resolved hint is not replaced by Any or by an unresolved string (a subclass's
        # generated __init__ whose module does not import its base's field types)
        hints.update(
            {
                k: v
                for k, v in found.items()
                if k not in hints or not (v is Any or isinstance(v, str))
            }
        )
    return hints


def _docs(target: Any) -> dict[str, str]:
    docs: dict[str, str] = {}
    for cls in reversed(getattr(target, "__mro__", (target,))):
        parsed = docstring_parser.parse(inspect.getdoc(cls) or "")
        docs.update({p.arg_name: " ".join((p.description or "").split()) for p in parsed.params})
    return docs


def fields(target: Any) -> list[Field]:
    """The parameters a configuration may set for ``target`` (``*args``/``**kwargs`` aside)."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return []
    hints, docs = _hints(target), _docs(target)
    factories = set()
    if dataclasses.is_dataclass(target):
        factories = {
            f.name
            for f in dataclasses.fields(target)
            if f.default_factory is not dataclasses.MISSING
        }
    result = []
    for p in signature.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        factory = p.name in factories
        default = None if factory else p.default
        annotation = hints.get(p.name, Any)
        if p.default is None and isinstance(annotation, type):  # a field resolved when made
            annotation = typing.Optional[annotation]  # noqa: UP045 (annotation is a value)
        result.append(Field(p.name, annotation, default, docs.get(p.name, ""), factory))
    return result


def type_name(annotation: Any) -> str:
    if annotation is Any:
        return "any"
    if annotation is type(None):
        return "None"
    if typing.get_origin(annotation) is Callable or annotation is Callable:
        return "function"
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return " or ".join(type_name(a) for a in typing.get_args(annotation))
    if isinstance(annotation, type) and typing.get_origin(annotation) is None:
        return annotation.__name__
    return str(annotation).replace("typing.", "").replace("collections.abc.", "")


def _fail(where: str, annotation: Any, value: Any) -> ValueError:
    return ValueError(f"{where}: expected {type_name(annotation)}, got {value!r}")


def coerce(value: Any, annotation: Any, registries: Registries, where: str) -> Any:
    """``value`` from a configuration as ``annotation`` asks (a nested component built), or a
    one-line ``ValueError`` naming ``where``."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is Any or isinstance(annotation, str | typing.TypeVar):
        if isinstance(value, Mapping) and "name" in value:
            return build(value, registries.get(Any, {}), registries, where)
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arm in sorted((a for a in args if a is not type(None)), key=_is_array):
            try:
                return coerce(value, arm, registries, where)
            except ValueError as error:
                errors.append(error)
        if len(errors) == 1:
            raise errors[0]
        finite = [e for e in errors if "finite" in str(e)]
        raise finite[0] if finite else _fail(where, annotation, value)
    if origin is typing.Literal:
        if value not in args:
            raise ValueError(f"{where}: expected one of {list(args)}, got {value!r}")
        return value
    if annotation is bool:
        if not isinstance(value, bool):
            raise _fail(where, annotation, value)
        return value
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _fail(where, annotation, value)
        return value
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _fail(where, annotation, value)
        if not math.isfinite(value):
            raise ValueError(f"{where}: expected a finite number, got {value!r}")
        return float(value)
    if annotation is str:
        if not isinstance(value, str):
            raise _fail(where, annotation, value)
        return value
    if origin in (tuple, list) or annotation in (tuple, list):
        if not isinstance(value, list | tuple):
            raise _fail(where, annotation, value)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(args) != len(value):
                raise ValueError(f"{where}: expected {len(args)} values, got {list(value)!r}")
            items = [
                coerce(v, a, registries, f"{where}[{i}]")
                for i, (v, a) in enumerate(zip(value, args, strict=True))
            ]
        else:
            item = args[0] if args else Any
            items = [coerce(v, item, registries, f"{where}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if (origin or annotation) is tuple else items
    if origin is dict or annotation is dict:  # keyword arguments: a mapping of plain values
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise _fail(where, annotation, value)
        item = args[1] if args else Any
        return {k: coerce(v, item, registries, f"{where}.{k}") for k, v in value.items()}
    if _is_array(annotation) and isinstance(value, list | tuple | int | float):
        array = np.asarray(value)  # nested lists of numbers; numpy: no backend started yet
        if array.dtype.kind not in "biuf" or not np.all(np.isfinite(array)):
            raise ValueError(f"{where}: expected finite numbers, got {value!r}")
        return array.astype(jax.dtypes.canonicalize_dtype(array.dtype))
    registry = kind_registry(annotation, registries)
    is_callable = origin is Callable or annotation is Callable
    if isinstance(value, str) and (registry or is_callable or ":" in value):
        if is_callable:  # a function by name: the function itself
            return find(value, registry, where)[0]
        return build({"name": value}, registry, registries, where)
    if isinstance(value, Mapping):
        if "name" not in value and not registry and isinstance(annotation, type):
            # a value of one class only (a model's shape, say): its fields, no name needed
            value = {"name": f"{annotation.__module__}:{annotation.__qualname__}", **value}
        if "name" not in value:
            raise ValueError(f"{where}: a component needs a name (one of {sorted(registry)})")
        return build(value, registry, registries, where)
    if isinstance(origin or annotation, type) and isinstance(value, origin or annotation):
        return value  # an object passed in directly, not from a file
    raise _fail(where, annotation, value)


def build(
    spec: Mapping[str, Any] | str,
    registry: Mapping[str, Any],
    registries: Registries,
    where: str,
    **given: Any,
) -> Any:
    """The component ``spec`` describes, each field checked against its type hint; ``given``
    are arguments supplied by the caller (not from the configuration)."""
    spec = {"name": spec} if isinstance(spec, str) else dict(spec)
    target, preset = find(spec.pop("name"), registry, where)
    known = {f.name: f for f in fields(target)}
    _check_fields(where, target, set(spec) - set(known), known)
    kwargs = dict(preset)
    for name, value in spec.items():
        kwargs[name] = coerce(value, known[name].annotation, registries, f"{where}.{name}")
    kwargs.update(given)
    missing = [
        f.name
        for f in known.values()
        if f.default is REQUIRED and not f.factory and f.name not in kwargs
    ]
    if missing:
        raise ValueError(f"{where}: {_name(target)} needs {missing}")
    try:
        return target(**kwargs)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}: {' '.join(str(error).split())}") from None


def _name(target: Any) -> str:
    return getattr(target, "__qualname__", repr(target))


def name_of(target: Any, registry: Mapping[str, Any]) -> str:
    """The short name of ``target`` in ``registry``, else its import path."""
    for name, value in registry.items():
        if value is target or value == f"{target.__module__}:{target.__qualname__}":
            return name
    return f"{target.__module__}:{target.__qualname__}"


def plain(value: Any, registries: Registries) -> Any:
    """``value`` as a configuration writes it (numbers, strings, lists, function names), or
    ``NotImplemented`` when a file cannot hold it (arrays, optimizer objects)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        items = [plain(v, registries) for v in value]
        return NotImplemented if NotImplemented in items else items
    if inspect.isfunction(value) and "<" not in value.__qualname__:
        return name_of(value, registries.get(Callable, {}))
    return NotImplemented


def complete(
    spec: Mapping[str, Any] | str, registry: Mapping[str, Any], registries: Registries, where: str
) -> dict[str, Any]:
    """``spec`` with every default a file can hold filled in, nested components completed: the
    resolved form a run records (defaults that are objects, such as a default optimizer, stay
    out and keep their value)."""
    spec = {"name": spec} if isinstance(spec, str) else dict(spec)
    target, preset = find(spec["name"], registry, where)
    known = {f.name for f in fields(target)}
    _check_fields(where, target, set(spec) - known - {"name"}, known)
    result: dict[str, Any] = {"name": spec["name"]}
    for f in fields(target):
        if f.name in preset:
            continue
        if f.name in spec:
            result[f.name] = _checked(spec[f.name], f.annotation, registries, f"{where}.{f.name}")
        elif f.default is not REQUIRED and not f.factory:
            value = plain(f.default, registries)
            if value is not NotImplemented:
                result[f.name] = value
    return result


def _checked(value: Any, annotation: Any, registries: Registries, where: str) -> Any:
    """``value`` checked against ``annotation`` without building anything, in plain form."""
    kind = kind_registry(annotation, registries)
    if isinstance(value, Mapping) and "name" in value:
        return complete(value, kind, registries, where)
    is_callable = typing.get_origin(annotation) is Callable or annotation is Callable
    if isinstance(value, str) and (kind or is_callable or ":" in value):
        find(value, kind, where)
        return value
    shown = plain(coerce(value, annotation, registries, where), registries)
    return value if shown is NotImplemented else shown


def _is_array(annotation: Any) -> bool:
    return annotation in (jax.Array, np.ndarray) or (
        isinstance(annotation, type) and issubclass(annotation, jaxtyping.AbstractArray)
    )


def reachable(annotation: Any, registries: Registries) -> bool:
    """Whether a configuration file (YAML values, nested components, names) can give a value
    of ``annotation``: numbers, strings, lists, arrays (as nested lists), registered or
    importable components and functions. Only objects no constructor call builds are not."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(reachable(a, registries) for a in args if a is not type(None))
    if origin in (tuple, list, dict):
        return all(reachable(a, registries) for a in args if a is not Ellipsis)
    if annotation in (bool, int, float, str, tuple, list, dict) or origin is typing.Literal:
        return True
    if annotation is Any or isinstance(annotation, str | typing.TypeVar) or _is_array(annotation):
        return True  # a plain value, or a component by import path
    if origin is Callable or annotation is Callable or kind_registry(annotation, registries):
        return True
    # any other class: a component by import path, whose own fields must be reachable
    return isinstance(annotation, type) and bool(inspect.signature(annotation).parameters)
