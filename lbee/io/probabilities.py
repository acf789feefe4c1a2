"""The ``prob_<class>`` columns of a predictions table, checked as probabilities."""

from __future__ import annotations

import numpy as np

from .table_reader import _rows_phrase, float_column, table_source


def check_probabilities(table, columns, default="table", *, tolerance=None):
    """Validate ``prob_<class>`` columns as probabilities; returns (n, C) float64 rows renormalised to sum 1.

    Every cell must be a finite number in [0, 1] and every row must sum to 1
    within ``tolerance`` (default ``1e-3 + 1e-6 · C``, room for values written
    with six decimals; ``C · ½ · 10⁻ᵏ`` when every value has k = 2 or 3
    decimals, as rounding leaves them). Rows that look like logits (a value
    outside [0, 1] or a sum far from 1) raise an error suggesting
    ``probabilities='logits'``.
    """
    if len(columns) == 1:  # a renamed or dropped class column reads as "rows summing to 0.9": say what is wrong
        raise ValueError(
            f"{table_source(table, default)} has one prob_<class> column ({columns[0]!r}); expected one per class, "
            "at least two (prob_cat, prob_dog, ...), or none with a 'confidence' column instead."
        )
    probs = np.column_stack([float_column(table, c, default) for c in columns])
    n_cls = probs.shape[1]
    strict = 1e-3 + 1e-6 * n_cls  # room for values written with six decimals
    tol = strict if tolerance is None else float(tolerance)
    if tolerance is None:  # values written with k decimals sum to 1 within C·½·10⁻ᵏ (a user's table .round(2))
        for k in (2, 3):
            scaled = probs[np.isfinite(probs)] * 10**k
            if scaled.size and np.allclose(scaled, np.round(scaled), rtol=0, atol=1e-6):
                tol = max(tol, n_cls * 0.5 * 10.0**-k + 1e-9)
                break
    outside = np.flatnonzero(((probs < 0) | (probs > 1)).any(axis=1))
    sums = probs.sum(axis=1)
    off = np.flatnonzero(np.abs(sums - 1) > tol)
    if outside.size or off.size:
        rows = outside if outside.size else off
        detail = (
            f"values outside [0, 1] (e.g. {probs[rows[0]].min():.4g}..{probs[rows[0]].max():.4g})"
            if outside.size
            else f"rows summing to {sums[rows[0]]:.6g}"
        )
        logits = (
            "If they are logits (raw scores), have a softmax applied: --logits on the command line, logits: true "
            "in a report config, logits=True in lbee.audit, probabilities='logits' in lbee.io's table readers."
        )
        # percentages read as logits would be softmaxed into nonsense: they get their own hint (trial 32)
        percent = bool(((probs >= 0) & (probs <= 100)).all() and np.allclose(sums, 100, rtol=0, atol=100 * tol))
        raise ValueError(
            f"{table_source(table, default)}: the prob_<class> columns are not probabilities at "
            f"{_rows_phrase(table, rows)}: {detail}; expected values in [0, 1] summing to 1 (±{tol:.2g}). "
            + (
                "They look like percentages (every row sums to 100): divide them by 100."
                if percent
                else logits
                if outside.size or abs(sums[rows[0]] - 1) > 0.5
                else "If they were rounded or some class was left out, write every class's probability with more "
                "decimals (or divide each row by its sum yourself); " + logits[0].lower() + logits[1:]
            )
        )
    rounded = np.flatnonzero(np.abs(sums - 1) > strict)
    if rounded.size:  # accepted as rounding, and said (a twentieth user's rows of 0.99 went by without a word)
        import warnings

        warnings.warn(
            f"{table_source(table, default)}: {rounded.size} row(s) of prob_<class> sum to 1 only within rounding "
            f"(e.g. {sums[rounded[0]]:.4g} at {_rows_phrase(table, rounded[:1])}); each row is divided by its sum.",
            stacklevel=2,
        )
    return probs / sums[:, None]


def without_misnamed(exc):
    """A `check_probabilities` error without the misnamed columns, in short: the first row that does not sum to 1.

    A thirty-sixth user read five rows and "and 15 more" after the rename that fixes them all. Another error
    (one prob_ column left) is said as it is.
    """
    import re

    found = re.search(r"not probabilities at row (\d+(?: \(line \d+ of the file\))?)", str(exc))
    if found is None:
        return str(exc)[:1000]
    return f"the other prob_<class> columns do not sum to 1 (row {found.group(1)})"
