"""What a file must be for lbee to read it whole: a regular file (not a FIFO or a device), of a bounded size."""

from __future__ import annotations

import os
import stat
from pathlib import Path


class NotRegularFile(ValueError):
    """A path that exists but is not a regular file where one is read (a folder, a FIFO, a device)."""


def check_regular_file(path, what):
    """Raise `NotRegularFile` when ``path`` exists but is a folder, a FIFO, a socket or a device.

    Read whole, a FIFO would block and a device (``/dev/zero``) never end; a missing path is left to the reader.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        raise NotRegularFile(f"{what} {str(path)!r} is {file_kind(mode)}, not a regular file.")


#: The largest text file lbee reads whole: sentence files, their ``.conditions.tsv``, ``explanation.json``.
MAX_TEXT_BYTES = 1 << 30
#: The largest configuration lbee reads: a grammar, a ``lbee report`` config, a job entry.
MAX_CONFIG_BYTES = 16 << 20


def read_text_file(path, what, *, limit=MAX_TEXT_BYTES, encoding="utf-8-sig"):
    """The text of ``path``, refused unread when it is not a regular file or is over ``limit`` bytes.

    A sparse file can declare gigabytes it never wrote (an 8 GB ``explanation.json`` ended in a MemoryError).

    Raises
    ------
    ValueError
        Naming ``what`` and the file (`NotRegularFile` for a FIFO or device); OSError and UnicodeDecodeError
        as ``read_text`` raises them.
    """
    check_regular_file(path, what)
    size = os.stat(path).st_size
    if size > limit:
        raise ValueError(f"{what} {str(path)!r} is {size:,} bytes; lbee reads one of at most {limit:,} bytes.")
    return Path(path).read_text(encoding=encoding)


def file_kind(mode):
    """What a ``st_mode`` is, in words ('a folder', 'a FIFO', ...), for messages."""
    for test, words in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return words
    return "not a regular file"
