"""ClipUp against a direct transcription of Toklu et al. (2020), Algorithm 1."""

import jax.numpy as jnp
import numpy as np
import optax
import pytest

from evolax.optim import clipup


def test_matches_paper_recurrence():
    lr, momentum, max_speed = 0.1, 0.9, 0.15
    opt = clipup(lr, momentum=momentum, max_speed=max_speed)
    params = {"w": jnp.zeros(3), "b": jnp.zeros(())}
    state = opt.init(params)
    rng = np.random.default_rng(0)
    x, v = np.zeros(4), np.zeros(4)
    for _ in range(6):
        ascent = rng.normal(size=4)
        # paper: v <- m v + lr g/|g|; if |v| > max: v <- max v/|v|; x <- x + v
        v = momentum * v + lr * ascent / np.linalg.norm(ascent)
        if np.linalg.norm(v) > max_speed:
            v = max_speed * v / np.linalg.norm(v)
        x = x + v
        grads = {
            "w": jnp.asarray(-ascent[:3], jnp.float32),
            "b": jnp.asarray(-ascent[3], jnp.float32),
        }
        updates, state = opt.update(grads, state, params)
        params = optax.apply_updates(params, updates)
        got = np.concatenate([params["w"], params["b"][None]])
        np.testing.assert_allclose(got, x, rtol=1e-5, atol=1e-6)


def test_zero_gradient_is_finite():
    opt = clipup(0.1)
    updates, _ = opt.update(jnp.zeros(3), opt.init(jnp.zeros(3)))
    np.testing.assert_array_equal(updates, 0.0)


@pytest.mark.parametrize(
    ("kwargs", "match"), [({"momentum": 1.0}, "momentum"), ({"max_speed": 0}, "max_speed")]
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        clipup(0.1, **kwargs)
