"""The triangle rasteriser against float64 numpy point-in-triangle tests, Pillow's polygon fill
and numpy "over" compositing."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image, ImageDraw

from evolax.tasks.raster import composite, composite_planes, coverage, triangle_spans

H, W = 48, 64


def pixel_centres(height: int, width: int) -> np.ndarray:
    """``f64[height, width, 2]``: the ``(x, y)`` centre of every pixel."""
    y, x = np.mgrid[0:height, 0:width] + 0.5
    return np.stack([x, y], axis=-1)


def barycentric_inside(triangle: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Closed point-in-triangle test through barycentric coordinates, in float64."""
    a, b, c = np.asarray(triangle, np.float64)
    matrix = np.array([b - a, c - a]).T
    if abs(np.linalg.det(matrix)) < 1e-12:
        return np.zeros(points.shape[:-1], bool)
    u, v = np.linalg.solve(matrix, (points - a).reshape(-1, 2).T)
    inside = (u >= 0) & (v >= 0) & (u + v <= 1)
    return inside.reshape(points.shape[:-1])


def distance_to_edges(triangle: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Distance from each point to the nearest of the triangle's three edges (segments)."""
    flat = points.reshape(-1, 2)
    distances = []
    for k in range(3):
        start, end = triangle[k], triangle[(k + 1) % 3]
        edge = end - start
        t = np.clip((flat - start) @ edge / max(edge @ edge, 1e-300), 0.0, 1.0)
        distances.append(np.linalg.norm(flat - (start + t[:, None] * edge), axis=1))
    return np.min(distances, axis=0).reshape(points.shape[:-1])


def distance_to_edge_lines(triangle: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Distance from each point to the nearest of the three lines through the edges."""
    distances = []
    for k in range(3):
        start, end = triangle[k], triangle[(k + 1) % 3]
        edge = end - start
        cross = edge[0] * (points[..., 1] - start[1]) - edge[1] * (points[..., 0] - start[0])
        distances.append(np.abs(cross) / np.linalg.norm(edge))
    return np.min(distances, axis=0)


def over(masks: np.ndarray, colors, alphas, background) -> np.ndarray:
    """Paint masks in order with the "over" operator, float64: ``f64[h, w, 3]``."""
    canvas = np.broadcast_to(np.asarray(background, np.float64), (*masks.shape[1:], 3)).copy()
    for mask, color, alpha in zip(masks, colors, alphas, strict=True):
        weight = np.where(mask, float(alpha), 0.0)[..., None]
        canvas = (1.0 - weight) * canvas + weight * np.asarray(color, np.float64)
    return canvas


def pillow_mask(corners: np.ndarray, height: int, width: int) -> np.ndarray:
    """Pillow's ``ImageDraw.polygon`` fill of integer corners, as a boolean mask."""
    image = Image.new("L", (width, height), 0)
    ImageDraw.Draw(image).polygon([(int(x), int(y)) for x, y in corners], fill=255)
    return np.asarray(image) > 0


def random_triangles(rng, n: int, margin: float = 8.0) -> np.ndarray:
    """``n`` triangles with corners anywhere in (and around) the canvas, either winding."""
    return rng.uniform([-margin, -margin], [W + margin, H + margin], size=(n, 3, 2))


def test_coverage_matches_float64_point_in_triangle():
    """Every pixel centre farther than 1e-3 px from the edge lines is classified as a float64
    barycentric test classifies it; triangles of both windings, partly off the canvas."""
    rng = np.random.default_rng(0)
    triangles = random_triangles(rng, 40)
    masks = np.asarray(coverage(jnp.asarray(triangles, jnp.float32), H, W))
    assert masks.shape == (40, H, W) and masks.dtype == bool
    centres = pixel_centres(H, W)
    windings = set()
    for triangle, mask in zip(triangles, masks, strict=True):
        (ab_x, ab_y), (ac_x, ac_y) = triangle[1] - triangle[0], triangle[2] - triangle[0]
        windings.add(np.sign(ab_x * ac_y - ab_y * ac_x))
        expected = barycentric_inside(triangle, centres)
        clear = distance_to_edge_lines(triangle, centres) > 1e-3
        np.testing.assert_array_equal(mask[clear], expected[clear])
    assert windings == {-1.0, 1.0}
    assert 0.02 < masks.mean() < 0.5  # the triangles cover something, not everything


def test_right_triangle_pixel_count_and_ties():
    """The triangle (0, 0), (W, 0), (0, W) covers pixel [i, j] iff its centre satisfies
    x + y <= W, i.e. i + j <= W - 1: centres exactly on the hypotenuse count as inside."""
    size = 16
    corners = jnp.array([[[0.0, 0.0], [size, 0.0], [0.0, size]]])
    for triangle in (corners, corners[:, ::-1]):  # both windings
        mask = np.asarray(coverage(triangle, size, size))[0]
        i, j = np.mgrid[0:size, 0:size]
        np.testing.assert_array_equal(mask, i + j <= size - 1)
    assert int(mask.sum()) == size * (size + 1) // 2


def test_spans_of_a_known_triangle():
    """Rows of the triangle (2, 1), (10, 1), (2, 9): row i (centre y = i + 0.5) is covered
    between x = 2 and x = 11 - y for 1 <= y <= 9, and nowhere else."""
    lo, hi = triangle_spans(jnp.array([[[2.0, 1.0], [10.0, 1.0], [2.0, 9.0]]]), 12)
    y = np.arange(12) + 0.5
    rows = (y >= 1) & (y <= 9)
    np.testing.assert_allclose(np.asarray(lo)[0, rows], 2.0)
    np.testing.assert_allclose(np.asarray(hi)[0, rows], 11.0 - y[rows], rtol=1e-6)
    assert np.all(np.asarray(lo)[0, ~rows] > np.asarray(hi)[0, ~rows])  # empty rows


@pytest.mark.parametrize(
    "corners",
    [
        [[3.0, 3.0], [20.0, 20.0], [40.0, 40.0]],  # collinear (diagonal)
        [[0.0, 10.5], [30.0, 10.5], [50.0, 10.5]],  # collinear along a row of centres
        [[5.5, 5.5], [5.5, 5.5], [5.5, 5.5]],  # a point on a pixel centre
        [[7.0, 2.0], [7.0, 2.0], [30.0, 40.0]],  # two corners coincide
    ],
)
def test_degenerate_triangles_cover_nothing(corners):
    mask = coverage(jnp.array([corners]), H, W)
    assert not np.asarray(mask).any()


def test_coverage_agrees_with_pillow_polygon_fill():
    """Against Pillow's ``ImageDraw.polygon`` on integer corners (Pillow puts pixel centres at
    integer coordinates, so its corner q is our q + 0.5). Pillow's fill also paints the
    outline, so the masks differ along edges: every differing pixel must lie within 1 px of an
    edge, and there are at most as many as pixel steps along the edges (one per row or column
    each edge crosses)."""
    rng = np.random.default_rng(1)
    centres = pixel_centres(H, W)
    corners = np.round(random_triangles(rng, 60, margin=4.0))
    masks = np.asarray(coverage(jnp.asarray(corners + 0.5, jnp.float32), H, W))
    total_differ = total_covered = 0
    for q, mask in zip(corners, masks, strict=True):
        reference = pillow_mask(q, H, W)
        differ = mask != reference
        near = distance_to_edges(q + 0.5, centres) <= 1.0
        assert not np.any(differ & ~near), "pixels farther than 1 px from an edge disagree"
        steps = sum(np.max(np.abs(q[k] - q[(k + 1) % 3])) + 1 for k in range(3))
        assert differ.sum() <= steps
        total_differ += differ.sum()
        total_covered += reference.sum()
    assert total_covered > 0.1 * masks.size
    assert total_differ < 0.1 * total_covered  # edges only: a small share of the pixels


def test_composite_matches_numpy_over_of_pillow_masks():
    """Semi-transparent triangles composited in order equal float64 numpy "over" compositing
    of Pillow's masks on every pixel farther than 1 px from all edges (the others may differ
    by Pillow's outline), and those are most pixels."""
    rng = np.random.default_rng(2)
    n = 6
    corners = np.round(random_triangles(rng, n, margin=4.0))
    colors = rng.uniform(size=(n, 3))
    alphas = rng.uniform(0.1, 0.9, size=n)
    background = np.array([1.0, 0.9, 0.8])
    canvas = composite(
        jnp.asarray(corners + 0.5, jnp.float32),
        jnp.asarray(colors, jnp.float32),
        jnp.asarray(alphas, jnp.float32),
        jnp.asarray(background, jnp.float32),
        H,
        W,
    )
    assert canvas.shape == (H, W, 3) and canvas.dtype == jnp.float32
    masks = np.stack([pillow_mask(q, H, W) for q in corners])
    expected = over(masks, colors, alphas, background)
    centres = pixel_centres(H, W)
    far = np.all([distance_to_edges(q + 0.5, centres) > 1.0 for q in corners], axis=0)
    assert far.mean() > 0.6
    assert len({tuple(m) for m in masks[:, far].T}) > n  # many different overlaps compared
    np.testing.assert_allclose(np.asarray(canvas)[far], expected[far], atol=2e-6)


def test_composite_is_in_order_over_on_every_pixel():
    """With exactly known masks (float64 barycentric, corners off the pixel-centre lattice),
    the composite equals numpy "over" on every pixel; reversing the order changes it."""
    rng = np.random.default_rng(3)
    n = 8
    corners = random_triangles(rng, n)
    colors = rng.uniform(size=(n, 3))
    alphas = rng.uniform(0.2, 1.0, size=n)
    alphas[0] = 1.0  # an opaque triangle, later ones over it
    background = np.array([0.2, 0.4, 0.6])
    centres = pixel_centres(H, W)
    assert min(distance_to_edge_lines(t, centres).min() for t in corners) > 1e-4
    masks = np.stack([barycentric_inside(t, centres) for t in corners])
    args = [jnp.asarray(x, jnp.float32) for x in (corners, colors, alphas, background)]
    canvas = np.asarray(composite(*args, H, W))
    np.testing.assert_allclose(canvas, over(masks, colors, alphas, background), atol=2e-6)
    reverse = over(masks[::-1], colors[::-1], alphas[::-1], background)
    assert np.abs(canvas - reverse).max() > 0.1
    planes = np.asarray(composite_planes(*args, H, W))
    np.testing.assert_array_equal(planes, np.moveaxis(canvas, -1, 0))
    # A canvas with no triangles is the background; under jit and vmap the same.
    empty = composite(jnp.zeros((0, 3, 2)), jnp.zeros((0, 3)), jnp.zeros(0), args[3], 4, 5)
    np.testing.assert_allclose(empty, np.broadcast_to(background, (4, 5, 3)), rtol=1e-6)
    batched = jax.jit(jax.vmap(lambda *a: composite(*a, args[3], H, W)))(
        jnp.stack([args[0], args[0][::-1]]),
        jnp.stack([args[1], args[1][::-1]]),
        jnp.stack([args[2], args[2][::-1]]),
    )
    np.testing.assert_allclose(batched[0], canvas, atol=1e-6)
    np.testing.assert_allclose(batched[1], reverse, atol=2e-6)


def test_rejects_bad_shapes():
    vertices, colors, alphas = jnp.zeros((2, 3, 2)), jnp.zeros((2, 3)), jnp.zeros(2)
    white = jnp.ones(3)
    for bad in (jnp.zeros((2, 3)), jnp.zeros((2, 4, 2)), jnp.zeros((2, 3, 3))):
        with pytest.raises(ValueError, match=r"vertices must have shape \(n_triangles, 3, 2\)"):
            composite(bad, colors, alphas, white, 4, 4)
        with pytest.raises(ValueError, match="vertices"):
            coverage(bad, 4, 4)
    with pytest.raises(ValueError, match=r"colors must have shape \(2, 3\)"):
        composite(vertices, jnp.zeros((2, 4)), alphas, white, 4, 4)
    with pytest.raises(ValueError, match=r"alphas must have shape \(2,\)"):
        composite(vertices, colors, jnp.zeros((3,)), white, 4, 4)
    with pytest.raises(ValueError, match=r"background must have shape \(3,\)"):
        composite(vertices, colors, alphas, jnp.ones(4), 4, 4)
    for name, height, width in [("height", 0, 4), ("width", 4, -1), ("height", 2.5, 4)]:
        with pytest.raises(ValueError, match=f"{name} must be a positive integer"):
            composite(vertices, colors, alphas, white, height, width)
        with pytest.raises(ValueError, match=f"{name} must be a positive integer"):
            coverage(vertices, height, width)
