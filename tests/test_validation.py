"""evolax.validation: argument checks name the argument and the expected range."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import pytest

from evolax.validation import check_in_interval


@pytest.mark.parametrize(
    ("value", "ends", "error"),
    [
        (0.0, {}, None),
        (1.0, {}, None),
        (0.5, {"low_open": True, "high_open": True}, None),
        (0.0, {"low_open": True}, "rate must be in (0, 1]"),
        (1.0, {"high_open": True}, "rate must be in [0, 1)"),
        (-0.1, {}, "rate must be in [0, 1]"),
        (1.5, {}, "rate must be in [0, 1]"),
        (float("nan"), {}, "rate must be in [0, 1]"),
    ],
)
def test_check_in_interval_ends(value, ends, error):
    if error is None:
        check_in_interval("rate", value, 0, 1, **ends)
    else:
        with pytest.raises(ValueError, match=re.escape(error)):
            check_in_interval("rate", value, 0, 1, **ends)


def test_check_in_interval_lets_traced_values_through():
    jax.vmap(lambda x: check_in_interval("rate", x, 0, 1) or x)(jnp.array([2.0, -1.0]))
