"""Rendering SpotCheck images from attribute dicts (NumPy drawing, no overlap)."""

from __future__ import annotations

import numpy as np

COLORS = {"blue": (40, 90, 220), "orange": (245, 140, 20), "white": (255, 255, 255), "grey": (150, 150, 150)}


def _shape_size(layer, attrs, size):
    small = attrs[(layer, "size")] == "small"
    f = 0.55 if small else 1.0
    if layer == "square":
        s = int(round(size * 0.22 * f))
        return s, s
    if layer == "rectangle":
        return int(round(size * 0.36 * f)), int(round(size * 0.16 * f))
    if layer == "circle":
        d = int(round(size * 0.24 * f))
        return d, d
    return int(round(size * 0.34 * f)), int(round(size * 0.16 * f))  # text box


def _place(boxes, w, h, size, rng, y_range=None):
    lo, hi = (0, size - h) if y_range is None else y_range
    for _ in range(500):
        x = int(rng.integers(0, size - w + 1))
        y = int(rng.integers(lo, max(lo, hi) + 1))
        if all(x + w + 1 <= bx or bx + bw + 1 <= x or y + h + 1 <= by or by + bh + 1 <= y
               for bx, by, bw, bh in boxes):
            return x, y
    return None


def _paint(img, mask, color, striped, x0):
    rgb = np.array(COLORS[color], dtype=np.uint8)
    if striped:
        cols = np.arange(img.shape[1])
        period = max(2, img.shape[1] // 32)
        stripe = ((cols - x0) // period) % 2 == 0
        mask = mask & stripe[None, :]
    img[mask] = rgb


def _text_mask(w, h):
    """A bitmap of the text 'Hi!' scaled to (h, w)."""
    glyphs = ["1001011100100",
              "1001001000100",
              "1111001000100",
              "1001001000000",
              "1001011100100"]
    bits = np.array([[c == "1" for c in row] for row in glyphs])
    ys = (np.arange(h) * bits.shape[0] / h).astype(int)
    xs = (np.arange(w) * bits.shape[1] / w).astype(int)
    return bits[ys][:, xs]


def render(attrs, rng, size=64, position=None, *, return_mask=False):
    """Render one image.

    Parameters
    ----------
    attrs : dict
        ``{(layer, attribute): value}`` from :meth:`DatasetDefinition.sample_attributes`.
    rng : numpy.random.Generator
        Positions and noise.
    size : int, default=64
    position : {'above', 'below'}, optional
        Force the MetaAttribute (squares on that side of the centre line).
    return_mask : bool, default=False
        Also return the object mask: every pixel inside a drawn shape's outline
        (stripes and text included whole), the foreground of RIVAL10 §5.1.

    Returns
    -------
    image : ndarray of uint8, shape (size, size, 3)
    attrs : dict
        ``attrs`` plus the MetaAttribute ``('background', 'position')``
        ('above' / 'below' / 'none').
    mask : ndarray of bool, shape (size, size)
        Only with ``return_mask``.
    """
    img = np.empty((size, size, 3), dtype=np.uint8)
    img[:] = COLORS[attrs[("background", "color")]]
    if attrs[("background", "texture")] == "noise":
        noise = rng.random((size, size))
        img[noise < 0.06] = 0
        img[noise > 0.94] = 255
    boxes = []
    out = dict(attrs)
    forced, position = position, "none"
    n_squares = int(attrs[("square", "number")]) if attrs[("square", "presence")] == "true" else 0
    # The squares go first, all on one side of the centre line, so the MetaAttribute is well defined.
    if n_squares:
        side = "above" if rng.random() < 0.5 else "below"
        position = forced if forced in ("above", "below") else side
    yy, xx = np.mgrid[0:size, 0:size]
    objects = np.zeros((size, size), bool)
    for layer in ("square",) * n_squares + ("rectangle", "circle", "text"):
        if layer != "square" and attrs.get((layer, "presence")) != "true":
            continue
        w, h = _shape_size(layer, attrs, size)
        y_range = None
        if layer == "square":
            y_range = (0, size // 2 - h - 1) if position == "above" else (size // 2 + 1, size - h)
        spot = _place(boxes, w, h, size, rng, y_range)
        if spot is None:
            continue  # crowded image: rare at these sizes; the object is skipped
        x, y = spot
        boxes.append((x, y, w, h))
        if layer == "circle":
            r = w / 2
            mask = (xx - (x + r - 0.5)) ** 2 + (yy - (y + r - 0.5)) ** 2 <= r * r
        else:
            mask = np.zeros((size, size), bool)
            mask[y:y + h, x:x + w] = _text_mask(w, h) if layer == "text" else True
        objects[mask if layer != "text" else np.s_[y:y + h, x:x + w]] = True
        _paint(img, mask, attrs[(layer, "color")], attrs[(layer, "texture")] == "stripes", x)
    out[("background", "position")] = position
    return (img, out, objects) if return_mask else (img, out)
