"""A CSV / TSV table with every cell as its text: how a boolean cell was written, before pandas read it as a number.

pandas reads ``0.99999999999999999`` as 1.0 and ``1e-400`` as 0.0; a reader of 1/0 cells
(`lbee.io.table_reader.bool_column`) judges the text instead.
"""

from __future__ import annotations

import functools


def cells_as_written(path, fmt):
    """The CSV / TSV file at ``path`` with every cell as its text (one file kept: a wide Γ asks per column)."""
    import os

    try:
        st = os.stat(path)
    except (OSError, TypeError):
        return None
    return _read_as_text(str(path), fmt, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=1)
def _read_as_text(path, fmt, mtime_ns, size):
    import pandas as pd

    from .._files import pinned
    from .table_reader import csv_options

    try:
        with pinned(path, "Table") as src:  # read again: under a data root, checked again
            return pd.read_csv(src, dtype=str, **csv_options(fmt))
    except Exception:  # read once already: the numbers as pandas read them stand (a link out is refused)
        return None
