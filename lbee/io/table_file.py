"""A table file read by pandas: its header checked first, from the path a reader pinned (`lbee._files.pinned`)."""

from __future__ import annotations

from .table_header import check_header, refuse_parquet_bomb, refuse_repeated_columns, refuse_too_many_columns


def read_pinned(src, path, suffix):
    """The table at ``src`` (its header checked first), named ``path`` in messages: (DataFrame, format)."""
    import pandas as pd

    if suffix not in (".parquet", ".pq"):
        check_header(path, "\t" if suffix == ".tsv" else ",", src=src)
    else:
        try:
            import pyarrow.parquet as pq

            names = pq.read_schema(src).names
        except Exception:  # not readable as parquet: the reader below says so
            names = []
        refuse_repeated_columns(names, path)
        refuse_too_many_columns(len(names), path)
        refuse_parquet_bomb(path, src=src)
    try:
        if suffix in (".parquet", ".pq"):
            table, fmt = pd.read_parquet(src), "parquet"
            if any(name is not None for name in table.index.names):  # written with df.to_parquet from an indexed
                # frame: the index ('image') is a column of the file, and one of the table to a reader; an index
                # that repeats a column (set_index('image', drop=False)) is dropped
                for name in (n for n in table.index.names if n is not None and n in table.columns):
                    if list(table.index.get_level_values(name)) != list(table[name]):  # which one holds the ids?
                        raise ValueError(
                            f"its index {name!r} and its column {name!r} differ; expected one of them, or both the same"
                        )
                keep = [name for name in table.index.names if name is not None and name not in table.columns]
                if keep:
                    table = table.reset_index(level=keep)
                if not isinstance(table.index, pd.RangeIndex):  # what is left repeats a column, or has no name
                    table = table.reset_index(drop=True)
        else:
            fmt = "tsv" if suffix == ".tsv" else "csv"
            table = pd.read_csv(src, **csv_options(fmt))
            if not isinstance(table.index, pd.RangeIndex):  # pandas made the first field the index, in silence
                semicolons = fmt == "csv" and len(table.columns) == 1 and ";" in str(table.columns[0])
                raise ValueError(
                    f"every row has {table.index.nlevels} field(s) more than the header's {len(table.columns)}; "
                    "expected one field per column (a header cell missing, or a separator at the ends of rows)"
                    + (
                        "; its header is separated by ';' (a spreadsheet's CSV with decimal commas?): save it with "
                        "',' between fields and '.' in numbers"
                        if semicolons
                        else ""
                    )
                )
    except MemoryError:
        raise ValueError(f"Cannot read table {str(path)!r}: it does not fit in memory.") from None
    except Exception as exc:  # pandas / pyarrow raise many types for a damaged file
        raise ValueError(f"Cannot read table {str(path)!r}: {_in_words(exc, suffix)}") from None
    return table, fmt


def _in_words(exc, suffix):
    """The message pandas gives for a file that is not a table, said as lbee says a table's errors.

    A sentence file given as --predictions read "Error tokenizing data. C error: Expected 2 fields in line 80, saw 3"
    (trial 26): the line, what it holds, and what a table is.
    """
    import re

    said = str(exc) or type(exc).__name__
    found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", said)
    if found is None:
        return said
    expected, line, saw = found.groups()
    sep = "tab" if suffix == ".tsv" else "comma"
    return (
        f"line {line} has {saw} {sep}-separated fields where its header has {expected}; expected a table with one "
        f"field per column on every line (a {sep} inside a cell needs quotes; is this file a table at all?)"
    )


def csv_options(fmt):
    """``pandas.read_csv`` options of every CSV / TSV lbee reads (``fmt``: 'csv' or 'tsv')."""
    # Only an empty cell is missing: pandas' default NA words ("NA", "null", "None", "nan", ...)
    # would silently turn class names and ids into NaN.
    return {"sep": "\t" if fmt == "tsv" else ",", "encoding": "utf-8-sig", "keep_default_na": False, "na_values": [""]}
