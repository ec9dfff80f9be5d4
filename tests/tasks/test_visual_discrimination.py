"""HyperNEAT's boxes visual discrimination task (Stanley, D'Ambrosio & Gauci 2009, section 5)
and the grid substrate that reads it as two sheets."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.signal import convolve2d

from evolax.policies import HyperNEAT
from evolax.tasks import VisualDiscrimination
from evolax.tasks.visual_discrimination import trials


def episode_return(task, policy_fn):
    """The return of one episode whose action is ``policy_fn(field)``."""
    state = task.reset(jax.random.key(0))
    total = 0.0
    for _ in range(task.max_steps):
        state, reward, done = task.step(state, policy_fn(np.asarray(state.obs)), None)
        total += float(reward)
    assert bool(done)
    return total


def objects(field):
    """The small object's pixel and the large one's centre in a visual field, found by
    counting each lit pixel's lit neighbours (3 x 3, itself included)."""
    lit = convolve2d(field, np.ones((3, 3)), mode="same") * field
    small = np.argwhere(lit == 1.0)
    centre = np.argwhere(lit == 9.0)
    assert small.shape == (1, 2) and centre.shape == (1, 2), field
    return small[0], centre[0]


def test_the_75_trials_are_the_papers():
    """One lit pixel and one lit 3 x 3 square, always apart and in view; the small object at
    25 positions spread over the field, the large one 5 pixels right, down and diagonally of
    it, wrapping around the field's edge (then moved at most one pixel to be in view)."""
    fields, targets = trials()
    assert fields.shape == (75, 11, 11) and targets.shape == (75, 2)
    assert np.all(fields.sum(axis=(1, 2)) == 10)  # 1 + 9 pixels: the objects never overlap
    smalls = []
    for field, target, direction in zip(fields, targets, np.tile(np.arange(3), 25), strict=True):
        small, centre = objects(field)
        np.testing.assert_array_equal(centre, target)
        offset = (np.array([[0, 5], [5, 0], [5, 5]])[direction] + small) % 11
        assert np.all(np.abs(centre - offset) <= 1), (small, centre)
        smalls.append(tuple(small))
    assert len(set(smalls)) == 25 and {r for r, _ in smalls} == {1, 3, 5, 7, 9}


def test_returns_are_minus_the_summed_squared_distances():
    task = VisualDiscrimination()
    # a 3 x 3 box filter peaks at the large object's centre (9 lit pixels; 7 at most elsewhere)
    assert episode_return(task, lambda f: convolve2d(f, np.ones((3, 3)), "same").ravel()) == 0.0
    # choosing the small object misses by its distance to the large one, pixels 0.2 apart
    fields, targets = trials()
    gaps = [objects(f)[0] - t for f, t in zip(fields, targets, strict=True)]
    expected = -sum(0.04 * float(np.sum(g**2)) for g in gaps)

    def small_object(field):
        row, col = objects(field)[0]
        return jnp.zeros(121).at[row * 11 + col].set(1.0)

    assert episode_return(task, small_object) == pytest.approx(expected, rel=1e-5)
    with pytest.raises(ValueError, match="max_steps must be 75"):
        VisualDiscrimination(max_steps=10)


def test_the_grid_substrate_puts_each_pixel_at_its_place_on_two_sheets():
    """A CPPN whose output is ``x1`` paints, from the input at column ``c``, the weight of
    ``x = -1 + 0.2 c`` to every output; one whose output is ``y2`` paints to the output at
    row ``r`` that of ``y = -1 + 0.2 r``."""
    policy = HyperNEAT(
        substrate="grid", hidden_sizes=(), activation_options=("identity",),
        output_activation="identity",
    )  # fmt: skip
    genome = policy.init(None, (11, 11), (121,))
    position = np.linspace(-1, 1, 11)

    def painted(x):
        return np.where(np.abs(x) < 0.2, 0.0, np.sign(x) * (np.abs(x) - 0.2) / 0.8 * 3.0)

    for source, expected in (
        (0, np.repeat(painted(np.tile(position, 11))[:, None], 121, 1)),  # x1: input column
        (3, np.repeat(painted(np.repeat(position, 11))[None, :], 121, 0)),  # y2: output row
    ):
        cppn = genome.replace(weight=jnp.where(genome.innovation == source, 1.0, 0.0))
        (weights,) = jax.jit(policy.prepare)(cppn)
        np.testing.assert_allclose(weights, expected, atol=1e-6)
    field = np.asarray(trials()[0][0])
    action, _ = policy.apply([weights], field, policy.reset(None), None)
    np.testing.assert_allclose(action, field.ravel() @ expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "shapes", "match"),
    [
        ({"substrate": "grid"}, ((11, 11), (121,)), r"hidden_sizes must be \[\] with"),
        ({"substrate": "ring", "hidden_sizes": ()}, ((4,), (1,)), "substrate must be one of"),
        ({"output_activation": "relu"}, ((4,), (1,)), "output_activation must be one of"),
        ({"substrate": "grid", "hidden_sizes": ()}, ((121,), (121,)), "needs a 2-D obs_shape"),
        ({"substrate": "grid", "hidden_sizes": ()}, ((11, 11), (3,)), "needs a 2-D action_shape"),
    ],
)
def test_bad_substrates_are_refused_in_one_line(kwargs, shapes, match):
    with pytest.raises(ValueError, match=match):
        HyperNEAT(**kwargs).init(None, *shapes)
