"""One validating reader for every user table (predictions, manifests, Γ, VQA metadata, ω).

:func:`read_table` reads a CSV / TSV / parquet file and remembers where it
came from (``DataFrame.attrs``), so every later check can name the file, the
row as a spreadsheet shows it (1-based data rows) and, for text files, the
line of the file. The ``validate_*`` functions apply one declared schema per
kind of table: column names, dtypes, allowed values, no missing cells and
unique ids. Every failure raises ``ValueError`` naming the file, the row(s),
the column, what was received and what is expected.

Booleans accept ``1/0``, ``true/false`` and ``yes/no`` in any case (and real
booleans); anything else is an error.

Rows that match nothing in the run (an image id or sentence that is not
part of it) are reported by :func:`report_unmatched`: an error when no row
matches, a warning on the ``lbee`` logger with counts otherwise.
"""

from __future__ import annotations

import logging
import math
import numbers
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

logger = logging.getLogger("lbee")

TABLE_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".pq")
ID_COLUMNS = ("path", "image", "image_id", "id")
TRUE_WORDS = {"1", "true", "yes", "1.0"}
FALSE_WORDS = {"0", "false", "no", "0.0"}
_SOURCE = "lbee_source"
_FORMAT = "lbee_format"
_MAX_SHOWN = 5


# --------------------------------------------------------------------------- reading


def read_table(path, *, kind=None):
    """Read a CSV, TSV or parquet file into a DataFrame, with a clear error otherwise.

    Parameters
    ----------
    path : path-like
        ``.csv`` / ``.txt`` (comma separated), ``.tsv`` (tab separated) or
        ``.parquet`` / ``.pq``. Text files are decoded as UTF-8; a leading byte
        order mark is dropped; only an empty cell counts as missing (a class
        named ``NA`` or ``null`` stays text).
    kind : {'predictions', 'manifest', 'relevance', 'metadata', 'performance'}, optional
        Validate the table against that schema (see :data:`SCHEMAS`) before
        returning it.

    Returns
    -------
    pandas.DataFrame
        ``attrs['lbee_source']`` holds the path and ``attrs['lbee_format']``
        the format, so later checks can name the file, row and line.
    """
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Table {str(path)!r} does not exist.")
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise ValueError(f"Table {str(path)!r} has suffix {suffix!r}; expected .csv, .tsv or .parquet.")
    if suffix not in (".parquet", ".pq"):
        _check_header(path, "\t" if suffix == ".tsv" else ",")
    else:
        try:
            import pyarrow.parquet as pq

            names = pq.read_schema(path).names
        except Exception:  # not readable as parquet: the reader below says so
            names = []
        _refuse_repeated_columns(names, path)
    try:
        if suffix in (".parquet", ".pq"):
            table, fmt = pd.read_parquet(path), "parquet"
        else:
            fmt = "tsv" if suffix == ".tsv" else "csv"
            # Only an empty cell is missing: pandas' default NA words ("NA", "null", "None", "nan", ...)
            # would silently turn class names and ids into NaN.
            table = pd.read_csv(path, sep="\t" if fmt == "tsv" else ",", encoding="utf-8-sig",
                                keep_default_na=False, na_values=[""])
    except Exception as exc:  # pandas / pyarrow raise many types for a damaged file
        raise ValueError(f"Cannot read table {str(path)!r}: {exc}") from None
    table.columns = [str(c).strip() if isinstance(c, str) else c for c in table.columns]
    _refuse_repeated_columns(list(table.columns), path)
    table.attrs[_SOURCE] = str(path)
    table.attrs[_FORMAT] = fmt
    if kind is not None:
        validate_table(table, kind)
    return table


def _refuse_repeated_columns(columns, path):
    seen = {}
    for pos, col in enumerate(columns, 1):
        if col in seen:
            raise ValueError(f"Table {str(path)!r} repeats the column {col!r} (columns {seen[col]} and {pos} of the "
                             "header); expected each column once (lbee would not know which one to read).")
        seen[col] = pos


def _check_header(path, sep):
    """Refuse a text table whose header names a column twice (pandas would rename the second ``x.1``)."""
    import csv

    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            header = next((r for r in csv.reader(fh, delimiter=sep) if r), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return  # the reader below reports an unreadable file
    _refuse_repeated_columns([c.strip() for c in header], path)


def table_source(table, default="table"):
    """How messages name ``table``: its file path when it was read by :func:`read_table`."""
    src = getattr(table, "attrs", {}).get(_SOURCE)
    return f"{default} {src!r}" if src else default


def _line_numbers(path, sep):
    """First line of every data record of a text table (pandas skips blank lines; so do we)."""
    import csv

    lines = []
    with open(path, newline="", encoding="utf-8-sig", errors="replace") as fh:
        reader = csv.reader(fh, delimiter=sep)
        start = 1
        header_seen = False
        for record in reader:
            if record:  # csv gives [] for an empty line, which pandas skips
                if header_seen:
                    lines.append(start)
                header_seen = True
            start = reader.line_num + 1
    return lines


def row_labels(table, positions):
    """Describe rows (0-based positions) as a spreadsheet shows them.

    Returns a list of strings such as ``"row 3 (line 4 of the file)"`` for
    text files and ``"row 3"`` otherwise.
    """
    positions = [int(p) for p in positions]
    index = getattr(table, "index", None)
    rows = []
    for p in positions:
        label = index[p] if index is not None and p < len(index) else p
        rows.append(int(label) + 1 if isinstance(label, numbers.Integral) else p + 1)
    attrs = getattr(table, "attrs", {})
    if attrs.get(_FORMAT) in ("csv", "tsv") and attrs.get(_SOURCE):
        try:
            lines = _line_numbers(attrs[_SOURCE], "\t" if attrs[_FORMAT] == "tsv" else ",")
        except Exception:  # the file changed, vanished or is not parseable as CSV: rows only
            lines = []
        return [f"row {r} (line {lines[r - 1]} of the file)" if 0 < r <= len(lines) else f"row {r}"
                for r in rows]
    return [f"row {r}" for r in rows]


def _rows_phrase(table, positions, total=None):
    positions = list(positions)
    shown = row_labels(table, positions[:_MAX_SHOWN])
    total = len(positions) if total is None else total
    more = f" and {total - len(shown)} more" if total > len(shown) else ""
    return ", ".join(shown) + more


def _fail(table, what, column, positions, received, expected, default="table"):
    raise ValueError(
        f"{table_source(table, default)}: column {column!r} {what} at {_rows_phrase(table, positions)}; "
        f"received {received}; expected {expected}."
    )


def _shown_values(values):
    """The distinct offending values (first seen first), at most five."""
    distinct, seen = [], set()
    for v in values:
        key = "<blank>" if _is_missing(v) else repr(v)
        if key not in seen:
            seen.add(key)
            distinct.append(v)
    values = distinct
    out = []
    for v in values[:_MAX_SHOWN]:
        out.append("<blank>" if _is_missing(v) else repr(v.item() if isinstance(v, np.generic) else v))
    return "[" + ", ".join(out) + ("" if len(values) <= _MAX_SHOWN else ", ...") + "]"


def _is_missing(v):
    if v is None:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    if isinstance(v, str) and not v.strip():
        return True
    try:
        import pandas as pd

        return bool(pd.isna(v)) if not isinstance(v, (list, tuple, np.ndarray)) else False
    except (TypeError, ValueError):
        return False


# --------------------------------------------------------------------------- column checks


def require_columns(table, columns, default="table", hint=""):
    """Raise when any of ``columns`` is absent."""
    missing = [c for c in columns if c not in table.columns]
    if missing:
        what = f"the column {missing[0]!r}" if len(missing) == 1 else f"the columns {missing}"
        raise ValueError(f"{table_source(table, default)} lacks {what}; it has columns "
                         f"{list(table.columns)}.{(' ' + hint) if hint else ''}")


def check_no_missing(table, column, default="table"):
    """Raise when ``column`` holds a blank / missing cell."""
    values = table[column].to_numpy(dtype=object)
    bad = [i for i, v in enumerate(values) if _is_missing(v)]
    if bad:
        _fail(table, "has missing cell(s)", column, bad, f"{len(bad)} blank value(s)", "a value in every row",
              default)


def check_unique(table, column, default="table", what="id"):
    """Raise when ``column`` repeats a value (after conversion to text)."""
    seen, dups = {}, []
    for i, v in enumerate(table[column].astype(str).tolist()):
        if v in seen:
            dups.append((seen[v], i, v))
        else:
            seen[v] = i
    if dups:
        first, second, value = dups[0]
        a, b = row_labels(table, [first, second])
        raise ValueError(f"{table_source(table, default)}: column {column!r} repeats the {what} {value!r} at "
                         f"{a} and {b} ({len(dups)} repeated row(s) in all); expected each {what} once.")


def text_column(table, column, default="table"):
    """``column`` as a list of stripped strings, with no blank cell."""
    check_no_missing(table, column, default)
    return [str(v).strip() if isinstance(v, str) else str(v) for v in table[column].tolist()]


def parse_bool(value):
    """``True`` / ``False`` for 1/0, true/false, yes/no (any case) or a real bool; ``None`` otherwise."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Real):
        if value == 1:
            return True
        if value == 0:
            return False
        return None
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
    return None


def bool_column(table, column, default="table"):
    """``column`` as a bool array; any value other than 1/0, true/false, yes/no is an error."""
    values = table[column].to_numpy(dtype=object)
    if table[column].dtype == bool:
        return values.astype(bool)
    out = np.zeros(len(values), dtype=bool)
    bad = []
    for i, v in enumerate(values):
        b = parse_bool(v)
        if b is None:
            bad.append(i)
        else:
            out[i] = b
    if bad:
        _fail(table, "holds non-boolean value(s)", column, bad, _shown_values([values[i] for i in bad]),
              "1/0, true/false or yes/no (any case)", default)
    return out


def float_column(table, column, default="table", *, low=None, high=None):
    """``column`` as finite float64, optionally within [low, high]."""
    values = table[column].to_numpy(dtype=object)
    out = np.empty(len(values), dtype=np.float64)
    bad = []
    for i, v in enumerate(values):
        try:
            f = np.nan if isinstance(v, (bool, np.bool_)) else float(v)
        except (TypeError, ValueError):
            f = np.nan
        out[i] = f
        if not np.isfinite(f) or (low is not None and f < low) or (high is not None and f > high):
            bad.append(i)
    if bad:
        rng = "" if low is None and high is None else f" in [{low}, {high}]"
        _fail(table, "holds invalid number(s)", column, bad, _shown_values([values[i] for i in bad]),
              f"finite numbers{rng} (no NaN or inf, no blank)", default)
    return out


def class_column(table, column, class_names=None, default="table"):
    """``label`` / ``pred`` as int64 class indices.

    A cell may be a class name from ``class_names`` (the ``prob_<class>``
    columns, names first: with classes named ``0`` and ``1`` a cell ``1`` is
    the class ``prob_1``, wherever its column stands) or an integer index in
    ``[0, n_classes)`` (the position of its ``prob_<class>`` column); without
    ``class_names`` only non-negative integers are accepted. A blank cell or
    any other value is an error naming the column and a few offending values.
    """
    values = table[column].to_numpy(dtype=object)
    lookup = {str(c): k for k, c in enumerate(class_names)} if class_names else {}
    n_classes = len(class_names) if class_names else None
    out = np.empty(len(values), dtype=np.int64)
    bad = []
    for i, v in enumerate(values):
        k = None
        key = v.strip() if isinstance(v, str) else (str(int(v)) if isinstance(v, (int, np.integer)) and
                                                     not isinstance(v, (bool, np.bool_)) else None)
        if key is not None and key in lookup:  # a class name wins over an index (classes named "0", "1")
            k = lookup[key]
        elif not _is_missing(v) and not isinstance(v, (bool, np.bool_)):
            try:
                f = float(v.strip()) if isinstance(v, str) else float(v)
            except (TypeError, ValueError):
                f = math.nan
            if math.isfinite(f) and f == int(f) and f >= 0 and (n_classes is None or f < n_classes):
                k = int(f)
        if k is None:
            bad.append(i)
        else:
            out[i] = k
    if bad:
        if class_names:
            shown = [str(c) for c in class_names[:_MAX_SHOWN]] + (["..."] if len(class_names) > _MAX_SHOWN else [])
            expected = f"a class name of the prob_<class> columns ({', '.join(shown)}) or an index in [0, {n_classes})"
        else:
            expected = ("a non-negative integer class index (class names need prob_<class> columns to fix "
                        "their order)")
        _fail(table, "holds invalid class value(s)", column, bad, _shown_values([values[i] for i in bad]),
              expected, default)
    return out


def check_probabilities(table, columns, default="table", *, tolerance=None):
    """Validate ``prob_<class>`` columns as probabilities; returns (n, C) float64 rows renormalised to sum 1.

    Every cell must be a finite number in [0, 1] and every row must sum to 1
    within ``tolerance`` (default ``1e-3 + 1e-6 · C``, room for values written
    with six decimals). Rows that look like logits (a value outside [0, 1] or
    a sum far from 1) raise an error suggesting ``probabilities='logits'``.
    """
    probs = np.column_stack([float_column(table, c, default) for c in columns])
    n_cls = probs.shape[1]
    tol = 1e-3 + 1e-6 * n_cls if tolerance is None else float(tolerance)
    outside = np.flatnonzero(((probs < 0) | (probs > 1)).any(axis=1))
    sums = probs.sum(axis=1)
    off = np.flatnonzero(np.abs(sums - 1) > tol)
    if outside.size or off.size:
        rows = outside if outside.size else off
        detail = (f"values outside [0, 1] (e.g. {probs[rows[0]].min():.4g}..{probs[rows[0]].max():.4g})"
                  if outside.size else f"rows summing to {sums[rows[0]]:.6g}")
        raise ValueError(
            f"{table_source(table, default)}: the prob_<class> columns are not probabilities at "
            f"{_rows_phrase(table, rows)}: {detail}; expected values in [0, 1] summing to 1 (±{tol:.2g}). "
            "If they are logits (raw scores), pass probabilities='logits' to apply a softmax (CLI: --logits; "
            "report config: logits: true)."
        )
    return probs / sums[:, None]


def report_unmatched(n_unmatched, n_total, *, what, source, examples=(), hint=""):
    """Report rows of a table that matched nothing in the run.

    Raises ``ValueError`` when no row matched (``n_unmatched == n_total``);
    logs a warning on the ``lbee`` logger with the counts when some did not.
    """
    if n_unmatched == 0:
        return
    shown = ", ".join(repr(e) for e in list(examples)[:3])
    more = f" (e.g. {shown})" if shown else ""
    if n_unmatched >= n_total:
        raise ValueError(f"{source}: none of its {n_total} row(s) matches {what}{more}.{(' ' + hint) if hint else ''}")
    logger.warning("%s: %d of %d row(s) match no %s and are ignored%s.%s", source, n_unmatched, n_total, what,
                   more, (" " + hint) if hint else "")


def _posix(text):
    return str(text).replace("\\", "/")


def _same_file_name(a, b):
    """One id ends with the other at a folder boundary (``x/a/f.png`` and ``a/f.png`` or ``f.png``)."""
    a, b = _posix(a), _posix(b)
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


class IdMatcher:
    """Match the ids of a user table to the images of a run: exactly, or refused.

    The one rule for predictions tables, Γ tables and ω tables alike: a table
    id matches the image whose id (or path) it equals; failing that, the image
    whose id or path ends with it, or which it ends with, at a folder boundary
    (``f00.png`` or ``/data/a/f00.png`` for the image ``a/f00.png``), but only
    when exactly one image of the run matches that way. A shorter id that fits
    two images (``f00.png`` for ``a/f00.png`` and ``b/f00.png``) raises
    ``ValueError`` naming the colliding images, and so do two table ids that
    fall on one image.

    Parameters
    ----------
    run_ids : list of str
        The run's image ids, in row order.
    run_paths : list of str, optional
        The images' file paths (also matched).
    source : str
        How messages name the table.
    """

    def __init__(self, run_ids, run_paths=None, *, source="table"):
        self.run_ids = [str(i) for i in run_ids]
        self.forms = [[i] for i in self.run_ids]
        if run_paths is not None:
            for forms, p in zip(self.forms, run_paths):
                if p is not None and str(p) != forms[0]:
                    forms.append(str(p))
        self.source = source
        self.exact, self.by_name = {}, {}
        for i, forms in enumerate(self.forms):
            for f in forms:
                self.exact.setdefault(f, i)
                self.by_name.setdefault(_posix(f).rsplit("/", 1)[-1], set()).add(i)
        self.claimed = {}

    def index(self, key):
        """Row of the run's image that ``key`` names, or None when it names none."""
        key = str(key)
        i = self.exact.get(key)
        if i is None:
            name = _posix(key).rsplit("/", 1)[-1]
            cands = sorted(j for j in self.by_name.get(name, ()) if any(_same_file_name(key, f)
                                                                         for f in self.forms[j]))
            if len(cands) > 1:
                shown = ", ".join(repr(self.run_ids[j]) for j in cands[:4]) + (", ..." if len(cands) > 4 else "")
                raise ValueError(f"{self.source}: the id {key!r} matches {len(cands)} images of the run by its file "
                                 f"name ({shown}); expected an id that names one image: the image's id (its path "
                                 "relative to the folder, or the manifest's 'path'), or a path ending with it.")
            i = cands[0] if cands else None
        if i is not None:
            prev = self.claimed.setdefault(i, key)
            if prev != key:
                raise ValueError(f"{self.source}: the ids {prev!r} and {key!r} both match the image "
                                 f"{self.run_ids[i]!r} of the run; expected one id per image.")
        return i


# --------------------------------------------------------------------------- schemas


@dataclass(frozen=True)
class TableSchema:
    """Declared shape of one kind of user table.

    Attributes
    ----------
    name : str
        How messages call the table.
    required : tuple of str
        Columns that must exist (``ID`` means one of :data:`ID_COLUMNS`).
    optional : tuple of str
        Columns read when present.
    dtypes : dict of str to str
        ``'text'``, ``'bool'``, ``'float'``, ``'probability'``, ``'class'``.
    unique : tuple of str
        Columns whose values must not repeat.
    """

    name: str
    required: tuple
    optional: tuple = ()
    dtypes: dict = field(default_factory=dict)
    unique: tuple = ()


SCHEMAS = {
    "predictions": TableSchema(
        "predictions table", ("ID",), ("confidence", "prob_<class>", "label", "pred", "performance"),
        {"ID": "text", "confidence": "float", "prob_<class>": "probability", "label": "class", "pred": "class",
         "performance": "float"}, ("ID",)),
    "manifest": TableSchema("manifest", ("path",), ("label",), {"path": "text", "label": "class"}, ("path",)),
    "relevance": TableSchema("relevance table", ("image", "sentence", "relevant"), (),
                             {"image": "text", "sentence": "text or index", "relevant": "bool"}),
    "metadata": TableSchema("metadata table", ("image", "sentence", "relevant"), (),
                            {"image": "text", "sentence": "text", "relevant": "bool"}),
    "performance": TableSchema("performance table", ("performance",), ("image",),
                               {"image": "text", "performance": "float"}, ("image",)),
}


def id_column_of(table, id_column=None, default="predictions table"):
    """The image-id column: ``id_column`` or the first of ``path``, ``image``, ``image_id``, ``id``."""
    cols = list(table.columns)
    if id_column is None:
        id_column = next((c for c in ID_COLUMNS if c in cols), None)
        if id_column is None:
            raise ValueError(f"{table_source(table, default)} needs an image id column ('path', 'image', "
                             f"'image_id' or 'id'); found columns {cols}.")
    elif id_column not in cols:
        raise ValueError(f"{table_source(table, default)} lacks the id column {id_column!r}; found columns {cols}.")
    return id_column


def _check_not_empty(table, default):
    if len(table) == 0:
        raise ValueError(f"{table_source(table, default)} has no data row; expected at least one.")


def validate_table(table, kind, **kwargs):
    """Validate ``table`` against the schema ``kind`` (see :data:`SCHEMAS`); returns what the validator returns."""
    validators = {"predictions": validate_predictions, "manifest": validate_manifest,
                  "relevance": validate_relevance, "metadata": validate_metadata,
                  "performance": validate_performance}
    if kind not in validators:
        raise ValueError(f"`kind` must be one of {sorted(validators)}; received {kind!r}.")
    return validators[kind](table, **kwargs)


@dataclass
class Predictions:
    """A validated predictions table.

    Attributes
    ----------
    ids : list of str
    probs : ndarray of shape (n, C) or None
        Probabilities (softmax applied when the table held logits).
    class_names : list of str or None
    confidence, performance : ndarray of shape (n,) or None
    labels, preds : ndarray of int64, shape (n,), or None
    columns_used : dict of str to str
        What was read for the image id, φ and ω (``{'id': ..., 'phi': ..., 'omega': ...}``).
    """

    ids: list
    probs: np.ndarray | None = None
    class_names: list | None = None
    confidence: np.ndarray | None = None
    performance: np.ndarray | None = None
    labels: np.ndarray | None = None
    preds: np.ndarray | None = None
    columns_used: dict = field(default_factory=dict)


def validate_predictions(table, *, id_column=None, probabilities="probabilities", tolerance=None):
    """Validate a predictions table and return its typed columns as :class:`Predictions`.

    Parameters
    ----------
    table : pandas.DataFrame
    id_column : str, optional
    probabilities : {'probabilities', 'logits'}, default='probabilities'
        What the ``prob_<class>`` columns hold; logits get a row-wise softmax.
    tolerance : float, optional
        Allowed |row sum − 1| of probabilities (see :func:`check_probabilities`).
    """
    name = "predictions table"
    if probabilities not in ("probabilities", "logits"):
        raise ValueError(f"`probabilities` must be 'probabilities' or 'logits'; received {probabilities!r}.")
    _check_not_empty(table, name)
    idc = id_column_of(table, id_column, name)
    ids = text_column(table, idc, name)
    check_unique(table, idc, name, what="image id")
    cols = list(table.columns)
    prob_cols = [c for c in cols if str(c).startswith("prob_")]
    out = Predictions(ids)
    if prob_cols:
        names = [str(c)[len("prob_"):] for c in prob_cols]
        if len(set(names)) != len(names):
            raise ValueError(f"{table_source(table, name)} repeats a prob_<class> column; found {prob_cols}.")
        out.class_names = names
        if probabilities == "logits":
            from ..scoring.confidence import softmax

            out.probs = softmax(np.column_stack([float_column(table, c, name) for c in prob_cols]))
        else:
            out.probs = check_probabilities(table, prob_cols, name, tolerance=tolerance)
        if "confidence" in cols:
            logger.warning("%s has both 'confidence' and %s; φ comes from the probabilities and the "
                           "'confidence' column is ignored.", table_source(table, name), prob_cols)
    elif "confidence" in cols:
        out.confidence = float_column(table, "confidence", name)
    else:
        raise ValueError(f"{table_source(table, name)} needs a 'confidence' column or class probability columns "
                         f"'prob_<class>'; found columns {cols}.")
    for col in ("label", "pred"):
        if col in cols:
            setattr(out, col + "s", class_column(table, col, out.class_names, name))
    if out.probs is not None and out.preds is not None:
        differ = np.flatnonzero(out.preds != out.probs.argmax(1))
        if differ.size:  # a thresholded model may mean it; say so rather than pick silently
            logger.warning("%s: 'pred' differs from the most probable class in %d of %d rows (first: row %d, "
                           "id %r); lbee takes 'pred' as the model's prediction.", table_source(table, name), differ.size,
                           len(ids), int(differ[0]) + 1, ids[int(differ[0])])
    if "performance" in cols:
        out.performance = float_column(table, "performance", name)
    out.columns_used = _columns_used(idc, prob_cols, out)
    _warn_unread_columns(table, name, cols, idc, prob_cols, out.columns_used)
    return out


#: Column names that probably mean one lbee reads under another name (checked case-insensitively).
LIKELY_NAMES = {
    "label": ("true_label", "target", "targets", "gt", "ground_truth", "y", "y_true", "true", "truth", "class",
              "label_id", "true_class", "labels", "class_id", "gt_label"),
    "pred": ("predicted", "prediction", "predictions", "pred_label", "y_pred", "predicted_label", "preds",
             "predicted_class", "pred_class", "pred_id"),
    "confidence": ("score", "conf", "prob", "probability", "max_prob", "certainty", "confidence_score"),
    "performance": ("correct", "is_correct", "accuracy", "omega", "perf"),
}


def _columns_used(idc, prob_cols, out):
    """What each column was read as: {role: description} (the same words the warnings use)."""
    used = {"id": repr(idc)}
    used["phi"] = (f"{len(prob_cols)} prob_<class> columns" if prob_cols else "'confidence'")
    if out.performance is not None:
        used["omega"] = "'performance'"
    elif out.labels is not None and (out.preds is not None or out.probs is not None):
        used["omega"] = "correctness: 'label' against " + ("'pred'" if out.preds is not None else
                                                            "the most probable class")
    else:
        used["omega"] = "−entropy of the probabilities (no 'label')" if prob_cols else "φ itself (no 'label')"
    return used


def _warn_unread_columns(table, name, cols, idc, prob_cols, used):
    """Warn about columns lbee does not read but that look like ones it does (``true_label`` for ``label``)."""
    read = {idc, "confidence", "label", "pred", "performance", *prob_cols}
    hints = []
    for c in cols:
        if c in read or not isinstance(c, str):
            continue
        for target, names in LIKELY_NAMES.items():
            if c.strip().lower() in names and target not in cols:
                hints.append(f"{c!r} (did you mean {target!r}? rename the column to use it)")
                break
    if hints:
        logger.warning("%s: column(s) %s are not read. lbee read: image id from %s, φ from %s, ω = %s.",
                       table_source(table, name), ", ".join(hints), used["id"], used["phi"], used["omega"])


def validate_manifest(table):
    """Validate an image manifest; returns (paths as in the table, labels or None).

    ``path`` must be filled and unique; ``label`` (optional) must be filled and
    hold non-negative integer class indices, or class names (returned as an
    object array of str), which the predictions' ``prob_<class>`` columns turn
    into indices (:func:`lbee.run.inputs.model_scores`).
    """
    name = "manifest"
    _check_not_empty(table, name)
    require_columns(table, ["path"], name)
    paths = text_column(table, "path", name)
    check_unique(table, "path", name, what="path")
    labels = None
    if "label" in table.columns:
        check_no_missing(table, "label", name)
        raw = table["label"].tolist()
        if not any(_is_number(v) for v in raw):  # class names: given indices by the predictions' prob_<class> columns
            labels = np.asarray([str(v).strip() for v in raw], dtype=object)
        else:
            labels = class_column(table, "label", None, name)
    return paths, labels


def _is_number(value):
    if isinstance(value, (bool, np.bool_)):
        return False
    try:
        float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        return False
    return True


def validate_relevance(table, *, image_ids=None, sentences=None):
    """Validate a long-form relevance table (``image``, ``sentence``, ``relevant``).

    Returns
    -------
    images : list of str
    sentences : list of (str or int)
        The sentence text, or an integer index when the cell is an integer.
    relevant : ndarray of bool
    """
    name = "relevance table"
    _check_not_empty(table, name)
    require_columns(table, ["image", "sentence", "relevant"], name)
    images = text_column(table, "image", name)
    check_no_missing(table, "sentence", name)
    sents = []
    for v in table["sentence"].tolist():
        if isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)):
            sents.append(int(v))
        elif isinstance(v, float) and v.is_integer():
            sents.append(int(v))
        else:
            sents.append(str(v).strip())
    relevant = bool_column(table, "relevant", name)
    _check_conflicts(table, images, sents, relevant, name)
    return images, sents, relevant


def validate_metadata(table):
    """Validate a VQA metadata table (``image``, ``sentence``, ``relevant``); returns {(image, sentence): bool}."""
    name = "metadata table"
    _check_not_empty(table, name)
    require_columns(table, ["image", "sentence", "relevant"], name)
    images = text_column(table, "image", name)
    sents = text_column(table, "sentence", name)
    relevant = bool_column(table, "relevant", name)
    _check_conflicts(table, images, sents, relevant, name)
    return dict(zip(zip(images, sents), relevant.tolist()))


def _check_conflicts(table, images, sents, relevant, name):
    first = {}
    for i, key in enumerate(zip(images, sents)):
        if key in first and relevant[first[key]] != relevant[i]:
            a, b = row_labels(table, [first[key], i])
            raise ValueError(f"{table_source(table, name)}: {a} and {b} give the pair (image {key[0]!r}, sentence "
                             f"{key[1]!r}) conflicting 'relevant' values ({bool(relevant[first[key]])} and "
                             f"{bool(relevant[i])}); expected one value per pair.")
        first.setdefault(key, i)


def validate_performance(table, *, image_ids=None):
    """ω from a table with a ``performance`` column, aligned to ``image_ids`` when the table has an ``image`` column.

    Without an ``image`` column the rows must already be in the run's order
    (and, with ``image_ids``, there must be exactly one row per image).

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    name = "performance table"
    _check_not_empty(table, name)
    require_columns(table, ["performance"], name)
    omega = float_column(table, "performance", name)
    if "image" not in table.columns:
        if image_ids is not None and len(omega) != len(image_ids):
            raise ValueError(f"{table_source(table, name)} has {len(omega)} rows but the run has {len(image_ids)} "
                             "images; add an 'image' column or give one row per image in the run's order.")
        return omega
    ids = text_column(table, "image", name)
    check_unique(table, "image", name, what="image id")
    if image_ids is None:
        return omega
    rows, unmatched = match_table_rows(ids, image_ids, source=table_source(table, name))
    missing = [iid for iid, r in zip(image_ids, rows) if r < 0]
    if missing:
        raise ValueError(f"{table_source(table, name)} has no row for {len(missing)} of the run's {len(image_ids)} "
                         f"images, e.g. {missing[:3]}.")
    report_unmatched(len(unmatched), len(ids), what="image of the run", source=table_source(table, name),
                     examples=unmatched)
    return omega[rows]


def match_table_rows(table_ids, image_ids, image_paths=None, *, source="table"):
    """The table row of each image of the run (-1 for none), by :class:`IdMatcher`'s rule.

    Returns
    -------
    rows : ndarray of int64, shape (n_images,)
    unmatched : list of str
        The table ids that name no image of the run, in table order.
    """
    matcher = IdMatcher(image_ids, image_paths, source=source)
    rows = np.full(len(image_ids), -1, dtype=np.int64)
    unmatched = []
    for r, tid in enumerate(table_ids):
        i = matcher.index(tid)
        if i is None:
            unmatched.append(str(tid))
        elif rows[i] < 0:
            rows[i] = r
    return rows, unmatched
