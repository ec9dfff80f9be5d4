"""Argument checks that raise ``ValueError`` naming the argument and what was expected."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable

import numpy as np


def check_positive_int(name: str, value: object) -> None:
    """Raise unless ``value`` is a positive ``int`` (``bool`` is not accepted)."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def check_non_negative_int(name: str, value: object) -> None:
    """Raise unless ``value`` is an ``int`` ``>= 0`` (``bool`` is not accepted)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")


def check_int_at_least(name: str, value: object, minimum: int) -> None:
    """Raise unless ``value`` is an ``int`` ``>= minimum`` (``bool`` is not accepted)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def did_you_mean(given: str | Iterable[str], choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)``: the closest of ``choices`` to each word ``given`` that has
    any close enough (difflib's ratio at least 0.6; equally close ones joined by "or"), for
    an error message; ``""`` if none."""
    words = [given] if isinstance(given, str) else list(given)
    choices = list(choices)
    found = [(w, _closest(w, choices)) for w in words]
    found = [(w, c) for w, c in found if c]
    if not found:
        return ""
    if len(words) == 1:
        return f" (did you mean {found[0][1]}?)"
    return " (did you mean " + ", ".join(f"{c} for {w!r}" for w, c in found) + "?)"


def _closest(word: str, choices: list[str]) -> str:
    """The choices closest to ``word`` (ratio >= 0.6), quoted and joined by "or"."""
    ratios = {c: difflib.SequenceMatcher(None, word, c).ratio() for c in choices}
    best = max(ratios.values(), default=0.0)
    if best < 0.6:
        return ""
    return " or ".join(repr(c) for c, r in ratios.items() if r == best)


def concrete_number(value: object) -> float | None:
    """``value`` as a ``float`` when it is a concrete Python or NumPy real number (a NumPy
    scalar or 0-d array); ``None`` for anything else, JAX arrays included: they may be tracers
    (a field vmapped over, or set inside ``jit``), whose values are unknown when checked."""
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        return float(value)
    return None


def check_positive(name: str, value: object) -> None:
    """Raise unless ``value`` is a finite positive number; traced arrays (under ``vmap``) pass
    through."""
    number = concrete_number(value)
    if number is not None and not (math.isfinite(number) and number > 0):
        raise ValueError(f"{name} must be a finite positive number, got {value!r}")


def check_non_negative(name: str, value: object) -> None:
    """Raise unless ``value`` is a finite number ``>= 0``; traced arrays (under ``vmap``) pass
    through."""
    number = concrete_number(value)
    if number is not None and not (math.isfinite(number) and number >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


def check_in_interval(
    name: str,
    value: object,
    low: float,
    high: float,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> None:
    """Raise unless the number ``value`` lies between ``low`` and ``high`` (closed ends unless
    ``low_open`` / ``high_open``); traced arrays (under ``vmap``) pass through."""
    number = concrete_number(value)
    if number is None:
        return
    above = number > low if low_open else number >= low
    below = number < high if high_open else number <= high
    if not (above and below):
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")


def population_size(population: object) -> int:
    """The leading axis shared by every leaf of a population pytree (but its shared parts,
    :class:`evolax.population.Shared`); raise if they disagree (:func:`evolax.population.size`)."""
    from evolax.population import size

    return size(population)
