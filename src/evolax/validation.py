"""Argument checks that raise ``ValueError`` naming the argument and what was expected."""

from __future__ import annotations


def check_positive_int(name: str, value: object) -> None:
    """Raise unless ``value`` is a positive ``int`` (``bool`` is not accepted)."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def check_positive(name: str, value: object) -> None:
    """Raise unless ``value`` is a positive number; traced arrays (under ``vmap``) pass through."""
    if isinstance(value, (int, float)) and not value > 0:
        raise ValueError(f"{name} must be positive, got {value!r}")
