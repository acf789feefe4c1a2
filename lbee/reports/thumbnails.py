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

import numpy as np

from ..io.cache import atomic_write_bytes, cache_folder
from ..io.own_store import foreign_inside, make_own, why_not_own

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
    n_changed : int
        Images given with the digest of the bytes lbee read (`lbee.io.images.ImageFile`) whose file now holds other
        bytes, or is gone or out of reach: they get no thumbnail (a report shows the images it analysed, or none).
        Each image counted once, however often it is asked for.
    """

    def __init__(self, cache_dir=None, size=96):
        self.folder = cache_folder(cache_dir) / "thumbnails"
        self.size = int(size)
        self.n_generated = 0
        self.n_cached = 0
        self._changed = set()

    def _key(self, source, opened=None):
        h = hashlib.sha1(f"v1|{self.size}|".encode())
        if getattr(source, "sha256", None):  # the bytes read: the same thumbnail wherever the file is, or was
            h.update(f"sha256:{source.sha256}".encode())
        elif isinstance(source, np.ndarray):
            h.update(str(source.shape).encode())
            h.update(np.ascontiguousarray(source).tobytes())
        else:
            st = os.stat(opened or source)
            h.update(f"{os.path.abspath(source)}|{st.st_size}|{st.st_mtime_ns}".encode())
        return h.hexdigest()

    def jpeg(self, source):
        """JPEG bytes of the thumbnail of ``source`` (a path or an (H, W[, 3]) uint8 array); None if unreadable.

        A path is opened once and checked as every reader checks a file (`lbee._files.pinned`): under a data root
        (``lbee serve``), an image swapped for a link out of the root after it was embedded gets no thumbnail. An
        `lbee.io.images.ImageFile` with a digest gets the thumbnail of those bytes, or none when its file now holds
        others (counted in ``n_changed``).
        """
        if isinstance(source, np.ndarray):
            return self._jpeg(source, None)
        from .._files import pinned

        try:
            cached = self._cached(source)
            if cached is not None:
                return cached
            if not getattr(source, "sha256", None):
                with pinned(source, "image") as opened:
                    return self._jpeg(source, opened)
            from ..io.images import image_bytes

            data = image_bytes(source, source.sha256)
            if data is None:
                self._changed.add(source)
                return None
            return self._jpeg(source, io.BytesIO(data))
        except (OSError, ValueError):  # missing, not a regular file, or outside the root: no thumbnail
            if getattr(source, "sha256", None):  # the file the run read is no longer there to be read (sweep 32s)
                self._changed.add(source)
            return None

    @property
    def n_changed(self):
        return len(self._changed)

    def _cached(self, source):
        """The cached thumbnail of a source known by its digest, or None (then it is made from the file)."""
        if not getattr(source, "sha256", None):
            return None
        path = self._path(self._key(source))
        data = None if self._linked(path) else _cached_jpeg(path)
        if data is not None:
            self.n_cached += 1
        return data

    def _path(self, key):
        return self.folder / key[:2] / f"{key}.jpg"

    def _linked(self, path):
        """Whether the cache's own folders above ``path`` hold a link (then nothing is read or kept there)."""
        return foreign_inside(self.folder.parent, self.folder.name, path.parent.name)

    def _jpeg(self, source, opened):
        from PIL import Image

        try:
            key = self._key(source, opened)
        except OSError:
            return None
        path = self._path(key)
        cached = None if self._linked(path) else _cached_jpeg(path)
        if cached is not None:
            self.n_cached += 1
            return cached
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
        self.n_generated += 1
        if self._linked(path):
            return data  # made, not kept: never written through a link planted in the cache (sweep 32t)
        make_own(self.folder.parent, self.folder.name, path.parent.name)  # for this user alone (sweep 32ak B1)
        atomic_write_bytes(path, data, private=True)
        return data

    def data_uri(self, source):
        """``data:image/jpeg;base64,...`` for ``source``, or None when it cannot be read."""
        data = self.jpeg(source)
        return None if data is None else "data:image/jpeg;base64," + base64.b64encode(data).decode()


#: A cached thumbnail larger than this is not one lbee wrote (a 96-pixel JPEG is a few KB).
MAX_THUMBNAIL_BYTES = 1 << 20


def _cached_jpeg(path):
    """The JPEG cached at ``path``, or None: a link, or anything but a small JPEG, is not read.

    The cache folder is the server's, but a link planted in it served another file as an image's thumbnail
    (sweep 32s B4); what is there is read without following a link, and only as a JPEG lbee wrote.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if why_not_own(st, fh.fileno(), folder=False) or st.st_size > MAX_THUMBNAIL_BYTES:
            return None  # another user's, or one they can write, is theirs, not a thumbnail lbee made (32ak B1)
        data = fh.read(MAX_THUMBNAIL_BYTES + 1)
    return data if data[:3] == b"\xff\xd8\xff" and len(data) <= MAX_THUMBNAIL_BYTES else None
