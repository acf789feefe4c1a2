"""What a table's header must be, checked before pandas reads the rows: one column each, not too many, UTF-8."""

from __future__ import annotations

#: The most columns a table may have (its header is read first): a predictions table of `MAX_NUM_CLASSES`
#: (lbee.run.limits) classes and a few more columns. A 62 MB CSV of 150,000 columns took 6 GB in pandas.
MAX_TABLE_COLUMNS = 100_064


def refuse_repeated_columns(columns, path):
    seen = {}
    for pos, col in enumerate(columns, 1):
        if col in seen:
            raise ValueError(
                f"Table {str(path)!r} repeats the column {col!r} (columns {seen[col]} and {pos} of the "
                "header); expected each column once (lbee would not know which one to read)."
            )
        seen[col] = pos


def check_header(path, sep):
    """Refuse a text table that is UTF-16 (Excel's "Unicode text"), or whose header names a column twice."""
    import csv

    try:
        with open(path, "rb") as fh:  # UTF-16's marks (UTF-32 LE's begins with UTF-16 LE's); pandas says "0xff"
            if fh.read(2) in (b"\xff\xfe", b"\xfe\xff"):
                raise ValueError(f"Cannot read table {str(path)!r}: it is UTF-16 or UTF-32; save it as UTF-8.")
        with open(path, newline="", encoding="utf-8-sig") as fh:
            header = next((r for r in csv.reader(fh, delimiter=sep) if r), [])
    except csv.Error as exc:  # a cell over csv's 131,072 characters: the checks below would be skipped in silence
        raise ValueError(
            f"Cannot read the header of table {str(path)!r}: {exc}; expected a row of column names."
        ) from None
    except (OSError, UnicodeDecodeError):
        return  # the reader below reports an unreadable file
    refuse_too_many_columns(len(header), path)
    refuse_repeated_columns([c.strip() for c in header], path)


def refuse_too_many_columns(n, path):
    if n > MAX_TABLE_COLUMNS:
        raise ValueError(
            f"Table {str(path)!r} has {n:,} columns; lbee reads tables of at most {MAX_TABLE_COLUMNS:,} columns "
            "(100,000 classes and a few more). Relevance of more sentences goes in an .npy file."
        )
