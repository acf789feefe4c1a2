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
#: Cells (rows × columns) a parquet table may declare: this many, plus so many per byte of the file. 1,000,000
#: rows × 200 constant columns in 1.6 MB took 3.7 GB; a real table of probabilities holds under a cell per byte.
PARQUET_FREE_CELLS = 64_000_000
PARQUET_CELLS_PER_BYTE = 4
#: Uncompressed bytes a parquet table may declare per byte of its file, beyond `PARQUET_FREE_BYTES`.
PARQUET_BYTES_PER_BYTE = 64
PARQUET_FREE_BYTES = 256 << 20
#: What a decimal cell takes once read: a Python ``Decimal`` object (a constant ``decimal128`` column of 1,000,000
#: rows is a few bytes on disk; 30 of them took 4 GB in pandas).
DECIMAL_CELL_BYTES = 104


def refuse_repeated_columns(columns, path):
    seen = {}
    for pos, col in enumerate(columns, 1):
        if col in seen:
            raise ValueError(
                f"Table {str(path)!r} repeats the column {col!r} (columns {seen[col]} and {pos} of the "
                "header); expected each column once (lbee would not know which one to read)."
            )
        seen[col] = pos


def check_header(path, sep, *, src=None):
    """Refuse a text table that is UTF-16 (Excel's "Unicode text"), or whose header names a column twice.

    ``src`` is where to read it (a pinned descriptor, `lbee._files.pinned`), ``path`` how messages name it.
    """
    import csv

    src = path if src is None else src
    try:
        with open(src, "rb") as fh:  # UTF-16's marks (UTF-32 LE's begins with UTF-16 LE's); pandas says "0xff"
            if fh.read(2) in (b"\xff\xfe", b"\xfe\xff"):
                raise ValueError(f"Cannot read table {str(path)!r}: it is UTF-16 or UTF-32; save it as UTF-8.")
        with open(src, newline="", encoding="utf-8-sig") as fh:
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


def _decoded_text_bytes(src):
    """The bytes a parquet's text, binary and decimal columns take once decoded, counted without decoding them.

    A dictionary-encoded column's footer counts its dictionary once (a 500 KB value on 12,000 rows: a 37 KB file
    whose footer says 12 MB, 6 GB decoded). Its values' lengths are taken from the dictionary and summed over the
    rows' indices; a fixed-size binary column counts its width on every row, a decimal one `DECIMAL_CELL_BYTES`.

    Raises
    ------
    ValueError
        A nested column (a list, a struct, a map): no table lbee reads has one.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(src)
        rows = pq.read_metadata(src).num_rows
    except Exception:  # not readable as parquet: the reader says so
        return 0
    total = 0
    plain = (
        pa.types.is_integer,
        pa.types.is_floating,
        pa.types.is_boolean,
        pa.types.is_decimal,
        pa.types.is_temporal,
        pa.types.is_null,
        pa.types.is_dictionary,  # read as a category: its values are never repeated in memory
        pa.types.is_string,
        pa.types.is_large_string,
        pa.types.is_binary,
        pa.types.is_large_binary,
    )
    for f in schema:
        if pa.types.is_fixed_size_binary(f.type):  # its width on every row, however few bytes the file holds
            total += f.type.byte_width * rows
        elif pa.types.is_decimal(f.type):  # an object per row
            total += DECIMAL_CELL_BYTES * rows
        elif not any(test(f.type) for test in plain):  # lists, structs, maps, views: what lbee never counted
            raise ValueError(
                f"column {f.name!r} holds {f.type}; lbee reads tables of plain values (text, numbers, booleans)."
            )

    def texty(t):
        return (
            pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t)
        )

    # a dictionary of text counts too: an id column becomes text on every row once read
    text = [f.name for f in schema if texty(f.type) or (pa.types.is_dictionary(f.type) and texty(f.type.value_type))]
    if not text:
        return total
    try:
        pf = pq.ParquetFile(src, read_dictionary=text)
        for i in range(pf.num_row_groups):
            for column in pf.read_row_group(i, columns=text).columns:
                for chunk in column.chunks:
                    if pa.types.is_dictionary(chunk.type):
                        lengths = pc.binary_length(chunk.dictionary)
                        total += int(pc.sum(pc.take(lengths, chunk.indices)).as_py() or 0)
                    else:
                        total += chunk.nbytes
    except Exception:  # not readable as parquet: the reader says so
        return total
    return total


def refuse_parquet_bomb(path, what="Table", *, src=None):
    """Refuse a parquet file whose footer declares more than its size can honestly hold (read before any row).

    At most `PARQUET_FREE_ROWS` + `PARQUET_ROWS_PER_BYTE` rows per byte of the file, and at most
    `PARQUET_FREE_BYTES` + `PARQUET_BYTES_PER_BYTE` uncompressed bytes per byte (1,500 rows of 1 MB compressible
    ids in 88 KB took more than 4 GB). ``src``: where to read it; ``path``: how messages name it.
    """
    import os

    import pyarrow.parquet as pq

    src = path if src is None else src
    try:
        meta = pq.read_metadata(src)
        rows = meta.num_rows
        unpacked = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    except Exception:  # not readable as parquet: the reader says so
        return
    size = os.path.getsize(src)
    if unpacked > PARQUET_FREE_BYTES + PARQUET_BYTES_PER_BYTE * size:
        raise ValueError(
            f"{what} {str(path)!r} unpacks to {unpacked:,} bytes from {size:,}; lbee reads at most "
            f"{PARQUET_FREE_BYTES >> 20} MiB plus {PARQUET_BYTES_PER_BYTE} bytes per byte of the file (compressed "
            "repeats can declare gigabytes). Write the table with its values as they are, or as CSV."
        )
    try:
        decoded = _decoded_text_bytes(src) if unpacked else 0
    except ValueError as exc:  # a nested column
        raise ValueError(f"{what} {str(path)!r}: {exc}") from None
    if decoded > PARQUET_FREE_BYTES + PARQUET_BYTES_PER_BYTE * size:
        raise ValueError(
            f"{what} {str(path)!r} decodes to {decoded:,} bytes of text, binary and decimal values from {size:,}; "
            f"lbee reads at most {PARQUET_FREE_BYTES >> 20} MiB plus {PARQUET_BYTES_PER_BYTE} bytes per byte of the "
            "file (a long value stored once in a dictionary and repeated on every row can declare gigabytes). Write "
            "the table as CSV."
        )
    cells = rows * max(1, meta.num_columns)
    if cells > PARQUET_FREE_CELLS + PARQUET_CELLS_PER_BYTE * size:
        raise ValueError(
            f"{what} {str(path)!r} declares {rows:,} rows × {meta.num_columns:,} columns in {size:,} bytes; lbee "
            f"reads at most {PARQUET_FREE_CELLS:,} cells plus {PARQUET_CELLS_PER_BYTE} per byte of the file (constant "
            "columns can declare billions of cells). Write the table without run-length tricks, or as CSV."
        )
    most = PARQUET_FREE_ROWS + PARQUET_ROWS_PER_BYTE * size
    if rows > most:
        raise ValueError(
            f"{what} {str(path)!r} declares {rows:,} rows in {size:,} bytes; lbee reads at most "
            f"{PARQUET_FREE_ROWS:,} rows plus {PARQUET_ROWS_PER_BYTE} per byte of the file (a few repeated values "
            "can declare millions of rows). Write the table without run-length tricks, or as CSV."
        )
