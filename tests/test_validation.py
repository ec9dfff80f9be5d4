"""evolax.validation: argument checks name the argument and the expected range."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.validation import (
    check_in_interval,
    check_int_at_least,
    check_non_negative,
    check_non_negative_int,
    check_positive,
    did_you_mean,
)


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


@pytest.mark.parametrize(
    "value", [np.float32(-1.0), np.int64(0), np.array(-0.5), np.float64("nan")]
)
def test_numpy_numbers_are_checked(value):
    with pytest.raises(ValueError, match="mass must be a finite positive number"):
        check_positive("mass", value)
    with pytest.raises(ValueError, match=re.escape("rate must be in [1, 2]")):
        check_in_interval("rate", value, 1, 2)


def test_numpy_numbers_in_range_and_jax_arrays_pass():
    check_positive("mass", np.float32(0.5))
    check_non_negative("friction", np.array(0.0))
    check_in_interval("rate", np.float16(0.5), 0, 1)
    # JAX arrays may be tracers: not checked, traced or not
    check_positive("mass", jnp.array(-1.0))
    jax.vmap(lambda x: check_non_negative("friction", x) or x)(jnp.array([-1.0]))


@pytest.mark.parametrize("value", [-1, True, 2.0, np.int64(3), None])
def test_non_negative_int_takes_python_ints_only(value):
    with pytest.raises(ValueError, match=r"^count must be a non-negative integer, got "):
        check_non_negative_int("count", value)
    check_non_negative_int("count", 0)


@pytest.mark.parametrize("value", [1, True, 2.0, np.int64(3), None])
def test_int_at_least_takes_python_ints_from_the_minimum(value):
    with pytest.raises(ValueError, match=r"^n_objectives must be an integer >= 2, got "):
        check_int_at_least("n_objectives", value, 2)
    check_int_at_least("n_objectives", 2, 2)


def test_did_you_mean_names_the_closest_choices():
    names = ["pop_size", "init_std", "std_lr", "cartpole_easy", "cartpole_hard"]
    assert did_you_mean("pop_sze", names) == " (did you mean 'pop_size'?)"
    # equally close choices are all named; a word with nothing close gets nothing
    assert did_you_mean("cartpol", names) == " (did you mean 'cartpole_easy' or 'cartpole_hard'?)"
    assert did_you_mean("zzz", names) == ""
    assert did_you_mean(["zzz", "init_sd"], names) == " (did you mean 'init_std' for 'init_sd'?)"
