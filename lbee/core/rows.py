"""Unit image embeddings read in row blocks: no float64 or normalised copy of the whole (n, d) matrix.

`UnitRows` wraps the embeddings as they were given (a float32 array, a
memory-mapped ``.npy`` from ``np.load(mmap_mode="r")``, or shards as
`lbee.io.arrays.ShardedRows` joins them) and hands out float64 unit rows
a block at a time. Each row is normalised exactly as
`lbee._validation.as_unit_rows` normalises it (divided by its largest
magnitude, then by its norm), so a block holds the same numbers as the same
rows of the whole normalised matrix, and results on inputs of at most
`BLOCK_ROWS` rows are bit for bit those of the in-memory path.

The working set of a pass is one block: ``BLOCK_ROWS * d`` float64 plus at most
two temporaries of its size (at d = 512: 3 x 32 MiB), and two float64 factors per
row (16 bytes x n) kept from the validating pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .._validation import as_float_matrix
from ..typing import FloatArray, IntArray

#: Rows per block of every pass over the embeddings (8,192 x 512 float64: 32 MiB).
BLOCK_ROWS = 8192


def _unit(block: Any, peak: FloatArray, norm: FloatArray) -> FloatArray:
    """Float64 unit rows of ``block`` given each row's largest magnitude and the norm of the row divided by it.

    The two divisions of `lbee._validation.as_unit_rows`, with its factors computed once (in
    `_check_blocks`): the same numbers, bit for bit.
    """
    arr = np.array(block, dtype=np.float64)
    arr /= peak[:, None]
    arr /= norm[:, None]
    return arr


class UnitRows:
    """Read-only unit rows of an (n, d) array, computed block by block (never all at once).

    Parameters
    ----------
    data : array-like of shape (n, d)
        Real numbers: an ndarray (a ``np.memmap`` stays on disk), an object with ``shape``, ``dtype`` and
        NumPy-style ``data[i0:i1]`` / ``data[index_array]`` (`lbee.io.arrays.ShardedRows`), or
        anything ``np.asarray`` turns into a matrix.
    name : str
        The argument's name in error messages.
    rows : ndarray of int, optional
        The rows this object stands for (a subset), in this order: rows of ``data``, or positions in ``data``
        when it is itself a UnitRows.

    Raises
    ------
    TypeError, ValueError
        As `lbee._validation.as_unit_rows`: not a real matrix, empty, a NaN or inf, an all-zero row.
        Checked in blocks, the first bad row named.
    """

    data: Any
    name: str
    rows: IntArray | None
    peak: FloatArray
    norm: FloatArray

    def __init__(self, data: Any, name: str = "image_embeddings", *, rows: Any = None) -> None:
        #: these rows computed once (`keep_dense`), or None: read from ``data`` at each block
        self._dense: FloatArray | None = None
        if isinstance(data, UnitRows):
            if data._dense is not None:  # a subset of rows kept in memory: read from them, never computed again
                self._dense = data._dense if rows is None else data._dense[data._local(rows)]
            rows = data.rows if rows is None else data._global(rows)
            self.peak, self.norm = data.peak, data.norm
            data, name = data.data, data.name
        else:
            data = _as_matrix(data, name)
            self.peak, self.norm = _check_blocks(data, name)
        self.data = data
        self.name = name
        self.rows = None if rows is None else np.asarray(rows, dtype=np.int64)

    @property
    def shape(self) -> tuple[int, int]:
        """(n, d) of the rows this object stands for."""
        n = self.data.shape[0] if self.rows is None else len(self.rows)
        return int(n), int(self.data.shape[1])

    @property
    def ndim(self) -> int:
        return 2

    @property
    def dtype(self) -> np.dtype[Any]:
        """float64: the dtype of every block handed out."""
        return np.dtype(np.float64)

    def __len__(self) -> int:
        return self.shape[0]

    def _local(self, index: Any) -> IntArray:
        """Positions in this object of ``index`` (ints or a mask)."""
        idx = np.arange(self.shape[0])[index] if not isinstance(index, np.ndarray) else index
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        return np.asarray(idx, dtype=np.int64)

    def _global(self, index: Any) -> IntArray:
        idx = self._local(index)
        return idx if self.rows is None else self.rows[idx]

    def keep_dense(self) -> UnitRows:
        """Compute these rows once and keep them: every later block, subset and mean reads them (returns self).

        For a small subset used many times (a class of a per-class run is split, clustered and averaged five
        times over): the same numbers, computed once. Memory: n x d float64.
        """
        if self._dense is None:
            self._dense = self.block(0, self.shape[0])
        return self

    def subset(self, index: Any) -> UnitRows:
        """The rows ``index`` (ints or a mask), lazily: nothing is read until a block is asked for."""
        return UnitRows(self, rows=index)  # __init__ maps ``index`` to rows of ``data``

    def block(self, start: int, stop: int) -> FloatArray:
        """Float64 unit rows ``start:stop`` (positions in this object), shape (stop - start, d)."""
        if self._dense is not None:
            kept: FloatArray = self._dense[start:stop].copy()  # the caller's own array, as a computed block is
            return kept
        if self.rows is None:
            return _unit(self.data[start:stop], self.peak[start:stop], self.norm[start:stop])
        idx = self.rows[start:stop]
        return _unit(_gather(self.data, idx), self.peak[idx], self.norm[idx])

    def blocks(self, block_rows: int | None = None) -> Iterator[tuple[int, FloatArray]]:
        """``(start, rows)`` for every block of at most ``block_rows`` rows (default `BLOCK_ROWS`), in order."""
        n = self.shape[0]
        block_rows = BLOCK_ROWS if block_rows is None else block_rows
        for i0 in range(0, n, block_rows):
            yield i0, self.block(i0, min(i0 + block_rows, n))

    def take(self, index: Any) -> FloatArray:
        """Float64 unit rows ``index`` as one array (for subsets known to be small)."""
        if self._dense is not None:
            taken: FloatArray = self._dense[self._local(index)]
            return taken
        idx = self._global(index)
        return _unit(_gather(self.data, idx), self.peak[idx], self.norm[idx])

    def __getitem__(self, index: Any) -> FloatArray:
        if isinstance(index, tuple):
            rows, cols = index
            part: FloatArray = self.take(rows)[:, cols]
            return part
        if isinstance(index, (int, np.integer)):
            row: FloatArray = self.take(np.asarray([index]))[0]
            return row
        return self.take(index)

    def __array__(self, dtype: Any = None, copy: Any = None) -> FloatArray:
        """The whole matrix, materialised (float64): for callers that need an ndarray; avoid at scale."""
        out = self.block(0, self.shape[0])
        return out if dtype is None else np.asarray(out, dtype=dtype)

    def sum(self) -> FloatArray:
        """Column sums, shape (d,), float64, block by block."""
        total = np.zeros(self.shape[1])
        for _, b in self.blocks():
            total += b.sum(axis=0)
        return total

    def mean(self, axis: int = 0) -> FloatArray:
        """Column means, shape (d,); a single block is ``ndarray.mean`` of the materialised rows."""
        if axis != 0:
            raise ValueError("UnitRows.mean: only axis=0 (the column means).")
        if self.shape[0] <= BLOCK_ROWS:
            single: FloatArray = self.block(0, self.shape[0]).mean(axis=0)
            return single
        return self.sum() / self.shape[0]

    def small(self) -> bool:
        """Whether these rows fit in one block (then callers may materialise them)."""
        return self.shape[0] <= BLOCK_ROWS


def materialise(rows: Any) -> FloatArray:
    """An ndarray of ``rows`` (a `UnitRows` is computed in full; an ndarray is returned as is)."""
    if isinstance(rows, UnitRows):
        return np.asarray(rows)
    out: FloatArray = np.asarray(rows)
    return out


def _gather(data: Any, idx: IntArray) -> Any:
    """``data[idx]``, reading a memory map or shards in sorted order (faster page reads) when idx is unsorted."""
    if idx.size > 1 and np.any(idx[1:] < idx[:-1]):
        order = np.argsort(idx, kind="stable")
        got = data[idx[order]]
        out = np.empty_like(got)
        out[order] = got
        return out
    return data[idx]


def _as_matrix(value: Any, name: str) -> Any:
    """``value`` itself when it is a non-empty real 2-D array (an ndarray, a memory map, shards).

    Anything else goes through `lbee._validation.as_float_matrix` (a float64 array, or its error).
    """
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None and len(shape) == 2 and min(shape) > 0:
        if np.dtype(dtype).kind in "fiub":
            return value
    return as_float_matrix(value, name)


def _check_blocks(data: Any, name: str) -> tuple[FloatArray, FloatArray]:
    """Each row's largest magnitude and the norm of the row divided by it, shape (n,) each, a block at a time.

    Refuses a NaN or inf and an all-zero row (the first ones named), as `lbee._validation.as_unit_rows`.
    """
    n = data.shape[0]
    peak, norm = np.empty(n), np.empty(n)
    bad_values, zero_rows = 0, list[int]()
    for i0 in range(0, n, BLOCK_ROWS):
        block = np.array(data[i0 : i0 + BLOCK_ROWS], dtype=np.float64)
        top = np.maximum(block.max(axis=1), -block.min(axis=1))  # |x|'s max, NaN where the row has one
        if not np.isfinite(top).all():
            bad_values += int(block.size - np.isfinite(block).sum())
            continue
        if len(zero_rows) < 5:
            zero = np.flatnonzero(top == 0)
            zero_rows += (zero[: 5 - len(zero_rows)] + i0).tolist()
        top[top == 0] = 1.0
        block /= top[:, None]
        peak[i0 : i0 + len(block)] = top
        norm[i0 : i0 + len(block)] = np.linalg.norm(block, axis=1)
    if bad_values:
        raise ValueError(f"`{name}` contains {bad_values} NaN or inf value(s); expected finite values only.")
    if zero_rows:
        raise ValueError(
            f"`{name}` has all-zero rows (first indices, from 0: {zero_rows}); a zero vector has no direction to "
            "compare."
        )
    return peak, norm
