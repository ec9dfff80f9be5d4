"""Paint a target image with semi-transparent triangles (Tian & Ha, 2021).

"Modern Evolution Strategies for Creativity: Fitting Concrete Images and Abstract Concepts"
(Tian & Ha, EvoMUSART 2022, arXiv:2109.08857) evolves 50 triangles with PGPE and ClipUp to
approximate a picture; EvoJAX ships it as the ``AbstractPainting01`` notebook.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal

import chex
import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from evolax.drawing import CHAR_SIZE, draw_text
from evolax.tasks.base import ConstructedTask
from evolax.tasks.raster import composite_planes
from evolax.types import Done, PRNGKey, Reward
from evolax.validation import check_in_interval, check_positive_int

PARAMS_PER_TRIANGLE = 10
"""Genome entries per triangle: ``[x0, y0, x1, y1, x2, y2, r, g, b, a]``."""

DEFAULT_TARGET = "grace_hopper.jpg"
"""The default target: a photograph in matplotlib's sample data."""

DEFAULT_SIZE = (200, 200)
"""``(height, width)`` images read from files are fitted to unless told otherwise (the
paper's canvas)."""

LOSSES = ("l2", "l1")
SQUASHES = ("minmax", "clip")


def _check_size(size: object) -> tuple[int, int]:
    if not isinstance(size, (tuple, list)) or len(size) != 2:
        raise ValueError(f"size must be a (height, width) pair of positive integers, got {size!r}")
    check_positive_int("size[0] (height)", size[0])
    check_positive_int("size[1] (width)", size[1])
    return int(size[0]), int(size[1])


def _fit(image, size: tuple[int, int]):
    """Crop ``image`` (Pillow) to the aspect ratio of ``size`` about its centre, then resize it
    with a Lanczos filter (as the paper resizes its targets)."""
    from PIL import Image, ImageOps

    height, width = size
    if image.size == (width, height):
        return image
    return ImageOps.fit(image, (width, height), method=Image.Resampling.LANCZOS)


def load_target(
    target: str | os.PathLike | np.ndarray | Array | None = None,
    size: tuple[int, int] | None = None,
) -> np.ndarray:
    """A target image as ``f32[height, width, 3]`` in ``[0, 1]``.

    Args:
        target: ``None`` for matplotlib's sample photograph of Grace Hopper; a path to an
            image file Pillow reads (transparent pixels are composited onto white); or an
            array of shape ``(height, width, 3)``, either ``uint8`` (``0..255``) or floating
            point in ``[0, 1]``.
        size: ``(height, width)`` to fit the image to: it is cropped about its centre to that
            aspect ratio and resized (Lanczos). ``None``: arrays keep their size, files (and
            the default) are fitted to :data:`DEFAULT_SIZE`.

    Raises:
        ValueError: an array of another shape, or floats outside ``[0, 1]`` or not finite.
        TypeError: an array of another dtype, or a target of another type.
        FileNotFoundError: a path that does not exist.
    """
    from PIL import Image

    if size is not None:
        size = _check_size(size)
    if target is None or isinstance(target, (str, os.PathLike)):
        if target is None:
            from matplotlib import cbook

            target = cbook.get_sample_data(DEFAULT_TARGET, asfileobj=False)
        try:
            with Image.open(target) as opened:
                image = opened.convert("RGBA")
        except FileNotFoundError:
            raise FileNotFoundError(f"target image {str(target)!r} does not exist") from None
        except (OSError, ValueError) as error:  # Pillow: not an image it can read
            raise ValueError(f"target {str(target)!r} is not an image Pillow can read") from error
        white = Image.new("RGBA", image.size, (255, 255, 255, 255))
        image = Image.alpha_composite(white, image).convert("RGB")
        image = _fit(image, DEFAULT_SIZE if size is None else size)
        return np.asarray(image, dtype=np.float32) / np.float32(255)
    if not isinstance(target, (np.ndarray, jnp.ndarray)):
        raise TypeError(
            "target must be None, a path, or an array of shape (height, width, 3), got "
            f"{type(target).__name__}"
        )
    array = np.asarray(target)
    if array.ndim != 3 or array.shape[2] != 3 or array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(
            f"target must have shape (height, width, 3) (RGB), got {array.shape}; stack a "
            "grayscale image into three channels, drop an alpha channel"
        )
    if array.dtype == np.uint8:
        pixels = array.astype(np.float32) / np.float32(255)
    elif np.issubdtype(array.dtype, np.floating):
        if not np.all(np.isfinite(array)):
            raise ValueError("a floating-point target must be finite with values in [0, 1]")
        if array.min() < 0 or array.max() > 1:
            raise ValueError(
                "a floating-point target must be finite with values in [0, 1], got range "
                f"[{array.min()}, {array.max()}]"
            )
        pixels = array.astype(np.float32)
    else:
        raise TypeError(f"target must be uint8 or floating point in [0, 1], got {array.dtype}")
    if size is not None and pixels.shape[:2] != size:
        channels = [
            _fit(Image.fromarray(np.ascontiguousarray(pixels[..., c])), size) for c in range(3)
        ]
        pixels = np.clip(np.stack([np.asarray(c) for c in channels], axis=-1), 0.0, 1.0)
    return pixels.astype(np.float32)


def check_painting_options(
    n_triangles: int, alpha_scale: float, background: object, squash: str
) -> np.ndarray:
    """Check the options of a triangle painting (shared by the painting tasks) and return the
    background as a float64 RGB colour; raise a ``ValueError`` naming the bad argument."""
    check_positive_int("n_triangles", n_triangles)
    if isinstance(alpha_scale, bool) or not isinstance(alpha_scale, (int, float)):
        raise ValueError(f"alpha_scale must be a number in (0, 1], got {alpha_scale!r}")
    check_in_interval("alpha_scale", alpha_scale, 0, 1, low_open=True)
    try:
        color = np.asarray(background, dtype=np.float64)
    except (TypeError, ValueError):
        color = np.full(1, np.nan)
    if color.shape != (3,) or not np.all((color >= 0) & (color <= 1)):
        raise ValueError(
            f"background must be an RGB colour, three numbers in [0, 1], got {background!r}"
        )
    if squash not in SQUASHES:
        raise ValueError(f"squash must be one of {SQUASHES}, got {squash!r}")
    if squash == "minmax" and n_triangles < 2:
        raise ValueError(
            "squash='minmax' normalises over the triangles and needs n_triangles >= 2, got "
            f"{n_triangles}; use squash='clip' for one triangle"
        )
    return color


def decode_triangles(
    action: Float[Array, "n 10"], height: int, width: int, squash: str, alpha_scale: float
) -> tuple[Float[Array, "n 3 2"], Float[Array, "n 3"], Float[Array, " n"]]:
    """The triangles a genome ``f32[n, 10]`` stands for (see :class:`ImageApproximation`):
    corners in pixels ``f32[n, 3, 2]`` (``(x, y)``), colours ``f32[n, 3]`` and opacities
    ``f32[n]``."""
    action = action.astype(jnp.float32)
    if squash == "minmax":
        low = jnp.min(action, axis=0, keepdims=True)
        spread = jnp.max(action, axis=0, keepdims=True) - low
        unit = (action - low) / jnp.where(spread > 0, spread, 1.0)
    else:
        unit = jnp.clip(action, 0.0, 1.0)
    scale = jnp.array([[[width, height]]], jnp.float32)
    vertices = unit[:, :6].reshape(action.shape[0], 3, 2) * scale
    return vertices, unit[:, 6:9], unit[:, 9] * alpha_scale


@chex.dataclass(frozen=True)
class CanvasState:
    """The canvas of a triangle painting.

    Attributes:
        obs: ``f32[1]``, always zero (the task has nothing to observe).
        canvas: ``f32[height, width, 3]``, the painting in ``[0, 1]``: the background before
            the step, the triangles of the last action after it.
    """

    obs: Float[Array, "1"]
    canvas: Float[Array, "h w 3"]


@chex.dataclass(frozen=True)
class ImageApproximationState(CanvasState):
    """The canvas (``obs``, ``canvas``: see :class:`CanvasState`)."""


def captioned_sheet(images: Sequence[np.ndarray], captions: Sequence[str]) -> np.ndarray:
    """Paintings in ``[0, 1]`` (``f32[h, w, 3]``, all one size) side by side on white, each
    with its caption below, as ``uint8[H, W, 3]``; canvases narrower than 128 pixels are
    enlarged (nearest neighbour) by a whole factor."""
    from PIL import Image, ImageDraw

    scale = max(1, -(-128 // images[0].shape[1]))
    gap, caption = 8, CHAR_SIZE[1] + 6
    height, width = images[0].shape[0] * scale, images[0].shape[1] * scale
    n = len(images)
    sheet = Image.new("RGB", (n * width + (n + 1) * gap, height + 2 * gap + caption), "white")
    for i, pixels in enumerate(images):
        image = Image.fromarray(np.rint(np.clip(pixels, 0, 1) * 255).astype(np.uint8))
        image = image.resize((width, height), Image.Resampling.NEAREST)
        sheet.paste(image, (gap + i * (width + gap), gap))
    draw = ImageDraw.Draw(sheet)
    for i, text in enumerate(captions):
        draw_text(draw, (gap + i * (width + gap), gap + height + 4), text)
    return np.asarray(sheet, dtype=np.uint8)


class TrianglePainting(ConstructedTask):
    """A one-step task whose genome ``f32[n_triangles, 10]`` paints triangles on a canvas of
    ``height x width`` pixels (the decoding and painting :class:`ImageApproximation` describes);
    subclasses hold the ``background`` and ``alpha_scale`` and score the painting."""

    background: eqx.AbstractVar[Float[Array, "3"]]
    alpha_scale: eqx.AbstractVar[float]
    n_triangles: int = eqx.field(static=True)
    height: int = eqx.field(static=True)
    width: int = eqx.field(static=True)
    squash: str = eqx.field(static=True)

    def _set_painting(
        self,
        n_triangles: int,
        size: tuple[int, int],
        alpha_scale: float,
        color: np.ndarray,
        squash: str,
    ) -> None:
        """Set, in ``__init__``, the painting's fields from checked options
        (:func:`check_painting_options`) and the one-step task's shapes."""
        self.background = jnp.asarray(color, jnp.float32)
        self.alpha_scale = float(alpha_scale)
        self.n_triangles = n_triangles
        self.height, self.width = size
        self.squash = squash
        self.max_steps = 1
        self.obs_shape = (1,)
        self.action_shape = (n_triangles, PARAMS_PER_TRIANGLE)

    def empty_canvas(self) -> Float[Array, "h w 3"]:
        """The canvas before painting: the background colour, ``f32[height, width, 3]``."""
        return jnp.broadcast_to(self.background, (self.height, self.width, 3))

    def decode(
        self, action: Float[Array, "n 10"]
    ) -> tuple[Float[Array, "n 3 2"], Float[Array, "n 3"], Float[Array, " n"]]:
        """The triangles a genome stands for: corners in pixels ``f32[n, 3, 2]`` (``(x, y)``),
        colours ``f32[n, 3]`` and opacities ``f32[n]``."""
        self.check_action(action)
        return decode_triangles(action, self.height, self.width, self.squash, self.alpha_scale)

    def paint_planes(self, action: Float[Array, "n 10"]) -> Float[Array, "3 h w"]:
        """The painting of one genome, channels first: ``f32[3, height, width]`` in ``[0, 1]``."""
        vertices, colors, alphas = self.decode(action)
        return composite_planes(vertices, colors, alphas, self.background, self.height, self.width)

    def paint(self, action: Float[Array, "n 10"]) -> Float[Array, "h w 3"]:
        """The painting of one genome, ``f32[height, width, 3]`` in ``[0, 1]``."""
        return jnp.moveaxis(self.paint_planes(action), 0, -1)


class ImageApproximation(TrianglePainting):
    """Approximate a target image with ``n_triangles`` semi-transparent triangles.

    A one-step task for direct encoding (use :class:`~evolax.policies.direct.Direct`): the
    action is the genome, ``f32[n_triangles, 10]``, one row ``[x0, y0, x1, y1, x2, y2, r, g,
    b, a]`` per triangle. The step maps each row to ``[0, 1]`` (``squash``), scales the
    corners to the canvas (``x * width``, ``y * height``: ``x`` runs along the rows, ``y``
    down, see :mod:`evolax.tasks.raster`), multiplies the opacity by ``alpha_scale``, paints
    the triangles in order (triangle 0 first, "over" compositing, hard edges) onto the
    ``background`` colour, and returns ``reward = -loss``, the mean over pixels and channels
    of the squared (``"l2"``) or absolute (``"l1"``) difference to the target (in ``[0, 1]``
    units), with ``done = True``.

    ``squash`` chooses the parameterisation:

    - ``"minmax"`` (the paper's and EvoJAX's): the genome is unconstrained; each of the ten
      columns is min-max normalised over the triangles of the individual,
      ``(p - min) / (max - min)``, so one triangle sits at each end of every range. The
      fitness does not change when a column is shifted or scaled, so neither the genome's
      initial scale nor the search's step size has to match the canvas. Needs two or more
      triangles; a constant column maps to 0.
    - ``"clip"``: the genome lives in ``[0, 1]``; values outside are clipped.

    Unlike the paper's painter, corners are not rounded down to whole pixels (so any move of a
    corner that carries an edge across a pixel centre changes the painting), and each corner
    is ``(x, y)`` with ``x`` horizontal (the paper's first coordinate is the row).

    The target (``f32[height, width, 3]``) is an array field of the module: pass the task to
    ``jit`` as an argument rather than closing over it, or it becomes a constant of the
    compiled program. On CPU evaluate the population in groups (``Trainer(pop_chunk=16)``,
    see :mod:`evolax.tasks.raster`).

    Args:
        target: the image to approximate: ``None`` (matplotlib's photograph of Grace Hopper),
            a path, or an array (see :func:`load_target`).
        n_triangles: triangles per painting (50 in the paper).
        size: ``(height, width)`` of the canvas; the target is fitted to it (see
            :func:`load_target`).
        alpha_scale: the largest opacity of a triangle, in ``(0, 1]`` (0.5 in the paper).
        background: RGB colour of the empty canvas in ``[0, 1]`` (white in the paper).
        loss: ``"l2"`` (mean squared error, the paper's default) or ``"l1"``.
        squash: ``"minmax"`` (the paper's) or ``"clip"``, see above.
    """

    target: Float[Array, "h w 3"]
    background: Float[Array, "3"]
    alpha_scale: float
    loss: str = eqx.field(static=True)

    def __init__(
        self,
        target: str | os.PathLike | np.ndarray | Array | None = None,
        n_triangles: int = 50,
        size: tuple[int, int] | None = None,
        alpha_scale: float = 0.5,
        background: tuple[float, float, float] = (1.0, 1.0, 1.0),
        loss: Literal["l2", "l1"] = "l2",
        squash: Literal["minmax", "clip"] = "minmax",
    ):
        color = check_painting_options(n_triangles, alpha_scale, background, squash)
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
        self.target = jnp.asarray(load_target(target, size), jnp.float32)
        height, width = self.target.shape[:2]
        self._set_painting(n_triangles, (height, width), alpha_scale, color, squash)
        self.loss = loss

    def reset(self, key: PRNGKey) -> ImageApproximationState:
        """An empty canvas (the background colour); the key is not used."""
        del key
        return ImageApproximationState(obs=jnp.zeros(1, jnp.float32), canvas=self.empty_canvas())

    def step(
        self, state: ImageApproximationState, action: Float[Array, "n 10"], key: PRNGKey
    ) -> tuple[ImageApproximationState, Reward, Done]:
        """Paint ``action``; reward ``-loss`` against the target; always done."""
        del key
        planes = self.paint_planes(action)
        diff = planes - jnp.moveaxis(self.target, -1, 0)
        loss = jnp.mean(jnp.square(diff)) if self.loss == "l2" else jnp.mean(jnp.abs(diff))
        canvas = jnp.moveaxis(planes, 0, -1)
        return state.replace(canvas=canvas), -loss, jnp.ones([], bool)  # type: ignore[attr-defined]

    def render(self, state: ImageApproximationState) -> np.ndarray:
        """The painting (left) beside the target (right), captioned with the loss, as
        ``uint8[H, W, 3]``; canvases narrower than 128 pixels are enlarged (nearest neighbour)
        by a whole factor."""
        canvas = np.asarray(state.canvas, dtype=np.float32)
        target = np.asarray(self.target, dtype=np.float32)
        if canvas.shape != target.shape:
            raise ValueError(
                f"render draws one state: canvas must have shape {target.shape}, got {canvas.shape}"
            )
        diff = canvas - target
        loss = np.mean(diff**2) if self.loss == "l2" else np.mean(np.abs(diff))
        return captioned_sheet([canvas, target], [f"loss {loss:.4f}", "target"])
