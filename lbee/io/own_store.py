"""lbee's own stores inside a checked folder: the embedding cache, its thumbnails and Vega bundle, a bench's records.

What lbee reads back from them as its own work must be what it wrote: every folder below the checked base, and
each file, this user's and writable by no other user. The base alone was checked; a cache made under ``umask 000``
had folders every user could write, a cache in a sticky folder (``--cache-dir /tmp``) had entries another user made
first, and lbee read their embeddings and inlined their script (sweep 32ak B1, B2, B8). So lbee makes these stores
for this user alone whatever the umask (folders 0755, files 0644, less what the umask takes), and passes over, with
one warning, anything else.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

#: The modes lbee's own stores are made with (the umask may take more, never add).
FOLDER_MODE, FILE_MODE = 0o755, 0o644

_SAID: set = set()


def _me():
    return os.geteuid() if hasattr(os, "geteuid") else None


def why_not_own(st, at, *, folder):
    """Why an entry of status ``st`` (``at``: its path or descriptor) is not lbee's own to use, or None.

    A link, another kind of entry, another user's (root's is trusted), or one another user can write (mode or ACL).
    """
    from .folder_trust import _why_untrusted

    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link"
    if not (stat.S_ISDIR(st.st_mode) if folder else stat.S_ISREG(st.st_mode)):
        return "not a folder" if folder else "not a regular file"
    me = _me()
    if me is None:
        return None
    return _why_untrusted(st, me, sticky_ok=False, at=at)


def _say(path, why):
    if str(path) not in _SAID:  # once: each run did the work again, and nothing told why (sweep 32ae)
        _SAID.add(str(path))
        logging.getLogger("lbee").warning(
            "The cache holds %r, %s, where lbee keeps a folder of its own: nothing is read from it or written "
            "through it, so this work is done again next time. Remove it to cache there again.",
            str(path),
            why,
        )


def foreign_inside(folder, *parts):
    """Whether a folder below ``folder`` (``parts``, in order) is not lbee's own: then nothing is read or written there.

    A missing folder is not (lbee makes it, `make_own`). A folder of this user's that another user can write (an
    earlier lbee made it under a looser umask) is not either: closed again and trusted, the files another user had
    renamed among their names while it was open were read as their own (sweep 32al BL4). Said once per folder, with
    what to do (remove it).
    """
    path = Path(folder)
    for part in parts:
        path = path / part
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            _say(path, f"which lbee could not check ({exc.strerror or exc})")
            return True
        why = why_not_own(st, str(path), folder=True)
        if why:  # its own folder too: while it was open, another user could rename its files among their names
            _say(path, why)
            return True
    return False


def make_own(folder, *parts):
    """Make the folders ``parts`` below ``folder`` (mode `FOLDER_MODE` less the umask); the last one's path."""
    path = Path(folder)
    for part in parts:
        path = path / part
        try:
            os.mkdir(path, FOLDER_MODE)
        except FileExistsError:
            pass
    return path


def own_file(path):
    """Whether ``path`` is a regular file of this user's that no other user can write (else it is not read)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return why_not_own(st, os.fspath(path), folder=False) is None


def tighten_tree(folder):
    """Take group and other write off every folder and file of this user's below ``folder`` (links not followed).

    For a store written in a stage of lbee's own, before it goes in place: a file or folder made under a loose
    umask is then lbee's alone, as `make_own` makes them.
    """
    me = _me()
    for top, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            path = os.path.join(top, name)
            st = os.lstat(path)
            if not stat.S_ISLNK(st.st_mode) and st.st_uid == me and st.st_mode & 0o022:
                os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o022)


def foreign_in_tree(folder):
    """Why some folder or file at or below ``folder`` is not lbee's own (`why_not_own`), or None: ``path: why``."""
    root = os.path.normpath(os.fspath(folder))
    why = why_not_own(os.lstat(root), root, folder=True)
    if why:
        return f"{root}: {why}"
    for top, dirs, files in os.walk(root):  # each entry below once, as an entry of its folder
        for name, is_folder in [*((d, True) for d in dirs), *((f, False) for f in files)]:
            path = os.path.join(top, name)
            why = why_not_own(os.lstat(path), path, folder=is_folder)
            if why:
                return f"{path}: {why}"
    return None
