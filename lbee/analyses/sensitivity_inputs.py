"""What the region-sensitivity analysis reads: images and their object masks, and the model's fingerprint.

Masks come from files (``<image stem>.png``, as ``lbee rival10 export`` writes
them), from arrays, or, for saved SpotCheck renders, from the pixels
([`spotcheck_masks_from_pixels`][lbee.analyses.sensitivity.spotcheck_masks_from_pixels]).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np


def _open_rgb(item, what):
    from PIL import Image

    from ..io.images import open_image

    if isinstance(item, np.ndarray):
        arr = item
        if arr.dtype == bool:
            arr = arr.astype(np.uint8) * 255
        if arr.dtype != np.uint8:
            raise ValueError(f"{what} arrays must be uint8 (or bool masks); received {arr.dtype}.")
        return Image.fromarray(arr)
    try:
        with open_image(item) as img:
            img.load()
            return img.copy()
    except (OSError, ValueError) as exc:
        raise ValueError(f"Cannot read {what} {str(item)!r}: {exc}") from None


def open_image_and_mask(image, mask):
    """An image as 8-bit RGB (high bit depths scaled, not clipped) and its object mask as "L", of the same size."""
    from ..io.images import to_rgb

    img = to_rgb(_open_rgb(image, "image"))
    m = _open_rgb(mask, "mask").convert("L")
    if m.size != img.size:
        raise ValueError(
            f"Mask {_describe(mask)} has size {m.size}; its image {_describe(image)} has size "
            f"{img.size}; expected the same (W, H)."
        )
    return img, m


def content_hash(item):
    """Hex sha256 of an image or mask: its file's content, or an array's shape, dtype and bytes.

    A file is checked as every image is before it is read (a regular file, within the images' bound, not sparse:
    a FIFO or a device would never end), and hashed through that check.
    """
    from ..io.images import image_sha256

    if isinstance(item, np.ndarray):
        h = hashlib.sha256(str((item.shape, str(item.dtype))).encode())
        h.update(np.ascontiguousarray(item).tobytes())
        return h.hexdigest()
    return image_sha256(item)


def model_fingerprint(model):
    """Content hash of a module's parameters and buffers (names, shapes and values)."""
    import torch

    h = hashlib.sha256(type(model).__name__.encode())
    for name, tensor in model.state_dict().items():
        t = tensor.detach().cpu().contiguous()
        h.update(f"{name}:{tuple(t.shape)}:{t.dtype}".encode())
        if t.dtype in (torch.bfloat16, torch.float16):
            t = t.float()
        h.update(t.numpy().tobytes())
    return h.hexdigest()


def find_masks(image_paths, mask_dir):
    """``mask_dir/<stem>.png`` for every image (the layout ``lbee rival10 export`` writes).

    Raises ``FileNotFoundError`` naming how many are missing and the first one.
    """
    mask_dir = Path(mask_dir)
    masks = [mask_dir / f"{Path(p).stem}.png" for p in image_paths]
    missing = [str(m) for m in masks if not m.is_file()]
    if missing:
        raise FileNotFoundError(
            f"{len(missing)} of {len(masks)} images have no mask in {str(mask_dir)!r}; "
            f"expected <image stem>.png, e.g. {missing[0]!r}."
        )
    return [str(m) for m in masks]


def _describe(item):
    return f"array{item.shape}" if isinstance(item, np.ndarray) else repr(str(item))


def spotcheck_masks_from_pixels(images, attributes):
    """Object masks of saved SpotCheck renders, recovered from their pixels.

    A saved EC keeps images and attributes but not where each shape was drawn.
    [`lbee.spotcheck.render`][lbee.spotcheck.render] with ``return_mask=True`` gives exact masks for
    new renders; for saved ones this recovers them: pixels that differ from the
    background colour, minus the background's salt-and-pepper noise (removed by
    a 2×2 opening), with stripe gaps closed horizontally (1×5 closing). Shapes
    painted in the background's own colour are invisible and stay background.

    Parameters
    ----------
    images : ndarray of uint8, shape (n, S, S, 3)
    attributes : list of dict, length n
        As in ``ExperimentalConfiguration.attributes[split]``.

    Returns
    -------
    ndarray of bool, shape (n, S, S)
    """
    from scipy import ndimage

    from ..spotcheck import COLORS

    out = np.zeros(images.shape[:3], dtype=bool)
    for i, (img, attrs) in enumerate(zip(images, attributes)):
        bg = np.array(COLORS[attrs[("background", "color")]], dtype=np.uint8)
        diff = np.any(img != bg, axis=-1)
        if attrs[("background", "texture")] == "noise":
            diff = ndimage.binary_opening(diff, structure=np.ones((2, 2), bool))
        out[i] = ndimage.binary_closing(diff, structure=np.ones((1, 5), bool)) | diff
    return out
