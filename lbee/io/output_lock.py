"""The lock two lbee writers into one output folder take turns by: an exclusive ``flock`` on the folder itself.

`lbee.io.staging` and `lbee.io.staged_tree` put an output in place under it. No lock file is left behind, and a
lock held by another process for longer than `LOCK_PATIENCE_S` is given up with a message (any process that can
read a folder can hold its lock).

The lock is taken on the folder opened once (`HeldFolder`), never through a link in its last step, and checked to
be the folder the writer started with; every listing and move of the swap goes through that open folder. A
folder renamed away and replaced by a link while lbee ran (by another user who owned it in ``/tmp``, or a "latest"
link repointed) took the swap wherever the link pointed (sweep 32n).

Which folder that is was settled when the command checked its output, at its start (`pin_output`), not when the
write began after the work (sweep 32o).
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


#: Output folders pinned when a command checked them: given path (absolute) -> (real path, identity, by the CLI).
_PINS: dict = {}
#: Pins kept at most (a command pins a few; a server's workers one per job).
MAX_PINS = 256


def pin_output(path, *, command=False):
    """Record ``path``'s real folder now, so that the write at the end goes there or nowhere (`pinned`).

    A command resolved its output only when it began writing, after the work: another user who owned the folder
    in ``/tmp`` swapped it for a link meanwhile and the output went into the victim's folder (sweep 32o). The
    pin made when a command checks its output (``command``: by the CLI, at its start) stands until the command
    ends (`clear_pins`); one made by the run layer's own check is renewed at each check.
    """
    from .folder_trust import check_trusted_folder

    check_trusted_folder(path)  # a folder another user can change: no pin can keep the write there (sweep 32q)
    key = os.path.abspath(path)
    if key in _PINS and _PINS[key][2]:
        return
    if len(_PINS) >= MAX_PINS:  # a long-lived process (lbee serve's workers): the run layer's are forgotten
        for old in [k for k, pin in _PINS.items() if not pin[2]]:
            del _PINS[old]
    from .folder_trust import trusted_real_folder

    # walked through descriptors, each folder checked as opened: the path resolved twice left a gap (sweep 32z)
    real, identity = trusted_real_folder(path)
    _PINS[key] = (real, identity, command)


def _pin_of(path):
    """``(key, pin)`` of ``path`` or of the nearest folder above it that is pinned, or None."""
    key = os.path.abspath(path)
    while key not in _PINS:
        above = os.path.dirname(key)
        if above == key:
            return None
        key = above
    return key, _PINS[key]


def pinned(path):
    """``(real path, identity)`` pinned for ``path`` (`pin_output`), or None.

    A folder inside a pinned one (``--worlds W``'s ``W/ec_0001``, sweep 32p) is found inside the pinned real path,
    its identity unknown (None).
    """
    found = _pin_of(path)
    if found is None:
        return None
    key, (real, identity, _) = found
    inner = os.path.relpath(os.path.abspath(path), key)
    return (real, identity) if inner == "." else (os.path.join(real, inner), None)


def started_identity(path):
    """The identity of the folder ``path`` names, as pinned (`pin_output`) or, unpinned, as it is now."""
    pin = pinned(path)
    if pin is not None and pin[1] is not None:
        return pin[1]
    return folder_identity(os.path.realpath(path))


def pinned_file(path):
    """``path`` (a file) in the real folder pinned for its folder, or as given when none is pinned.

    A file written by the path as typed went where a link in it pointed at the end, not at the start (sweep 32q).
    """
    pin = pinned(os.path.dirname(os.path.abspath(path)))
    return path if pin is None else type(path)(os.path.join(pin[0], os.path.basename(path)))


def check_pinned(path):
    """`OutputReplacedError` when the folder pinned for ``path`` (or above it, `pinned`) is no longer that folder."""
    found = _pin_of(path)
    if found is None or found[1][1] is None:
        return
    key, (real, identity, _) = found
    # the pinned real folder itself, reached through no link (a link to it repointed meanwhile changes nothing)
    if os.path.realpath(real) != real or folder_identity(real) != identity:
        raise OutputReplacedError(
            f"{key!r} is no longer the folder this command started with (it was renamed, or replaced by a link, "
            "while lbee ran); nothing was written there. Check that folder, then run again"
        )


def clear_pins():
    """Forget every pin (a CLI command's start and end)."""
    _PINS.clear()


class OutputReplacedError(OSError):
    """The output folder is no longer the one the writer started with (renamed, or replaced by a link)."""


def folder_identity(folder):
    """``(st_dev, st_ino)`` of a real folder (not a link to one), or None when there is none there."""
    import stat

    try:
        st = os.lstat(folder)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


class HeldFolder:
    """An output folder opened once and locked: its entries listed and moved through that open folder.

    ``fd`` is None where there is no ``flock`` (Windows: paths are used, and writers are not serialised).
    """

    def __init__(self, path, fd):
        self.path, self.fd = path, fd

    def _at(self, name):
        return name if self.fd is not None else os.path.join(self.path, name)

    def names(self):
        """The folder's entries' names."""
        return os.listdir(self.fd if self.fd is not None else self.path)

    def has(self, name):
        try:
            os.stat(self._at(name), dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def identity(self, name):
        """Entry ``name``'s identity (`lbee.io.rollforward.entry_identity`), or None when there is none."""
        from .rollforward import entry_identity

        try:
            return entry_identity(
                os.stat(self._at(name), dir_fd=self.fd, follow_symlinks=False), self._at(name), self.fd
            )
        except FileNotFoundError:
            return None

    def is_folder(self, name):
        import stat

        try:
            return stat.S_ISDIR(os.stat(self._at(name), dir_fd=self.fd, follow_symlinks=False).st_mode)
        except FileNotFoundError:
            return False

    def move_out(self, name, target):
        """Move entry ``name`` out of the folder, to the path ``target``."""
        os.rename(self._at(name), target, src_dir_fd=self.fd)

    def move_in(self, source, name):
        """Move the path ``source`` into the folder as ``name`` (over an empty folder or a file of that name)."""
        os.rename(source, self._at(name), dst_dir_fd=self.fd)

    def remove(self, name):
        """Remove entry ``name`` (a folder with what it holds, a file or a link)."""
        import shutil

        if self.is_folder(name):
            if self.fd is not None:
                shutil.rmtree(name, dir_fd=self.fd)
            else:
                shutil.rmtree(self._at(name))
        elif self.has(name):
            os.unlink(self._at(name), dir_fd=self.fd)


def lock_output(folder, *, expect=None, below=None, wait=True):
    """An exclusive lock on the output folder itself (no lock file is left): a `HeldFolder`.

    Another process holding it is waited for (a writer's swap), with a line on stderr after `LOCK_NOTICE_S`;
    after `LOCK_PATIENCE_S`, `OutputBusyError` (sweep 32l: another user who can read the folder held it, and
    every writer waited with no word, for ever).

    Parameters
    ----------
    folder : path-like
        The folder (its real path: a link in its last step is refused, `OutputReplacedError`).
    expect : tuple of int, optional
        Its `folder_identity` when the writer started: another folder there now is `OutputReplacedError`.
    below : HeldFolder, optional
        ``folder`` is a relative path inside this held folder, opened from it step by step, none a link.
    wait : bool, default=True
        False: `OutputBusyError` at once when another process holds it.
    """
    try:
        import fcntl
    except ImportError:  # Windows: writers are not serialised
        return HeldFolder(os.fspath(folder) if below is None else os.path.join(below.path, folder), None)
    import time

    fd = _open_folder(folder, below)
    try:
        owner = os.fstat(fd).st_uid
        if hasattr(os, "geteuid") and owner not in (os.geteuid(), 0):  # made by another user while lbee ran (32x)
            from .folder_trust import SharedFolderError, _user

            raise SharedFolderError(folder, str(folder), f"owned by user {_user(owner)} (made by them while lbee ran?)")
        if expect is not None and (os.fstat(fd).st_dev, os.fstat(fd).st_ino) != tuple(expect):
            raise OutputReplacedError(
                f"{str(folder)!r} is no longer the folder lbee started writing into (it was renamed, or replaced "
                "by a link, while lbee ran); nothing was written there. Check that folder, then run again"
            )
        start, said = time.monotonic(), False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return HeldFolder(os.fspath(folder) if below is None else os.path.join(below.path, folder), fd)
            except BlockingIOError:
                if not wait:
                    raise OutputBusyError(
                        f"another process holds the lock on {str(folder)!r} (another lbee putting its output in "
                        "place, most likely); nothing was written. Run again in a moment"
                    ) from None
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


def _open_folder(folder, below):
    """A descriptor of ``folder`` (inside ``below``'s, step by step), never through a link in a step opened."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        if below is None:
            return os.open(folder, flags)
        fd = os.dup(below.fd)
        for part in os.fspath(folder).split(os.sep):
            if part in ("", "."):
                continue
            try:
                nxt = os.open(part, flags, dir_fd=fd)
            finally:
                os.close(fd)
            fd = nxt
        return fd
    except OSError as exc:
        import errno

        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise OutputReplacedError(
                f"{str(folder)!r} is a link (or not a folder) where lbee writes a folder; nothing was written there. "
                "Check who put it there (another user may have), then give a folder of your own"
            ) from None
        raise


def unlock_output(held):
    """Release a `lock_output` lock (None: nothing to release)."""
    fd = getattr(held, "fd", held)
    if fd is not None:
        os.close(fd)  # closing the descriptor releases its flock
