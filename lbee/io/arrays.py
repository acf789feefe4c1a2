"""Reading a user's ``.npy`` arrays: plain numeric arrays only, never pickled Python objects."""

from __future__ import annotations

import numpy as np


def load_npy(path, name, *, mmap=False):
    """A ``.npy`` array, or a ``ValueError`` naming the option and file (``mmap``: read the header only)."""
    try:
        return np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
    except EOFError:
        raise ValueError(f"Cannot read {name} {str(path)!r}: the file is empty.") from None
    except (OSError, ValueError) as exc:
        if "pickle" in str(exc) or "Python objects" in str(
            exc
        ):  # numpy's word for anything that is not a plain .npy array
            raise ValueError(
                f"Cannot read {name} {str(path)!r}: not a .npy array file (np.save of a numeric "
                "array); lbee never loads pickled Python objects."
            ) from None
        raise ValueError(f"Cannot read {name} {str(path)!r}: {exc}") from None
