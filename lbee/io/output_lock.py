"""The lock two lbee writers into one output folder take turns by: an exclusive ``flock`` on the folder itself.

`lbee.io.staging` and `lbee.io.staged_tree` put an output in place under it. No lock file is left behind, and a
lock held by another process for longer than `LOCK_PATIENCE_S` is given up with a message (any process that can
read a folder can hold its lock).
"""

from __future__ import annotations

import os

#: How long a writer waits for another process's lock on its output folder before it gives up (seconds). lbee's
#: own writers hold it for a swap, a few renames; any process that can read the folder can hold it for ever (32l).
LOCK_PATIENCE_S = 600.0
#: After this long waiting (seconds), a writer says on stderr what it waits for.
LOCK_NOTICE_S = 3.0


class OutputBusyError(OSError):
    """Another process held an output folder's lock for longer than `LOCK_PATIENCE_S`: nothing was written."""


def lock_output(folder):
    """An exclusive lock on the output folder itself (no lock file is left); None where flock is unavailable.

    Another process holding it is waited for (a writer's swap), with a line on stderr after `LOCK_NOTICE_S`;
    after `LOCK_PATIENCE_S`, `OutputBusyError` (sweep 32l: another user who can read the folder held it, and
    every writer waited with no word, for ever).
    """
    try:
        import fcntl
    except ImportError:  # Windows: writers are not serialised
        return None
    import time

    fd = os.open(folder, os.O_RDONLY)
    try:
        start, said = time.monotonic(), False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                pass
            waited = time.monotonic() - start
            if waited >= LOCK_PATIENCE_S:
                raise OutputBusyError(
                    f"another process has held the lock on {str(folder)!r} for {waited:.0f} s (lbee's writers hold it "
                    "for a few renames), so lbee stopped waiting and wrote nothing into that folder; if no lbee writes "
                    f"there, find the process that holds it (`fuser -v {folder}` or `lsof {folder}`), or give "
                    "another folder"
                )
            if not said and waited >= LOCK_NOTICE_S:
                import logging

                logging.getLogger("lbee").info(
                    f"Waiting for another process's lock on {str(folder)!r} (another lbee putting its output in "
                    f"place, most likely); giving up after {LOCK_PATIENCE_S:.0f} s."
                )
                said = True
            time.sleep(0.05 if waited < 1 else 0.2)  # a swap takes milliseconds: ask often at first
    except BaseException:
        os.close(fd)
        raise


def unlock_output(fd):
    if fd is not None:
        os.close(fd)  # closing the descriptor releases its flock
