"""Reading a user's ``.npy`` arrays: plain numeric arrays only, never pickled Python objects or archives."""

from __future__ import annotations

import numpy as np

_ZIP_MAGIC = b"PK\x03\x04"  # an .npz archive is a zip file (np.savez), whatever its name


def load_npy(path, name, *, mmap=False):
    """A ``.npy`` array, or a ``ValueError`` naming the option and file (``mmap``: read the header only).

    Refused with a one-line reason: an empty file, an ``.npz`` archive saved
    under a ``.npy`` name (``np.load`` would return an archive, not an array),
    pickled Python objects, and anything else numpy cannot read as an array.
    """
    try:
        with open(path, "rb") as fh:
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
    try:
        array = np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
    except EOFError:
        raise ValueError(f"Cannot read {name} {str(path)!r}: the file is truncated; expected a .npy array.") from None
    except (OSError, ValueError) as exc:
        if "pickle" in str(exc) or "Python objects" in str(exc):  # numpy's word for anything not a plain .npy array
            raise ValueError(
                f"Cannot read {name} {str(path)!r}: not a .npy array file (np.save of a numeric "
                "array); lbee never loads pickled Python objects."
            ) from None
        raise ValueError(f"Cannot read {name} {str(path)!r}: {exc}") from None
    if not isinstance(array, np.ndarray):  # defensive: np.load returns an archive for any zip it recognises
        raise ValueError(f"Cannot read {name} {str(path)!r}: expected a .npy array; received {type(array).__name__}.")
    return array
