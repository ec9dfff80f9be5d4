"""Paint with semi-transparent triangles what an image-text model says a prompt shows.

The "fitting abstract concepts" half of Tian & Ha (2021), "Modern Evolution Strategies for
Creativity: Fitting Concrete Images and Abstract Concepts" (EvoMUSART 2022,
arXiv:2109.08857): the triangles of :class:`~evolax.tasks.image_approximation.ImageApproximation`
are evolved to maximise the CLIP similarity between the painting and a text prompt; EvoJAX
ships it as the ``AbstractPainting02`` notebook. Here the score is any JAX function of the
painting; :class:`~evolax.tasks.clip.CLIPScorer` is the CLIP one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from evolax.tasks.image_approximation import (
    DEFAULT_SIZE,
    CanvasState,
    TrianglePainting,
    _check_size,
    captioned_sheet,
    check_painting_options,
)
from evolax.types import Done, PRNGKey, Reward
from evolax.validation import check_non_negative_int

DEFAULT_CROP_SCALE = (0.7, 0.9)
"""The range of the area of a random crop, as a fraction of the canvas (EvoJAX's)."""

DEFAULT_CROP_RATIO = (3 / 4, 4 / 3)
"""The range of the aspect ratio (width / height) of a random crop (EvoJAX's)."""


def _check_range(name: str, value: object, upper: float | None) -> tuple[float, float]:
    limit = "" if upper is None else f" <= {upper:g}"
    expected = f"a (low, high) pair of numbers with 0 < low <= high{limit}"
    try:
        low, high = (float(v) for v in value)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {expected}, got {value!r}") from None
    if not (0 < low <= high and math.isfinite(high) and (upper is None or high <= upper)):
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    return low, high


def _bilinear_weights(
    start: Float[Array, ""], length: Float[Array, ""], size: int
) -> Float[Array, "size size"]:
    """``f32[size, size]``: row ``i`` holds the weights of the ``size`` input pixels in the
    bilinear sample of output pixel ``i``, when the span ``[start, start + length)`` of the
    input (in pixels) is stretched over ``size`` output pixels. The triangle filter of width
    one input pixel, centred where the output pixel's centre falls; weights of pixels outside
    the input are dropped and the rest renormalised (as Pillow does at the borders)."""
    centres = start + (jnp.arange(size, dtype=jnp.float32) + 0.5) * (length / size)
    pixels = jnp.arange(size, dtype=jnp.float32) + 0.5
    weights = jnp.maximum(1.0 - jnp.abs(centres[:, None] - pixels[None, :]), 0.0)
    return weights / jnp.sum(weights, axis=1, keepdims=True)


@chex.dataclass(frozen=True)
class TextGuidedPaintingState(CanvasState):
    """The canvas (``obs``, ``canvas``: see
    :class:`~evolax.tasks.image_approximation.CanvasState`) and its score.

    Attributes:
        score: ``f32[]``, the reward of the last step (NaN before the first).
    """

    score: Float[Array, ""]


class TextGuidedPainting(TrianglePainting):
    """Paint ``n_triangles`` semi-transparent triangles that ``scorer`` rates highly.

    A one-step task for direct encoding (use :class:`~evolax.policies.direct.Direct`): the
    action is the genome, ``f32[n_triangles, 10]``, decoded and painted exactly as
    :class:`~evolax.tasks.image_approximation.ImageApproximation` does (same ``squash``,
    ``alpha_scale`` and ``background`` options, see there). The reward is
    ``scorer(painting)``, maximised, with ``done = True``.

    ``scorer`` is any JAX function ``f32[height, width, 3]`` (in ``[0, 1]``) ``-> f32[]``,
    written for one image (evolax ``vmap``s the task over the population), e.g.
    :class:`~evolax.tasks.clip.CLIPScorer` (cosine similarity to a text prompt under CLIP). It
    is a field of the task: make it a pytree whose arrays are leaves (an equinox ``Module``,
    as ``CLIPScorer`` is, or a ``jax.tree_util.Partial`` of a function and its weights) and
    pass the task to ``jit`` as an argument (``eqx.filter_jit``, as :class:`~evolax.Trainer`
    users do), so the weights are inputs of the compiled program rather than constants baked
    into it; then also a task with another prompt reuses the compiled program.

    ``n_crops > 0`` scores random crops instead of the whole painting, the augmentation of
    Tian & Ha and EvoJAX: each step draws ``n_crops`` boxes from its key as torchvision's
    ``RandomResizedCrop`` does (area a fraction ``crop_scale`` of the canvas, aspect ratio
    ``width / height`` log-uniform in ``crop_ratio``, shrunk to fit, position uniform), resizes
    each to the canvas size (bilinear) and rewards the mean score of the crops. evolax's
    rollout hands every individual of a generation the same step key, so they are scored on
    the same crops. The crops reward paintings that score well from several views rather
    than through details of one; score the best painting on the whole canvas
    (``n_crops=0``, e.g. as the trainer's ``test_task``).

    Args:
        scorer: ``scorer(image) -> score``, see above.
        n_triangles: triangles per painting (50 in the paper).
        size: ``(height, width)`` of the canvas (200 x 200 in the paper).
        alpha_scale: the largest opacity of a triangle, in ``(0, 1]`` (0.5 in the paper).
        background: RGB colour of the empty canvas in ``[0, 1]`` (white in the paper).
        squash: ``"minmax"`` (the paper's) or ``"clip"``, see ``ImageApproximation``.
        n_crops: random crops scored per step (4 in EvoJAX); ``0``: the whole painting.
        crop_scale: ``(low, high)`` range of a crop's area as a fraction of the canvas,
            ``0 < low <= high <= 1``.
        crop_ratio: ``(low, high)`` range of a crop's aspect ratio, ``0 < low <= high``.

    Raises:
        TypeError: ``scorer`` is not callable.
        ValueError: a bad option, or a scorer that does not map an ``f32[height, width, 3]``
            image to a scalar.
    """

    scorer: Callable[[Float[Array, "h w 3"]], Float[Array, ""]]
    background: Float[Array, "3"]
    alpha_scale: float
    n_crops: int = eqx.field(static=True)
    crop_scale: tuple[float, float] = eqx.field(static=True)
    crop_ratio: tuple[float, float] = eqx.field(static=True)

    def __init__(
        self,
        scorer: Callable[[Float[Array, "h w 3"]], Float[Array, ""]],
        n_triangles: int = 50,
        size: tuple[int, int] = DEFAULT_SIZE,
        alpha_scale: float = 0.5,
        background: tuple[float, float, float] = (1.0, 1.0, 1.0),
        squash: Literal["minmax", "clip"] = "minmax",
        n_crops: int = 0,
        crop_scale: tuple[float, float] = DEFAULT_CROP_SCALE,
        crop_ratio: tuple[float, float] = DEFAULT_CROP_RATIO,
    ):
        if not callable(scorer):
            raise TypeError(
                "scorer must be callable as scorer(image f32[height, width, 3]) -> f32[], got "
                f"{type(scorer).__name__}"
            )
        color = check_painting_options(n_triangles, alpha_scale, background, squash)
        height, width = _check_size(size)
        check_non_negative_int("n_crops", n_crops)
        self.crop_scale = _check_range("crop_scale", crop_scale, upper=1.0)
        self.crop_ratio = _check_range("crop_ratio", crop_ratio, upper=None)
        image = jax.ShapeDtypeStruct((height, width, 3), jnp.float32)
        score = jax.eval_shape(scorer, image)
        if not hasattr(score, "shape") or tuple(score.shape) != ():
            raise ValueError(
                f"scorer must map an image f32[{height}, {width}, 3] to a scalar f32[], got "
                f"{getattr(score, 'shape', type(score).__name__)}"
            )
        self.scorer = scorer
        self._set_painting(n_triangles, (height, width), alpha_scale, color, squash)
        self.n_crops = n_crops

    def crop_boxes(self, key: PRNGKey | None) -> Float[Array, "n_crops 4"]:
        """The step's random crops, one ``(top, left, height, width)`` row each, in pixels
        (continuous: a box may start and end inside a pixel); see the class docstring."""
        if key is None:
            raise ValueError("n_crops > 0 draws random crops: pass a PRNG key to step")
        # one draw for the four uniforms of every box (each draw compiles its own threefry)
        unit = jax.random.uniform(key, (4, self.n_crops), jnp.float32)
        low, high = self.crop_scale
        area = (low + (high - low) * unit[0]) * (self.height * self.width)
        log_low, log_high = math.log(self.crop_ratio[0]), math.log(self.crop_ratio[1])
        ratio = jnp.exp(log_low + (log_high - log_low) * unit[1])
        height, width = jnp.sqrt(area / ratio), jnp.sqrt(area * ratio)
        shrink = jnp.maximum(jnp.maximum(height / self.height, width / self.width), 1.0)
        height, width = height / shrink, width / shrink
        top = unit[2] * (self.height - height)
        left = unit[3] * (self.width - width)
        return jnp.stack([top, left, height, width], axis=-1)

    def crops(
        self, image: Float[Array, "h w 3"], key: PRNGKey | None
    ) -> Float[Array, "n_crops h w 3"]:
        """The ``n_crops`` random crops of ``image`` (boxes from :meth:`crop_boxes` with
        ``key``), each resized to the canvas size: bilinear, as Pillow's ``resize`` of a box
        (a crop is never larger than the canvas, so this only enlarges)."""
        return jax.vmap(self._crop, in_axes=(None, 0))(image, self.crop_boxes(key))

    def _crop(self, image: Float[Array, "h w 3"], box: Float[Array, "4"]) -> Float[Array, "h w 3"]:
        rows = _bilinear_weights(box[0], box[2], self.height)
        cols = _bilinear_weights(box[1], box[3], self.width)
        return jnp.einsum("ir,jc,rcx->ijx", rows, cols, image.astype(jnp.float32))

    def _score(self, image: Float[Array, "h w 3"]) -> Float[Array, ""]:
        score = self.scorer(image)
        if jnp.shape(score) != ():
            raise ValueError(f"scorer must return a scalar f32[], got shape {jnp.shape(score)}")
        return jnp.asarray(score, jnp.float32)

    def score(self, image: Float[Array, "h w 3"], key: PRNGKey | None = None) -> Float[Array, ""]:
        """The reward of a painting: ``scorer(image)``, or with ``n_crops > 0`` the mean
        score of its random crops drawn with ``key``."""
        if self.n_crops == 0:
            return self._score(image)
        return jnp.mean(jax.vmap(self._score)(self.crops(image, key)))

    def reset(self, key: PRNGKey) -> TextGuidedPaintingState:
        """An empty canvas (the background colour); the key is not used."""
        del key
        return TextGuidedPaintingState(
            obs=jnp.zeros(1, jnp.float32), canvas=self.empty_canvas(), score=jnp.full([], jnp.nan)
        )

    def step(
        self, state: TextGuidedPaintingState, action: Float[Array, "n 10"], key: PRNGKey
    ) -> tuple[TextGuidedPaintingState, Reward, Done]:
        """Paint ``action``; reward its score (see :meth:`score`); always done."""
        if self.n_crops > 0 and key is None:
            raise ValueError("n_crops > 0 draws random crops: pass a PRNG key to step")
        canvas = self.paint(action)
        reward = self.score(canvas, key)
        state = state.replace(canvas=canvas, score=reward)  # type: ignore[attr-defined]
        return state, reward, jnp.ones([], bool)

    def render(self, state: TextGuidedPaintingState) -> np.ndarray:
        """The painting captioned with its score, as ``uint8[H, W, 3]``; canvases narrower
        than 128 pixels are enlarged (nearest neighbour) by a whole factor."""
        canvas = np.asarray(state.canvas, dtype=np.float32)
        if canvas.shape != (self.height, self.width, 3):
            raise ValueError(
                f"render draws one state: canvas must have shape {(self.height, self.width, 3)}"
                f", got {canvas.shape}"
            )
        score = float(np.asarray(state.score))
        text = "not scored" if math.isnan(score) else f"score {score:.4f}"
        return captioned_sheet([canvas], [text])
