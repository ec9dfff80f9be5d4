"""MNIST classification as a one-step task, as in the EvoJAX paper (Tang et al., 2022)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int, UInt8

from evolax.data.mnist import IMAGE_SHAPE, N_CLASSES, MnistData, load_mnist
from evolax.drawing import CHAR_SIZE, draw_text
from evolax.tasks.base import ClassificationTask, mean_log_likelihood
from evolax.types import PRNGKey, Reward
from evolax.validation import check_positive_int


@chex.dataclass(frozen=True)
class MnistState:
    """One batch of MNIST.

    Attributes:
        obs: ``f32[batch, 28, 28, 1]`` images, pixels in ``[0, 1]``.
        labels: ``i32[batch]`` the digits shown.
        predictions: ``i32[batch]`` the classes the last action chose (``-1`` before any step).
    """

    obs: Float[Array, "batch 28 28 1"]
    labels: Int[Array, " batch"]
    predictions: Int[Array, " batch"]


class MNIST(ClassificationTask):
    """Classify a batch of handwritten digits in one step (a supervised task).

    ``reset`` draws the batch; ``step`` scores the action, ``f32[batch, 10]`` class logits
    (log-probabilities, such as :class:`~evolax.policies.ConvNet`'s output, are logits too:
    the task applies ``log_softmax`` to whatever it gets), and is always ``done``.

    - Training (``test=False``): a batch of ``batch_size`` distinct training images drawn
      uniformly (without replacement, as EvoJAX does); the reward is the mean log-likelihood
      of the true labels (negative cross-entropy, at most 0).
    - Test (``test=True``): the batch is the whole test set in order, so ``batch_size`` is the
      test-set size (10,000) whatever is passed; the reward is the accuracy in ``[0, 1]``.

    The images (``uint8``) and labels of the split in use are stored once, as array fields of
    the module; pass the task to ``jit`` as an argument rather than closing over it, or they
    become constants of the compiled program.

    Args:
        batch_size: training images per batch, at most the training-set size.
        test: score on the test set (accuracy) instead of training batches.
        data: the dataset (for example a subset); ``None`` loads it with
            :func:`~evolax.data.load_mnist`.
    """

    images: UInt8[Array, "n 28 28"]
    labels: Int[Array, " n"]
    batch_size: int = eqx.field(static=True)
    test: bool = eqx.field(static=True)

    def __init__(self, batch_size: int = 1024, test: bool = False, data: MnistData | None = None):
        check_positive_int("batch_size", batch_size)
        if not isinstance(test, bool):
            raise ValueError(f"test must be a bool, got {test!r}")
        if data is None:
            data = load_mnist()
        elif not isinstance(data, MnistData):
            raise ValueError(f"data must be an MnistData or None, got {type(data).__name__}")
        if test:
            images, labels = data.test_images, data.test_labels
            if len(labels) == 0:
                raise ValueError("data has no test images: test=True needs at least one")
            batch_size = len(labels)
        else:
            images, labels = data.train_images, data.train_labels
            if batch_size > len(labels):
                raise ValueError(
                    f"batch_size must be at most the number of training images ({len(labels)}), "
                    f"got {batch_size}"
                )
        self.images = jnp.asarray(images, jnp.uint8)
        self.labels = jnp.asarray(labels, jnp.int32)
        self.batch_size = batch_size
        self.test = test
        self.max_steps = 1
        self.obs_shape = (batch_size, *IMAGE_SHAPE, 1)
        self.action_shape = (batch_size, N_CLASSES)

    def reset(self, key: PRNGKey) -> MnistState:
        """A training batch drawn with ``key`` (without replacement), or the whole test set."""
        if self.test:
            images, labels = self.images, self.labels
        else:
            index = jax.random.choice(key, self.labels.shape[0], (self.batch_size,), replace=False)
            images, labels = self.images[index], self.labels[index]
        obs = (images.astype(jnp.float32) / 255.0)[..., None]
        return MnistState(obs=obs, labels=labels, predictions=jnp.full_like(labels, -1))

    def score(
        self, state: MnistState, logits: Float[Array, "batch 10"], predictions: Int[Array, " batch"]
    ) -> Reward:
        """Mean log-likelihood of the labels (training) or accuracy (test)."""
        if self.test:
            return jnp.mean((predictions == state.labels).astype(jnp.float32))
        return mean_log_likelihood(logits, state.labels)

    def render(self, state: MnistState, rows: int = 6, columns: int = 8) -> np.ndarray:
        """The first ``rows * columns`` digits, each captioned with its predicted class.

        Correct predictions are green, wrong ones red with the true label in brackets; before
        a step (no predictions) captions show the labels in black.
        """
        from PIL import Image, ImageDraw

        images, labels, predictions = (
            np.asarray(x) for x in (state.obs, state.labels, state.predictions)
        )
        if images.ndim != 4:
            raise ValueError(
                f"render draws one state: obs must be (batch, 28, 28, 1), got {images.shape}"
            )
        scale, caption = 3, CHAR_SIZE[1] + 4
        cell_w, cell_h = IMAGE_SHAPE[1] * scale + 8, IMAGE_SHAPE[0] * scale + caption + 8
        count = min(rows * columns, len(labels))
        canvas = Image.new("RGB", (columns * cell_w, -(-count // columns) * cell_h), "white")
        draw = ImageDraw.Draw(canvas)
        for i in range(count):
            x, y = (i % columns) * cell_w + 4, (i // columns) * cell_h + 4
            pixels = np.rint((1.0 - images[i, ..., 0]) * 255).astype(np.uint8)  # ink is dark
            digit = Image.fromarray(pixels, mode="L").resize(
                (IMAGE_SHAPE[1] * scale, IMAGE_SHAPE[0] * scale),
                Image.Resampling.NEAREST,
            )
            canvas.paste(digit.convert("RGB"), (x, y))
            label, guess = int(labels[i]), int(predictions[i])
            if guess < 0:
                text, color = f"{label}", (0, 0, 0)
            elif guess == label:
                text, color = f"{guess}", (0, 140, 0)
            else:
                text, color = f"{guess} ({label})", (200, 0, 0)
            draw_text(draw, (x, y + IMAGE_SHAPE[0] * scale + 2), text, fill=color)
        return np.asarray(canvas)
