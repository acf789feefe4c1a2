"""What an output may replace: the checks a writer makes before any work (`check_no_replace`) and before a swap.

lbee never replaces a file in silence (``--overwrite`` asks for it), never its own input, and never an entry that
is not a file or folder it writes (a device, a FIFO, a socket). `lbee.io.staging` puts the output in place.
"""

from __future__ import annotations

import os
from pathlib import Path


class OutputExistsError(ValueError):
    """An output would replace existing files (or the command's own input) and that was not asked for."""


def check_no_replace(paths, *, overwrite=False, option="--out", inputs=(), how="--overwrite"):
    """Refuse to write ``paths`` when one exists (unless ``overwrite``) or is one of ``inputs`` (always).

    Call it before any long work. Raises `OutputExistsError` naming the
    file and the option.

    Parameters
    ----------
    paths : iterable of path-like
        The files (or folders) the command would write.
    overwrite : bool, default=False
        Whether the user asked to replace existing outputs (``--overwrite``).
    option : str or None, default='--out'
        The option that named the output, for the message; None when the output is the command's default
        (the user named no option).
    inputs : iterable of path-like, default=()
        The files the command reads (a grammar, a class list): never replaced, even with ``overwrite``.
    how : str, default='--overwrite'
        How the caller asks to replace outputs (``overwrite=True`` from Python).
    """
    import stat

    from .._files import file_kind

    named = f"{option}: " if option else ""
    inputs = [Path(p) for p in inputs if p is not None and Path(p).exists()]
    for path in map(Path, paths):
        if not path.parent.exists():  # 'a/../x' with no 'a': the writer makes 'a', then its file lands on 'x'
            path = Path(os.path.realpath(path.parent)) / path.name
        if not (path.exists() or path.is_symlink()):
            continue
        mode = path.stat().st_mode if path.exists() else None
        if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # /dev/null was replaced (sweep 26)
            raise OutputExistsError(
                f"{named}{str(path)!r} is {file_kind(mode)}; an output is a file or folder lbee writes, and this one "
                f"is never replaced, even with {how}. Give another name."
            )
        for src in inputs:
            if path.exists() and os.path.samefile(path, src):
                raise OutputExistsError(
                    f"{named}{str(path)!r} is the input file {str(src)!r} of this command; "
                    f"an output never replaces its own input, even with {how}. Give another name."
                )
        if not overwrite:
            raise OutputExistsError(
                f"{named}{str(path)!r} already exists; lbee does not replace files in silence. "
                f"Pass {how} to replace it, or give another name."
            )
        owner = _sticky_owner(path)
        if owner is not None:  # said before the work, not as "Operation not permitted" at the swap (sweep 32ab N4)
            raise OutputExistsError(
                f"{named}{str(path)!r} belongs to user {owner} in a sticky folder, where only they may replace it, "
                f"even with {how}. Give another name."
            )


def _sticky_owner(path):
    """The name of the user an entry belongs to when this user may not replace it (a sticky folder), else None."""
    import pwd
    import stat

    if not hasattr(os, "geteuid") or os.geteuid() == 0:
        return None
    try:
        entry, folder = os.lstat(path), os.stat(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return None
    me = os.geteuid()
    if entry.st_uid == me or not folder.st_mode & stat.S_ISVTX or folder.st_uid == me:
        return None
    try:
        return pwd.getpwuid(entry.st_uid).pw_name
    except KeyError:
        return str(entry.st_uid)


def refuse_special_entries(folder, names, *, how="--overwrite"):
    """Refuse to replace ``folder``'s entries ``names`` when one (or a file under one) is a device, FIFO or socket.

    Replacing moves an entry aside and deletes it (sweep 27: a run's report.md made a FIFO, an index.html made a
    device node, were deleted by --overwrite). A symbolic link is replaced as a link, never followed.
    """
    import stat

    from .._files import file_kind

    todo = [Path(folder) / n for n in names]
    while todo:  # every entry, as the swap would delete every one (a cap let a FIFO past 100,000 files: sweep 28)
        path = todo.pop()
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode):
            todo.extend(path.iterdir())
        elif not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            raise OutputExistsError(
                f"{str(path)!r} is {file_kind(mode)}; lbee replaces only the files and folders it writes, and never "
                f"this one, even with {how}. Move it away, or give another folder."
            )
