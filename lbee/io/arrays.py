"""Reading a user's ``.npy`` arrays: plain numeric arrays only, never pickled Python objects or archives."""

from __future__ import annotations

from pathlib import Path

import numpy as np

_ZIP_MAGIC = b"PK\x03\x04"  # an .npz archive is a zip file (np.savez), whatever its name
#: The image embeddings in a folder written by ``lbee embed`` (and its Ray path): ``--image-embeddings FOLDER``.
EMBEDDINGS_NPY = "embeddings.npy"
#: Rows read at a time when a memory-mapped array is checked (65,536 x 512 float32: 128 MiB of pages, released).
CHECK_ROWS = 65536


def embeddings_file(path, name):
    """The ``.npy`` that ``path`` names: the file itself, or ``embeddings.npy`` in a folder ``lbee embed`` wrote."""
    path = Path(path)
    if not path.is_dir():
        return path
    inside = path / EMBEDDINGS_NPY
    if not inside.is_file():
        raise ValueError(
            f"{name} {str(path)!r} is a folder without {EMBEDDINGS_NPY}; expected a .npy file or a folder "
            "written by `lbee embed`."
        )
    if not (path / "ids.txt").is_file():  # lbee embed names every row: without it rows would pair by position
        raise ValueError(
            f"{name} {str(path)!r} is a folder without ids.txt, which `lbee embed` writes beside {EMBEDDINGS_NPY} "
            "to name its rows' images; without it the rows cannot be matched to the predictions. Re-embed with "
            f"`lbee embed`, or pass {str(inside)!r} itself to take its rows in the predictions' order."
        )
    return inside


def check_embeddings(array, path, name):
    """Refuse a (memory-mapped) array that is not a 2-D real matrix of finite numbers, reading it in row blocks.

    Never copies the whole array: :data:`CHECK_ROWS` rows are checked at a time and the first bad row is named.
    """
    if array.ndim != 2 or array.dtype.kind not in "fiu" or 0 in array.shape:
        raise ValueError(
            f"{name} {str(path)!r} holds a {array.ndim}-D {array.dtype} array of shape {array.shape}; expected a "
            "non-empty 2-D real array (one row per image)."
        )
    if array.dtype.kind != "f":
        return
    for i0 in range(0, array.shape[0], CHECK_ROWS):
        finite = np.isfinite(array[i0 : i0 + CHECK_ROWS]).all(axis=1)
        if not finite.all():
            row = i0 + int(np.flatnonzero(~finite)[0])
            raise ValueError(
                f"{name} {str(path)!r}: row {row + 1} (index {row}) holds a NaN or inf; expected finite numbers only."
            )


#: Arrays of more bytes than this are memory-mapped by `load_npy` (read-only, as ``mmap=True``), not read whole.
LOAD_WHOLE_BYTES = 256 << 20


def load_npy(path, name, *, mmap=False):
    """A ``.npy`` array, or a ``ValueError`` naming the option and file (``mmap``: read the header only).

    Refused with a one-line reason: an empty file, an ``.npz`` archive saved
    under a ``.npy`` name (``np.load`` would return an archive, not an array),
    pickled Python objects, a FIFO or device (which would block or never end), and anything else numpy cannot
    read as an array.
    """
    from .._files import pinned

    with pinned(path, name) as src:  # under a data root: read through the descriptor checked inside it
        return _load_npy(src, path, name, mmap)


def _load_npy(src, path, name, mmap):
    """`load_npy` of the file at ``src`` (the checked path, or its pinned descriptor), named ``path`` in messages."""
    try:
        with open(src, "rb") as fh:
            head = fh.read(len(_ZIP_MAGIC))
    except OSError as exc:
        raise ValueError(f"Cannot read {name} {str(path)!r}: {exc.strerror or exc}.") from None
    if not head:
        raise ValueError(f"Cannot read {name} {str(path)!r}: the file is empty; expected a .npy array (np.save).")
    if head == _ZIP_MAGIC:
        raise ValueError(
            f"Cannot read {name} {str(path)!r}: it is an .npz archive (np.savez), expected a .npy array; "
            "save the array with np.save."
        )
    declared = _check_complete(src, name, shown=path)
    # past LOAD_WHOLE_BYTES an array is mapped, not read: its caller checks the shape from the header first, so a
    # sparse file declaring gigabytes it never wrote costs nothing (a 6 GB Γ of 4 KB on disk took 6 GB of memory)
    mmap = mmap or (declared is not None and declared > LOAD_WHOLE_BYTES)
    try:
        array = np.load(src, allow_pickle=False, mmap_mode="r" if mmap else None)
    except EOFError:
        raise ValueError(f"Cannot read {name} {str(path)!r}: the file is truncated; expected a .npy array.") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"Cannot read {name} {str(path)!r}: {npy_reason(exc)}") from None
    if not isinstance(array, np.ndarray):  # defensive: np.load returns an archive for any zip it recognises
        raise ValueError(f"Cannot read {name} {str(path)!r}: expected a .npy array; received {type(array).__name__}.")
    return array


def npy_reason(exc):
    """What numpy says of a bad ``.npy`` file, in words: never its advice to load pickles, nor a parse tree."""
    text = str(exc)
    if "max_header_size" in text:  # a padded header numpy will not parse (sweep 32g: said to be a pickle)
        import re

        size = re.search(r"\((\d+)\)", text)
        return (
            f"its header is {size.group(1) if size else 'over 10,000'} bytes, more than numpy reads safely (10,000); "
            "save the array with np.save, which writes a header of a few hundred bytes."
        )
    if "pickle" in text or "Python objects" in text:  # numpy's word for anything not a plain .npy array
        return "not a .npy array file (np.save of a numeric array); lbee never loads pickled Python objects."
    if "<ast." in text or "header" in text.lower():  # numpy quotes the header's parse tree ("<ast.BinOp at 0x7f..>")
        return "its header is not a .npy header (as np.save writes it: a dict of descr, fortran_order and shape)."
    return text


def _check_complete(path, name, *, shown=None):
    """Refuse a ``.npy`` file that holds fewer data bytes than its header claims (a copy cut short), or more.

    Said as the service says it for an upload, instead of numpy's ``mmap length is greater than file size``.
    A header numpy cannot read (or a format version this check does not know) is left to ``np.load``'s message.
    Returns the data bytes the header declares (None when it is left to ``np.load``).
    """
    import os

    from numpy.lib import format as npformat

    readers = {(1, 0): npformat.read_array_header_1_0, (2, 0): npformat.read_array_header_2_0}
    try:
        with open(path, "rb") as fh:
            version = npformat.read_magic(fh)
            if version not in readers:
                return
            start = fh.tell()
            shape, _, dtype = readers[version](fh)
            end = fh.tell()
            held = os.fstat(fh.fileno()).st_size - end
            fh.seek(start)
            header = fh.read(end - start)
    except (OSError, ValueError, EOFError, SyntaxError):
        return
    for key in (b"'descr'", b"'fortran_order'", b"'shape'"):  # numpy's parser keeps the last of two in silence
        if header.count(key) > 1:
            raise ValueError(
                f"Cannot read {name} {str(shown or path)!r}: its header writes {key.decode()} twice; expected a "
                ".npy header as np.save writes it."
            )
    if any(not isinstance(d, int) or d < 0 for d in shape):  # numpy's mmap dies with an OverflowError
        raise ValueError(
            f"Cannot read {name} {str(shown or path)!r}: its header claims shape {shape}; expected non-negative sizes "
            "(a .npy file written by np.save)."
        )
    if dtype.hasobject:  # pickled objects: refused by np.load below, with lbee's word for them
        return
    needed = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if needed > held:
        raise ValueError(
            f"Cannot read {name} {str(shown or path)!r}: truncated: its header claims shape {shape} ({needed} bytes of "
            f"{dtype}) but the file holds {held} bytes of data; expected a complete .npy file (np.save)."
        )
    if needed < held:  # data the header does not describe (two arrays saved into one file): refused as an upload is
        raise ValueError(
            f"Cannot read {name} {str(shown or path)!r}: its header claims shape {shape} ({needed} bytes of {dtype}) "
            f"but the file holds {held} bytes of data; expected a complete .npy file (np.save) and nothing after it."
        )
    return needed
