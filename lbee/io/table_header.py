"""What a table's header must be, checked before pandas reads the rows: one column each, not too many, UTF-8."""

from __future__ import annotations

#: The most columns a table may have (its header is read first): a predictions table of `MAX_NUM_CLASSES`
#: (lbee.run.limits) classes and a few more columns. A 62 MB CSV of 150,000 columns took 6 GB in pandas.
MAX_TABLE_COLUMNS = 100_064
#: Rows a parquet table may declare per byte of its file, beyond `PARQUET_FREE_ROWS`: run-length and dictionary
#: encoding make a repeated value nearly free on disk (a 743 KB file declared 100 million rows and took 21.6 GB in
#: pandas); a real table of distinct image ids costs a few bytes a row.
PARQUET_ROWS_PER_BYTE = 16
#: Rows any parquet table may have whatever its size.
PARQUET_FREE_ROWS = 1_000_000


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


def refuse_parquet_bomb(path, what="Table"):
    """Refuse a parquet file whose footer declares more rows than its size can honestly hold (read before any row).

    At most `PARQUET_FREE_ROWS` + `PARQUET_ROWS_PER_BYTE` rows per byte of the file.
    """
    import os

    import pyarrow.parquet as pq

    try:
        rows = pq.read_metadata(path).num_rows
    except Exception:  # not readable as parquet: the reader says so
        return
    most = PARQUET_FREE_ROWS + PARQUET_ROWS_PER_BYTE * os.path.getsize(path)
    if rows > most:
        raise ValueError(
            f"{what} {str(path)!r} declares {rows:,} rows in {os.path.getsize(path):,} bytes; lbee reads at most "
            f"{PARQUET_FREE_ROWS:,} rows plus {PARQUET_ROWS_PER_BYTE} per byte of the file (a few repeated values "
            "can declare millions of rows). Write the table without run-length tricks, or as CSV."
        )
