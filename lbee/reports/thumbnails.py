"""Small JPEG thumbnails for HTML reports, generated once and cached on disk.

A thumbnail is keyed by its source (file path, size and modification time, or
the bytes of an in-memory array) and its pixel size, so a rerun, or another
report showing the same image, reads the cached file instead of decoding the
original again.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
from pathlib import Path

import numpy as np

from ..io.cache import atomic_write_bytes, default_cache_dir

#: Images with more pixels than this get no thumbnail (Pillow's own bomb limit is 89 M pixels, about 270 MB decoded;
#: a 12000 x 12000 PNG of 17 KB took 600 MB of a server's memory per request).
MAX_SOURCE_PIXELS = 40_000_000


class ThumbnailCache:
    """Thumbnails as ``data:`` URIs, cached under ``cache_dir/thumbnails``.

    Parameters
    ----------
    cache_dir : path-like, optional
        Default: the lbee cache folder (``LBEE_CACHE_DIR`` or ``~/.cache/lbee``).
    size : int, default=96
        Longest side in pixels.

    Attributes
    ----------
    n_generated, n_cached : int
        Thumbnails made in this session and thumbnails read from the cache.
    """

    def __init__(self, cache_dir=None, size=96):
        self.folder = Path(cache_dir or default_cache_dir()) / "thumbnails"
        self.size = int(size)
        self.n_generated = 0
        self.n_cached = 0

    def _key(self, source, opened=None):
        h = hashlib.sha1(f"v1|{self.size}|".encode())
        if isinstance(source, np.ndarray):
            h.update(str(source.shape).encode())
            h.update(np.ascontiguousarray(source).tobytes())
        else:
            st = os.stat(opened or source)
            h.update(f"{os.path.abspath(source)}|{st.st_size}|{st.st_mtime_ns}".encode())
        return h.hexdigest()

    def jpeg(self, source):
        """JPEG bytes of the thumbnail of ``source`` (a path or an (H, W[, 3]) uint8 array); None if unreadable.

        A path is opened once and checked as every reader checks a file (`lbee._files.pinned`): under a data root
        (``lbee serve``), an image swapped for a link out of the root after it was embedded gets no thumbnail.
        """
        if isinstance(source, np.ndarray):
            return self._jpeg(source, None)
        from .._files import pinned

        try:
            with pinned(source, "image") as opened:
                return self._jpeg(source, opened)
        except (OSError, ValueError):  # missing, not a regular file, or outside the root: no thumbnail
            return None

    def _jpeg(self, source, opened):
        from PIL import Image

        try:
            key = self._key(source, opened)
        except OSError:
            return None
        path = self.folder / key[:2] / f"{key}.jpg"
        if path.is_file():
            self.n_cached += 1
            return path.read_bytes()
        try:
            img = Image.fromarray(source) if isinstance(source, np.ndarray) else Image.open(opened)
            if img.width * img.height > MAX_SOURCE_PIXELS:  # a 17 KB PNG can decode to 600 MB: no thumbnail
                return None
            img.draft("RGB", (self.size, self.size))  # JPEGs decode at the thumbnail's scale
            img = img.convert("RGB")
            img.thumbnail((self.size, self.size))
        except Exception:  # an unreadable image gets no thumbnail, not a failed report
            return None
        buf = io.BytesIO()
        img.save(buf, format="JPEG", quality=82)
        data = buf.getvalue()
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, data)
        self.n_generated += 1
        return data

    def data_uri(self, source):
        """``data:image/jpeg;base64,...`` for ``source``, or None when it cannot be read."""
        data = self.jpeg(source)
        return None if data is None else "data:image/jpeg;base64," + base64.b64encode(data).decode()
