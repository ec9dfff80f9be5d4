"""Convolutional classifier policy (EvoJAX's MNIST ConvNet)."""

from __future__ import annotations

import itertools
import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from evolax.policies.base import EmptyState, Policy
from evolax.population import unshare
from evolax.seeded import LowRank
from evolax.types import Params, PRNGKey
from evolax.validation import check_positive_int

POOL_SIZE = 2
# Inputs with at most this many channels take `_direct_conv_relu_pool`. XLA's CPU convolution
# is slow for few input channels: on 1024 28x28 images with a 5x5 kernel and 8 outputs, one
# input channel takes 81 ms through `conv_general_dilated` + pooling and 5.4 ms direct; at 4
# channels 97 ms vs 34 ms; at 8 channels (14x14, 16 outputs) the XLA convolution wins (18 ms vs
# 58 ms).
DIRECT_MAX_IN_CHANNELS = 4


def conv2d(
    x: Float[Array, "batch h w c_in"],
    w: Float[Array, "k k c_in c_out"],
    b: Float[Array, " c_out"],
) -> Float[Array, "batch h w c_out"]:
    """Stride-1 'SAME' cross-correlation (no kernel flip, as in flax/TF) plus a bias."""
    y = jax.lax.conv_general_dilated(
        x, w, window_strides=(1, 1), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )
    return y + b[None, None, None, :]


def max_pool(x: Float[Array, "batch h w c"]) -> Float[Array, "batch h//2 w//2 c"]:
    """2x2 max-pooling with stride 2 ('VALID': an odd last row/column is dropped)."""
    window = (1, POOL_SIZE, POOL_SIZE, 1)
    init = jnp.array(-jnp.inf, x.dtype)
    return jax.lax.reduce_window(x, init, jax.lax.max, window, window, "VALID")


def conv_relu_pool(
    x: Float[Array, "batch h w c_in"],
    w: Float[Array, "k k c_in c_out"],
    b: Float[Array, " c_out"],
) -> Float[Array, "batch h//2 w//2 c_out"]:
    """``max_pool(relu(conv2d(x, w, b)))``, computed the fastest way for the input's channels.

    ``w`` may be a :class:`~evolax.seeded.LowRank` view (a member of a low-rank evolution
    strategy): the convolution with ``W + delta`` is then ``conv(x, W)`` plus the
    perturbation's correction, a convolution with its ``r`` factor kernels."""
    if isinstance(w, LowRank):
        y = conv2d(x, unshare(w.w), b) + w.correction(
            lambda k: conv2d(x, k, jnp.zeros(k.shape[-1]))
        )
        return max_pool(jax.nn.relu(y))
    if x.shape[-1] <= DIRECT_MAX_IN_CHANNELS:
        return _direct_conv_relu_pool(x, w, b)
    return max_pool(jax.nn.relu(conv2d(x, w, b)))


def _direct_conv_relu_pool(x, w, b):
    """The same block as one elementwise expression that XLA fuses into a single loop.

    Each output of the pooled map is the max over its 2x2 window of the convolution, and each
    of those four is a sum of ``k * k * c_in`` shifted input planes times kernel weights. No
    un-pooled activation or patch matrix is ever stored, which is what makes this fast when
    ``c_in`` is small (the work is ``k * k * c_in`` multiply-adds per output either way).
    """
    k = w.shape[0]
    height, width = x.shape[1] // POOL_SIZE, x.shape[2] // POOL_SIZE
    before = (k - 1) // 2  # 'SAME' padding, as XLA places it for even kernels too
    padded = jnp.pad(x, ((0, 0), (before, k - 1 - before), (before, k - 1 - before), (0, 0)))
    pooled: Array | float | None = None
    for dy, dx in itertools.product(range(POOL_SIZE), repeat=2):
        total: Array | float = 0.0
        for i, j in itertools.product(range(k), repeat=2):
            # rows dy+i, dy+i+2, ...: the inputs under kernel offset (i, j) of window corner
            # (dy, dx) for every pooled output
            plane = padded[
                :,
                dy + i : dy + i + POOL_SIZE * (height - 1) + 1 : POOL_SIZE,
                dx + j : dx + j + POOL_SIZE * (width - 1) + 1 : POOL_SIZE,
            ]
            for c in range(x.shape[-1]):
                total = total + plane[..., c : c + 1] * w[i, j, c][None, None, None, :]
        pooled = total if pooled is None else jnp.maximum(pooled, total)
    return jax.nn.relu(pooled + b[None, None, None, :])


class ConvNet(Policy):
    """A small CNN classifier over a batch of images: EvoJAX's MNIST ``ConvNet``.

    Per entry of ``channels``: a ``kernel_size`` x ``kernel_size`` 'SAME' convolution with
    bias, ReLU and 2x2 max-pooling; then flatten, a dense layer to the classes and
    ``log_softmax``. The defaults give EvoJAX's network, 11,274 parameters for 28x28x1 images
    and 10 classes (208 + 3,216 + 7,850).

    Parameters are ``{"conv": [{"w": f32[k, k, c_in, c_out], "b": f32[c_out]}, ...],
    "dense": {"w": f32[features, classes], "b": f32[classes]}}``, initialised LeCun-normal
    (``N(0, 1 / fan_in)``) with zero biases.

    Args:
        channels: output channels of each convolution, e.g. ``(8, 16)``.
        kernel_size: width and height of the convolution kernels.
    """

    channels: tuple[int, ...] = eqx.field(static=True, default=(8, 16), converter=tuple)
    kernel_size: int = eqx.field(static=True, default=5)

    def __check_init__(self):
        if not self.channels:
            raise ValueError("channels must name at least one convolution, got ()")
        for i, width in enumerate(self.channels):
            check_positive_int(f"channels[{i}]", width)
        check_positive_int("kernel_size", self.kernel_size)

    def _sizes(
        self, obs_shape: tuple[int, ...], action_shape: tuple[int, ...]
    ) -> tuple[int, int, int]:
        """``(in_channels, flattened features, classes)``; raise for unusable shapes."""
        obs_shape, action_shape = tuple(obs_shape), tuple(action_shape)
        if len(obs_shape) != 4 or not all(
            isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in obs_shape
        ):
            raise ValueError(
                f"obs_shape must be (batch, height, width, channels) of positive ints, "
                f"got {obs_shape}"
            )
        if len(action_shape) != 2 or not all(
            isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in action_shape
        ):
            raise ValueError(
                f"action_shape must be (batch, classes) of positive ints, got {action_shape}"
            )
        if obs_shape[0] != action_shape[0]:
            raise ValueError(
                f"obs_shape and action_shape must share the batch size, got {obs_shape[0]} "
                f"and {action_shape[0]}"
            )
        _, height, width, in_channels = obs_shape
        shrink = POOL_SIZE ** len(self.channels)
        if height < shrink or width < shrink:
            raise ValueError(
                f"obs_shape images of {height}x{width} are too small for {len(self.channels)} "
                f"2x2 poolings: need at least {shrink}x{shrink}"
            )
        features = (height // shrink) * (width // shrink) * self.channels[-1]
        return in_channels, features, action_shape[1]

    def init(
        self, key: PRNGKey, obs_shape: tuple[int, ...], action_shape: tuple[int, ...]
    ) -> Params:
        """Parameters for ``obs_shape = (batch, h, w, c)``, ``action_shape = (batch, classes)``."""
        in_channels, features, classes = self._sizes(obs_shape, action_shape)
        k = self.kernel_size
        shapes: list[tuple[int, ...]] = [
            (k, k, c_in, c_out)
            for c_in, c_out in zip((in_channels, *self.channels[:-1]), self.channels, strict=True)
        ]
        shapes.append((features, classes))
        # One draw for every kernel (one random-number kernel compiles much faster than several).
        noise = jax.random.normal(key, (sum(math.prod(shape) for shape in shapes),))
        offsets = itertools.accumulate((math.prod(shape) for shape in shapes), initial=0)
        weights = [
            noise[start : start + math.prod(shape)].reshape(shape)
            / math.sqrt(math.prod(shape[:-1]))  # fan-in: all but the output axis
            for start, shape in zip(offsets, shapes, strict=False)
        ]
        layers = [{"w": w, "b": jnp.zeros(w.shape[-1])} for w in weights]
        return {"conv": layers[:-1], "dense": layers[-1]}

    def apply(
        self, params: Params, obs: Float[Array, "batch h w c"], state: EmptyState, key: PRNGKey
    ) -> tuple[Float[Array, "batch classes"], EmptyState]:
        """Log-probabilities ``f32[batch, classes]`` of a batch of images (one individual)."""
        del key
        if obs.ndim != 4:
            raise ValueError(
                f"obs must be a batch of images (batch, height, width, channels), got shape "
                f"{obs.shape}"
            )
        x = obs
        for layer in params["conv"]:
            x = conv_relu_pool(x, layer["w"], layer["b"])
        x = x.reshape(x.shape[0], -1)
        logits = x @ params["dense"]["w"] + params["dense"]["b"][None, :]
        return jax.nn.log_softmax(logits, axis=-1), state
