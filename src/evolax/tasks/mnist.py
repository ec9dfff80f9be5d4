"""MNIST classification as a one-step task, as in the EvoJAX paper (Tang et al., 2022)."""

from __future__ import annotations

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, UInt8

from evolax.data.mnist import IMAGE_SHAPE, N_CLASSES, MnistData, load_mnist
from evolax.tasks.base import Task
from evolax.types import Done, PRNGKey, Reward
from evolax.validation import check_positive_int


@chex.dataclass(frozen=True)
class MnistState:
    """One batch of MNIST.

    Attributes:
        obs: ``f32[batch, 28, 28, 1]`` images, pixels in ``[0, 1]``.
        labels: ``i32[batch]`` the digits shown.
    """

    obs: Float[Array, "batch 28 28 1"]
    labels: Int[Array, " batch"]


class MNIST(Task):
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
    max_steps: int = eqx.field(static=True)
    obs_shape: tuple[int, ...] = eqx.field(static=True)
    action_shape: tuple[int, ...] = eqx.field(static=True)

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
        return MnistState(obs=obs, labels=labels)

    def step(
        self, state: MnistState, action: Float[Array, "batch 10"], key: PRNGKey
    ) -> tuple[MnistState, Reward, Done]:
        """Reward: mean log-likelihood of the labels (training) or accuracy (test); done."""
        del key
        if tuple(action.shape) != self.action_shape:
            raise ValueError(
                f"action must have shape action_shape {self.action_shape}, got {action.shape}"
            )
        if self.test:
            correct = jnp.argmax(action, axis=-1) == state.labels
            reward = jnp.mean(correct.astype(jnp.float32))
        else:
            log_probs = jax.nn.log_softmax(action.astype(jnp.float32), axis=-1)
            reward = jnp.mean(jnp.take_along_axis(log_probs, state.labels[:, None], axis=-1))
        return state, reward, jnp.ones([], bool)
