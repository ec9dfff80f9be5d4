"""Text drawn into numpy images in fixed-width cells: the captions and tables of the tasks'
``render`` pictures.

Runs on the host; Pillow is imported when first needed.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

CHAR_SIZE = (10, 18)
"""Cell of one character in :func:`draw_text` (pixels, width by height)."""


@functools.cache
def _font():
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=15)  # scalable, where Pillow has FreeType
    except (ImportError, TypeError):
        return ImageFont.load_default()


def draw_text(draw, xy: tuple[int, int], text: str, fill=(0, 0, 0)) -> None:
    """Write ``text`` at ``xy`` on a Pillow ``ImageDraw``, one character per fixed-width cell."""
    font = _font()
    for i, char in enumerate(text):
        draw.text((xy[0] + i * CHAR_SIZE[0], xy[1]), char, fill=fill, font=font)


def text_image(lines: Sequence[str], margin: int = 8) -> np.ndarray:
    """Lines of text in fixed-width columns as a white ``uint8[H, W, 3]`` image (tables)."""
    from PIL import Image, ImageDraw

    if not lines:
        raise ValueError("lines must not be empty")
    width = 2 * margin + CHAR_SIZE[0] * max(len(line) for line in lines)
    height = 2 * margin + CHAR_SIZE[1] * len(lines)
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    for row, line in enumerate(lines):
        draw_text(draw, (margin, margin + row * CHAR_SIZE[1]), line)
    return np.asarray(image)
