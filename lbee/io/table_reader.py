"""Reading a user table, and the typed column checks every table's schema is built from.

[`read_table`][lbee.io.table_reader.read_table] reads a CSV / TSV / parquet file and remembers where it
came from (``DataFrame.attrs``), so every later check can name the file, the
row as a spreadsheet shows it (1-based data rows) and, for text files, the
line of the file. The column checks (``text_column``, ``bool_column``,
``float_column``, ``class_column``, ...) raise ``ValueError`` naming the file,
the row(s), the column, what was received and what is expected.

Booleans accept ``1/0``, ``true/false`` and ``yes/no`` in any case (and real
booleans); anything else is an error.
"""

from __future__ import annotations

import decimal
import logging
import math
import numbers
from pathlib import Path

import numpy as np

from .._files import pinned, refuse_sparse
from .._validation import NUMBER_PATTERN  # a number in a cell: ASCII digits, not 1_000 or nan
from .table_file import csv_options, read_pinned  # noqa: F401  (csv_options: read from here by others)
from .table_header import refuse_repeated_columns

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
    kind : str, optional
        'predictions', 'manifest', 'relevance', 'metadata' or 'performance': validate the table against
        that schema (see `lbee.io.schemas.SCHEMAS`) before returning it.

    Returns
    -------
    pandas.DataFrame
        ``attrs['lbee_source']`` holds the path and ``attrs['lbee_format']``
        the format, so later checks can name the file, row and line.
    """
    path = Path(path)
    # a FIFO or a device would block or never end; under a data root every read goes to the file checked inside it
    with pinned(path, "Table") as src:
        if not path.is_file():
            raise FileNotFoundError(f"Table {str(path)!r} does not exist.")
        refuse_sparse(path, "Table")  # named by its path in the message
        suffix = path.suffix.lower()
        if suffix not in TABLE_SUFFIXES:
            raise ValueError(f"Table {str(path)!r} has suffix {suffix!r}; expected .csv, .tsv or .parquet.")
        table, fmt = read_pinned(src, path, suffix)
    table.columns = [str(c).strip() if isinstance(c, str) else c for c in table.columns]
    refuse_repeated_columns(list(table.columns), path)
    table.attrs[_SOURCE] = str(path)
    table.attrs[_FORMAT] = fmt
    if kind is not None:
        from .schemas import validate_table

        validate_table(table, kind)
    return table


def table_source(table, default="table"):
    """How messages name ``table``: its file path when it was read by `read_table`."""
    src = getattr(table, "attrs", {}).get(_SOURCE)
    return f"{default} {src!r}" if src else default


def _line_numbers(path, sep):
    """First line of every data record of a text table (pandas skips blank lines; so do we)."""
    import csv

    lines = []
    # read again for the numbers only: checked again too (a FIFO or a link out swapped in since is never opened)
    with pinned(path, "Table") as src, open(src, newline="", encoding="utf-8-sig", errors="replace") as fh:
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
        return [f"row {r} (line {lines[r - 1]} of the file)" if 0 < r <= len(lines) else f"row {r}" for r in rows]
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
        raise ValueError(
            f"{table_source(table, default)} lacks {what}; it has columns "
            f"{list(table.columns)}.{(' ' + hint) if hint else ''}"
        )


def check_no_missing(table, column, default="table"):
    """Raise when ``column`` holds a blank / missing cell."""
    values = table[column].to_numpy(dtype=object)
    bad = [i for i, v in enumerate(values) if _is_missing(v)]
    if bad:
        _fail(table, "has missing cell(s)", column, bad, f"{len(bad)} blank value(s)", "a value in every row", default)


#: The longest id (an image's path or name) a table may hold, in characters: Linux's PATH_MAX.
MAX_ID_CHARS = 4096


def check_unique(table, column, default="table", what="id"):
    """Raise when ``column`` repeats a value (after conversion to text), or holds one that is not visible text.

    An id is shown in reports and on the terminal: a control or format character (a terminal escape sequence, a
    zero-width space) is refused, naming the row.
    """
    from .._validation import shown
    from ..grammar import INVISIBLE, line_break_in

    raw = table[column].tolist()
    seen, dups = {}, []
    for i, v in enumerate(raw):
        key = cell_text(v)  # the text every later step compares: " a.png" and "a.png" are one id
        if key in seen:  # checked once: 65,000 rows of one long id were checked 65,000 times
            dups.append((seen[key], i, key))
            continue
        if len(key) > MAX_ID_CHARS:  # checked, hashed and shown on every page: a 130,000-character id on
            # 2,000 rows held a worker for minutes
            (where,) = row_labels(table, [i])
            raise ValueError(
                f"{table_source(table, default)}: column {column!r} at {where} holds an {what} of "
                f"{len(key):,} characters; expected at most {MAX_ID_CHARS:,} (a file path's length)."
            )
        bad = line_break_in(key)
        if bad is not None:
            (where,) = row_labels(table, [i])
            raise ValueError(
                f"{table_source(table, default)}: column {column!r} at {where} holds the character "
                f"U+{ord(bad):04X} ({INVISIBLE}); expected an {what} of visible text."
            )
        seen[key] = i
    if dups:
        first, second, value = dups[0]
        a, b = row_labels(table, [first, second])
        spaces = (
            ""
            if raw[first] == raw[second]
            else f" (written {shown(raw[first])} and {shown(raw[second])}; spaces around a cell are ignored)"
        )
        raise ValueError(
            f"{table_source(table, default)}: column {column!r} repeats the {what} {shown(value)} at "
            f"{a} and {b}{spaces} ({len(dups)} repeated row(s) in all); expected each {what} once."
        )


def cell_text(value):
    """A cell as the text an id is compared by: a string stripped of surrounding spaces, anything else ``str``."""
    return value.strip() if isinstance(value, str) else str(value)


def text_column(table, column, default="table"):
    """``column`` as a list of stripped strings, with no blank cell."""
    check_no_missing(table, column, default)
    return [cell_text(v) for v in table[column].tolist()]


def parse_number(value):
    """A cell as float: a real number, or text matching `NUMBER_PATTERN`; NaN for anything else (booleans too)."""
    if isinstance(value, (bool, np.bool_)):
        return math.nan
    if isinstance(value, (numbers.Real, decimal.Decimal)):  # parquet decimal columns arrive as Decimal
        return float(value)
    if isinstance(value, str) and NUMBER_PATTERN.fullmatch(value.strip()):
        return float(value.strip())
    return math.nan


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


def cells_written(table, column):
    """A CSV / TSV number column's cells as the file writes them (an object array, NaN where blank), or None.

    pandas reads ``01`` as 1 and ``0.99999999999999999`` as 1.0: readers that judge a cell by its text ask here.
    """
    if table[column].dtype.kind not in "iuf" or table.attrs.get(_FORMAT) not in ("csv", "tsv"):
        return None
    from .cells_as_written import cells_as_written

    raw = cells_as_written(table.attrs.get(_SOURCE), table.attrs[_FORMAT])
    if raw is None or column not in raw.columns or len(raw) != len(table):
        return None
    return raw[column].to_numpy(dtype=object)


def padded_digits(text):
    """Whether ``text`` writes a number in a form that is no class index: a sign (``+1``) or a leading zero (``01``)."""
    return text.startswith("+") or (len(text) > 1 and text[0] == "0" and text.isdigit())


def bool_column(table, column, default="table"):
    """``column`` as a bool array; any value other than 1/0, true/false, yes/no is an error.

    From a CSV / TSV file a column pandas read as numbers is judged as written: ``1.0`` stays 1, but
    ``0.99999999999999999`` (1.0 as a float), ``1e-400`` (0.0), ``+1`` and ``01`` are refused.
    """
    values = table[column].to_numpy(dtype=object)
    if table[column].dtype == bool:
        return values.astype(bool)
    raw = cells_written(table, column)
    if raw is not None:
        values = raw
    out = np.zeros(len(values), dtype=bool)
    bad = []
    for i, v in enumerate(values):
        b = parse_bool(v)
        if b is None:
            bad.append(i)
        else:
            out[i] = b
    if bad:
        _fail(
            table,
            "holds non-boolean value(s)",
            column,
            bad,
            _shown_values([values[i] for i in bad]),
            "1/0, true/false or yes/no (any case)",
            default,
        )
    return out


def float_column(table, column, default="table", *, low=None, high=None):
    """``column`` as finite float64, optionally within [low, high]."""
    values = table[column].to_numpy(dtype=object)
    out = np.empty(len(values), dtype=np.float64)
    bad = []
    for i, v in enumerate(values):
        f = parse_number(v)
        out[i] = f
        if not np.isfinite(f) or (low is not None and f < low) or (high is not None and f > high):
            bad.append(i)
    if bad:
        rng = "" if low is None and high is None else f" in [{low}, {high}]"
        _fail(
            table,
            "holds invalid number(s)",
            column,
            bad,
            _shown_values([values[i] for i in bad]),
            f"finite numbers{rng} in ASCII digits (no '_' separator, no NaN or inf, no blank)",
            default,
        )
    return out


def class_column(table, column, class_names=None, default="table"):
    """``label`` / ``pred`` as int64 class indices.

    A cell may be a class name from ``class_names`` (the ``prob_<class>``
    columns, names first: with classes named ``0`` and ``1`` a cell ``1`` is
    the class ``prob_1``, wherever its column stands) or an integer index in
    ``[0, n_classes)`` (the position of its ``prob_<class>`` column), written as
    digits in a text cell (``1``; ``1.0``, ``+1``, ``01`` and ``1e0`` are no index)
    or an integral number in a number column; without ``class_names`` only
    non-negative integers are accepted. A blank cell or any other value is an
    error naming the column and a few offending values.
    """
    values = table[column].to_numpy(dtype=object)
    # judged as written: pandas reads a column of 01, 10, 00 as the numbers 1, 10, 0, and the class named "01"
    # would become the class at position 1 (a right model was reported wrong on 68 % of its images)
    raw = cells_written(table, column)
    written = None if raw is None else [v.strip() if isinstance(v, str) else None for v in raw]
    lookup = {str(c): k for k, c in enumerate(class_names)} if class_names else {}
    n_classes = len(class_names) if class_names else None
    out = np.empty(len(values), dtype=np.int64)
    bad = []
    for i, v in enumerate(values):
        k = None
        key = (
            v.strip()
            if isinstance(v, str)
            else (str(int(v)) if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) else None)
        )
        if isinstance(v, (bool, np.bool_)):
            # pandas reads a column of nothing but true / false words as booleans: a class so named gets its cell
            word = "true" if v else "false"
            named = [j for name, j in lookup.items() if name.lower() == word]
            k = named[0] if len(named) == 1 else None
        text = written[i] if written is not None else None
        if text is not None and text in lookup:  # the class named as written ("01"), not the number pandas read
            k = lookup[text]
        elif text is not None and padded_digits(text):
            k = None  # "+1", "01": no index, and no class of that name
        elif key is not None and key in lookup:  # a class name wins over an index (classes named "0", "1")
            k = lookup[key]
        elif isinstance(v, str):  # text: an index is written as one, digits only ("1", not "1.0", "+1", "01")
            if key.isascii() and key.isdigit() and (key == "0" or not key.startswith("0")):
                if n_classes is None or int(key) < n_classes:
                    k = int(key)
        elif not _is_missing(v) and not isinstance(v, (bool, np.bool_)):  # a number column (1.0 from floats)
            f = parse_number(v)
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
            folded = {str(c).casefold() for c in class_names}
            if all(str(values[i]).strip().casefold() in folded for i in bad[:100]):  # 'Pass' for prob_pass (trial 40)
                expected += "; these differ from the class names only in case: write them as the columns do"
        else:
            expected = "a non-negative integer class index (class names need prob_<class> columns to fix their order)"
        _fail(
            table,
            "holds invalid class value(s)",
            column,
            bad,
            _shown_values([values[i] for i in bad]),
            expected,
            default,
        )
    return out


def check_not_empty(table, default):
    """Raise when ``table`` has no data row."""
    if len(table) == 0:
        raise ValueError(f"{table_source(table, default)} has no data row; expected at least one.")
