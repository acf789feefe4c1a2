"""Finding images (a folder, searched recursively, or a CSV / parquet manifest) and opening them."""

from __future__ import annotations

import os
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..grammar import INVISIBLE, line_break_in
from .confinement import pinned, resolve_named_path
from .schemas import validate_manifest
from .table_reader import read_table

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm"}
#: The largest image lbee decodes, in pixels (width × height), read from the file's header before any pixel: a PNG of
#: a few hundred kB can declare 13,000 × 13,000 16-bit pixels and decode to gigabytes (8,000 × 8,000 is allowed).
MAX_IMAGE_PIXELS = 64_000_000
#: The largest image file lbee reads, in bytes: a sparse file can declare 50 GB and take minutes to hash.
MAX_IMAGE_BYTES = 1 << 30


def check_image_file(path):
    """Refuse, before reading it, an image "file" that is not a regular file (a FIFO, a device) or is too large.

    Raises
    ------
    ValueError
        Naming the file and what it is.
    """
    import stat

    from .._files import may_read
    from .confinement import real_path

    if not may_read(real_path(path, "image")):  # a link swapped in after the job's checks: read nothing outside
        raise ValueError(f"image {str(path)!r} leads outside the data root")
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        from .confinement import file_kind

        raise ValueError(f"image {str(path)!r} is {file_kind(st.st_mode)}, not a regular file")
    if st.st_size > MAX_IMAGE_BYTES:
        raise ValueError(
            f"image {str(path)!r} is {st.st_size:,} bytes; lbee reads image files of at most {MAX_IMAGE_BYTES:,} "
            "bytes (MAX_IMAGE_BYTES)"
        )


def image_sha256(path):
    """Hex SHA-256 of an image file, read as every image is.

    Checked first (`check_image_file`; a kernel file, a FIFO or a device is refused by `pinned`), hashed through
    the descriptor checked, and never past `MAX_IMAGE_BYTES`.
    """
    from .._files import pinned
    from .cache import file_sha256

    check_image_file(path)
    with pinned(path, "image") as src:  # the file checked is the file hashed (a link swapped in: refused)
        return file_sha256(src, limit=MAX_IMAGE_BYTES)


@dataclass(frozen=True)
class ImageFile:
    """An image file as lbee read it: its path, made absolute then, and the SHA-256 of the bytes it read.

    What a report's thumbnails and its per-image table are made from: the folder may be swapped while the run works
    (sweep 32r: a job's report showed another folder's pictures, and its table named them), so a thumbnail is made
    only from the same bytes (`lbee.reports.thumbnails.ThumbnailCache`) and the path recorded is this one.
    ``os.fspath`` gives the path.
    """

    path: str
    sha256: str | None = None

    def __fspath__(self):
        return self.path

    def __str__(self):
        return self.path


@dataclass
class ImageList:
    """Image paths with optional labels.

    Attributes
    ----------
    paths : list of str
    ids : list of str
        How images are named in outputs (path relative to the folder, or the manifest's value).
    labels : ndarray or None
    """

    paths: list
    ids: list
    labels: np.ndarray | None = None


def discover_images(source):
    """List images from a folder (recursive, sorted) or a manifest with a ``path`` column.

    Parameters
    ----------
    source : path-like
        A folder, or a CSV / parquet manifest with column ``path`` (relative
        paths are resolved against the manifest's folder) and optional ``label``.
        The manifest is validated ([`lbee.io.schemas.validate_manifest`][lbee.io.schemas.validate_manifest]):
        every ``path`` filled and unique, ``label`` filled with non-negative
        integer class indices; errors name the file, row and column.

    Returns
    -------
    ImageList
    """
    source = Path(source)
    if source.is_dir():
        files = sorted(p for p in source.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
        if not files:
            raise ValueError(f"No image found under {str(source)!r} (looked for {sorted(IMAGE_SUFFIXES)}).")
        ids = [str(p.relative_to(source)) for p in files]
        for image_id in ids:  # an id is a line of ids.txt and is shown in reports: visible text, as in tables
            bad = line_break_in(image_id)
            if bad is not None:
                raise ValueError(
                    f"Images {str(source)!r}: the file name {image_id!r} holds the character U+{ord(bad):04X} "
                    f"({INVISIBLE}); expected image file names of visible text. Rename the file."
                )
        return ImageList([str(p) for p in files], ids)
    if not source.exists():
        raise FileNotFoundError(f"Images {str(source)!r}: no such folder or manifest file.")
    ids, labels = validate_manifest(read_table(source))
    paths = [
        str(resolve_named_path(p, source.parent, key=f"row {i + 1}, column 'path',", source=str(source)))
        for i, p in enumerate(ids)
    ]
    from .confinement import PathEscape, data_root

    if data_root() is not None:  # an image's id is its manifest path, shown to every reader of a job (sweep 30)
        absolute = next((i for i, p in enumerate(ids) if Path(p).is_absolute()), None)
        if absolute is not None:
            raise PathEscape(
                f"{source}, row {absolute + 1}, column 'path': an absolute path (…/{Path(ids[absolute]).name}); a "
                "job's manifest names its images relative to the manifest's folder, as its ids are shown in reports."
            )
    return ImageList(paths, ids, labels)


def to_rgb(img):
    """A PIL image as 8-bit RGB, scaling high-bit-depth modes instead of clipping them.

    ``convert("RGB")`` clips 16-bit (``I;16``) and 32-bit integer (``I``)
    grey levels at 255, which turns most of a 16-bit PNG white. Here 16-bit
    modes (and ``I`` decoded from a PNG, which is 16-bit grey) are divided
    by 257 (65535 → 255); another ``I`` image is treated as 16-bit when its
    values fit in [0, 65535] and some exceed 255 (PNG and TIFF decoders give
    16-bit grey as ``I``), else min–max scaled when it exceeds that range; a
    float (``F``) image in [0, 1] is multiplied by 255, otherwise min–max scaled.

    Parameters
    ----------
    img : PIL.Image.Image

    Returns
    -------
    PIL.Image.Image
        Mode ``RGB``, 8 bits per channel.
    """
    from PIL import Image

    mode = img.mode
    if mode.startswith("I;16") or mode in ("I", "F"):
        arr = np.asarray(img, dtype=np.float32)  # 4 bytes a pixel: enough to scale to 8 bits
        finite = arr[np.isfinite(arr)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
        if mode.startswith("I;16") or (mode == "I" and getattr(img, "format", None) == "PNG"):
            scaled = arr / 257.0
        elif mode == "I" and lo >= 0 and hi <= 255:
            scaled = arr
        elif mode == "I" and lo >= 0 and hi <= 65535:
            scaled = arr / 257.0
        elif mode == "F" and lo >= 0 and hi <= 1:
            scaled = arr * 255.0
        else:
            scaled = (arr - lo) / (hi - lo) * 255.0 if hi > lo else np.zeros_like(arr)
        grey = np.clip(np.nan_to_num(np.rint(scaled)), 0, 255).astype(np.uint8)
        return Image.fromarray(grey, mode="L").convert("RGB")
    return img.convert("RGB")


@contextmanager
def open_image(path, name=None):
    """``PIL.Image.open(path)``, refused before decoding when it declares more than `MAX_IMAGE_PIXELS` pixels.

    ``path`` may be a file object; ``name`` then says what it is in the message.

    Raises
    ------
    ValueError
        Naming the file, its size and the limit.
    """
    from PIL import Image, UnidentifiedImageError

    # a path is opened once and checked through its descriptor (a regular file, inside the data root): a mask or an
    # image swapped for a link out after the job's paths were checked is never decoded
    with pinned(path, "image") if isinstance(path, (str, os.PathLike)) else nullcontext(path) as src:
        try:
            opened = Image.open(src)
        except UnidentifiedImageError:  # Pillow names the file object it read ("<_io.BytesIO object at 0x...>")
            raise ValueError(
                f"image {name or str(path)!r} is not an image file Pillow can decode (damaged, empty, or of a format "
                "it does not read)"
            ) from None
        with opened as img:
            if img.width * img.height > MAX_IMAGE_PIXELS:
                raise ValueError(
                    f"image {name or str(path)!r} is {img.width} x {img.height} = {img.width * img.height:,} pixels; "
                    f"lbee decodes images of at most {MAX_IMAGE_PIXELS:,} pixels (MAX_IMAGE_PIXELS). Downscale it "
                    "first."
                )
            yield img


def image_bytes(path, sha256):
    """The bytes of an image file when their SHA-256 is ``sha256``; None when it holds other bytes now.

    Read as every image is (`check_image_file`, then through the descriptor checked, at most `MAX_IMAGE_BYTES`): what
    an embedding and a thumbnail are made from, so that both show the bytes the run hashed.
    """
    import hashlib

    check_image_file(path)
    with pinned(path, "image") as src, open(src, "rb") as fh:
        data = fh.read(MAX_IMAGE_BYTES + 1)
    return data if hashlib.sha256(data).hexdigest() == sha256 else None


def open_rgb(path, sha256=None):
    """Open an image file as 8-bit RGB (see `to_rgb`); the file is closed on return.

    With ``sha256``, the bytes read must have that digest (the file hashed before is the file decoded), else a
    ``ValueError`` says the file changed.
    """
    check_image_file(path)
    if sha256 is None:
        with open_image(path) as img:
            img.load()
            return to_rgb(img)
    import io

    data = image_bytes(path, sha256)
    if data is None:
        raise ValueError(
            f"image {str(path)!r} changed after lbee hashed it (another file was put in its place while lbee read the "
            "folder): it is left out"
        )
    with open_image(io.BytesIO(data), name=str(path)) as img:
        img.load()
        return to_rgb(img)
