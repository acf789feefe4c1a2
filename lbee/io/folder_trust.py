"""Which folders lbee writes in: none where another user could redirect its files while it writes.

lbee writes an output into a stage beside it, by path, and a single file by a temporary name in its folder. A user
who can rename entries in a folder on that path (its owner, or anyone where it is writable by others and not
sticky) can swap the stage, or a folder above it, for a link while lbee works, and receive lbee's files in a folder
of their choosing: root's run replaced a victim's files of the same names (sweep 32q, B7), and a single file could
follow a folder swapped between the last check and the write (B5). No check made during the work closes that
window, so such a folder is refused before the work starts, as OpenSSH's ``StrictModes`` refuses a key file in a
folder others can change.

A folder is trusted when it, and every folder above its real path, is owned by this user or root, and not
writable by other users, unless sticky (``/tmp``: there only an entry's owner can rename it). A folder writable by
its group is trusted when that group is this user's own (a user private group, as with ``umask 002``: no member
but this user, listed or by primary group). Setting `TRUST_ENV` to ``1`` trusts every folder (a folder mounted
into a container as another user's, a shared project folder whose members you trust).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

#: Environment variable that, set to ``1``, trusts folders other users can change (see the module's docstring).
TRUST_ENV = "LBEE_TRUST_SHARED_FOLDERS"

#: How a path reached through more symbolic links than lbee follows (`MAX_LINKS`) is refused.
TOO_MANY_LINKS = "reached through more than"


class SharedFolderError(PermissionError):
    """An output lies in a folder another user can change: refused before any work (`check_trusted_folder`).

    Attributes
    ----------
    folder, why : str
        The folder (or link) on the way, and what makes it another user's to change.
    """

    def __init__(self, path, folder, why, *, sticky_ok=True):
        self.folder, self.why = folder, why
        if why.startswith(TOO_MANY_LINKS):  # a loop of one's own links is no other user's doing (sweep 32aa N3)
            super().__init__(f"lbee will not write to {str(path)!r}: {folder!r} is {why}; give the folder's path")
            return
        sticky = " (or in a sticky one such as /tmp)" if sticky_ok else ""  # not for a database (`check_database_file`)
        super().__init__(
            f"lbee will not write to {str(path)!r}: {folder!r} is {why}, so another user could redirect lbee's "
            f"files into a folder of their choosing while it writes. Write to a folder of your own{sticky}, or, if "
            f"you trust everyone who can change {folder!r} (a folder mounted into a container), set {TRUST_ENV}=1"
        )


def untrusted_folder(path):
    """The first folder on the way to ``path`` that another user can change, with why, or None.

    Every folder the kernel walks through to reach ``path`` (those of the path as typed, and those of each
    symbolic link it follows) and every folder above its real path: a folder swapped anywhere on the way, not only
    on the real path, takes the write elsewhere (sweep 32w: a link of another user's in a sticky folder, repointed
    between two resolutions, took outputs into a victim's folder). A link another user owns is theirs to replace.

    Parameters
    ----------
    path : str or path-like
        A folder lbee will write in (it need not exist yet: its nearest existing folder is checked).

    Returns
    -------
    tuple of (str, str) or None
        ``(folder, why)``, e.g. ``("/tmp/a", "owned by user nobody")``; None when every folder is trusted, on a
        system without user ids, or with `TRUST_ENV` set.
    """
    if not hasattr(os, "geteuid") or os.environ.get(TRUST_ENV) == "1":
        return None
    try:
        folder, _ = trusted_real_folder(path)  # every folder walked through, and every link followed
    except SharedFolderError as exc:
        return exc.folder, exc.why
    except OSError as exc:
        if exc.errno in _NO_WAY:  # no path lbee can write to (a file on the way): its own write says so
            return None
        # anything else fails closed: a folder the walk could not judge is not trusted (sweep 32aa B1 took an
        # unreadable drop folder of another user's as trusted)
        return os.fspath(path), f"a path lbee could not check ({exc.strerror or exc})"
    while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    me = os.geteuid()
    while True:  # and every folder above the real path (those of the current folder, for a relative path)
        try:
            st = os.stat(folder)
        except OSError:  # an unreadable folder above: lbee's own write will fail there and say so
            return None
        why = _why_untrusted(st, me, at=folder)
        if why:
            return folder, why
        above = os.path.dirname(folder)
        if above == folder:
            return None
        folder = above


#: Symbolic links followed at most while resolving a path (the kernel's own limit is 40).
MAX_LINKS = 40

#: Errors of the walk that mean no write can go that way either (a file on the way, a folder lbee may not search).
_NO_WAY = (errno.ENOTDIR, errno.EACCES, errno.ENOENT, errno.ENAMETOOLONG)

#: How the walk opens a folder: for its identity and as the base of the next step, not to list it. ``O_PATH``
#: needs no read permission, as a write in the folder needs none: an ``O_RDONLY`` open failed on another user's
#: drop folder (mode 0733), which then went unjudged (sweep 32aa B1).
_OPEN_FOLDER = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY


def _why_untrusted(st, me, *, sticky_ok=True, at=None):
    """Why a folder of status ``st`` is another user's to change, or None (``sticky_ok``: a sticky one is not).

    ``at`` (its descriptor or path) has its ACL read too: one can grant write to users the mode never shows.
    """
    if st.st_uid not in (me, 0):
        return f"owned by user {_user(st.st_uid)}"
    if sticky_ok and st.st_mode & stat.S_ISVTX:
        return None  # sticky: only an entry's owner (or the folder's, checked above) renames it
    if st.st_mode & stat.S_IWOTH:
        return "writable by every user"
    if st.st_mode & stat.S_IWGRP and not _own_group(st.st_gid, me):
        return f"writable by group {_group(st.st_gid)}"
    if at is not None and st.st_mode & stat.S_IWGRP:  # with an ACL, the group bits are its mask (sweep 32ak B4)
        from .acl import acl_writers

        return acl_writers(at, st.st_gid, me, _own_group)
    return None


def _own_group(gid, me):
    """Whether group ``gid`` is this user's private group: its primary group, with no other member.

    Another member is one the group lists, or a user whose primary group it is (a shared ``users`` group:
    sweep 32u B2 swapped a stage as such a user). Users a directory service does not enumerate are not seen.
    """
    import grp
    import pwd

    try:
        members, name = set(grp.getgrgid(gid).gr_mem), pwd.getpwuid(me).pw_name
    except KeyError:
        return False
    if gid != os.getegid() or not members <= {name}:
        return False
    return not any(u.pw_gid == gid and u.pw_uid != me for u in pwd.getpwall())


def _user(uid):
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _group(gid):
    import grp

    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def check_trusted_folder(path):
    """Raise `SharedFolderError` when lbee would write in or beside ``path`` inside a folder others can change.

    Parameters
    ----------
    path : str or path-like
        The output folder (or the folder holding an output file, or a stage's home).
    """
    found = untrusted_folder(path)
    if found is None:
        return
    raise SharedFolderError(path, *found)


def private_temporary_folder(prefix):
    """A new folder of this user's alone (0700) in TMPDIR, as `tempfile.TemporaryDirectory`; refused where unsafe.

    Its mode keeps the folder's contents to this user, not its name: where another user may rename entries of
    TMPDIR (a folder writable by others and not sticky, or theirs), they can swap lbee's folder for one of theirs
    between lbee's write and its read (sweep 32aq B3: the copy of an open_clip checkpoint, hashed, then loaded by
    its path, was another user's model). So TMPDIR is judged as an output folder is (`untrusted_folder`), and
    refused with `SharedFolderError`, naming TMPDIR, where another user can change it.
    """
    import tempfile

    base = tempfile.gettempdir()
    found = untrusted_folder(base)
    if found is not None:
        exc = SharedFolderError(base, *found)
        exc.args = (f"{exc.args[0]}. (This folder is TMPDIR: point TMPDIR at a folder of your own.)",)
        raise exc
    return tempfile.TemporaryDirectory(prefix=prefix, dir=base)


def check_database_file(path, *, _links=0):
    """Make the folder of an SQLite database ``path`` and refuse a database others could replace or redirect.

    SQLite opens the file, and makes its journal files (``-journal``, ``-wal``, ``-shm``) beside it, by name,
    following links: a link another user planted in a sticky folder took a server's token database into theirs,
    and their own database with their token in (sweep 32ab B2). So the folder must be this user's alone (not
    writable by others, even sticky), and the file, when it exists, a regular file of this user's or root's
    (through this user's own links only), unless `TRUST_ENV` is set.

    Returns
    -------
    str
        The database's real path.
    """
    folder, name = os.path.split(os.fspath(path))  # as typed: `lnk/..` goes where the kernel goes (32ag N2)
    try:
        real, _ = trusted_real_folder(folder or ".", make=True)
    except SharedFolderError as exc:  # no "or in a sticky one such as /tmp": a database is refused there (32af N2)
        raise SharedFolderError(path, exc.folder, exc.why, sticky_ok=False) from None
    if os.environ.get(TRUST_ENV) == "1" or not hasattr(os, "geteuid"):
        return os.path.join(real, name)
    me = os.geteuid()
    if _why_untrusted(os.stat(real), me, sticky_ok=False, at=real):  # the walk judged its owner: here, sticky or not
        why = "a folder other users can write (SQLite makes the database's journal files there by name)"
        raise SharedFolderError(path, real, why, sticky_ok=False)
    target = os.path.join(real, name)
    try:
        link = os.lstat(target)
    except FileNotFoundError:
        return target
    if stat.S_ISLNK(link.st_mode):
        if link.st_uid not in (me, 0):
            raise SharedFolderError(path, target, f"a symbolic link owned by user {_user(link.st_uid)}")
        if _links >= MAX_LINKS:
            raise SharedFolderError(path, target, f"{TOO_MANY_LINKS} {MAX_LINKS} symbolic links in a row (a loop?)")
        target = os.path.join(real, os.readlink(target))  # one's own link: the file it names, judged alike
        return check_database_file(target, _links=_links + 1)
    if link.st_uid not in (me, 0):
        raise SharedFolderError(path, target, f"a database file owned by user {_user(link.st_uid)}")
    for journal in ("", "-journal", "-wal", "-shm"):  # SQLite gives its journal files the database's mode
        try:
            st = os.lstat(target + journal)
        except FileNotFoundError:
            continue
        why = _why_untrusted(st, me, sticky_ok=False, at=target + journal)  # a 0666 one: their token row (32ak B6)
        if journal and stat.S_ISLNK(st.st_mode):  # SQLite opens it by name, through the link (32al N6)
            why = "a symbolic link: SQLite writes where it points; remove it"
        if why:
            said = why if why.startswith("a symbolic link") else f"a database file {why} (chmod 600 it)"
            raise SharedFolderError(path, target + journal, said, sticky_ok=False)
    return target


def make_own_folders(path):
    """Make ``path`` and its missing parents one at a time, each one checked to be this user's real folder.

    ``mkdir(parents=True, exist_ok=True)`` took a link another user put in the gap (in a sticky folder they may
    write) as the folder it made, and the output went where the link pointed (sweep 32y). Returns the folders made,
    the outermost first.
    """
    path = Path(path)
    missing = [p for p in (path, *path.parents) if not os.path.lexists(p)][::-1]
    made = []
    for folder in missing:
        try:
            os.mkdir(folder)
            made.append(folder)
        except FileExistsError:
            pass
        st = os.lstat(folder)
        if (
            stat.S_ISLNK(st.st_mode)
            or not stat.S_ISDIR(st.st_mode)
            or (hasattr(os, "geteuid") and st.st_uid != os.geteuid())
        ):
            raise SharedFolderError(path, str(folder), "made by another user, or as a link, while lbee made it")
    return made


def trusted_real_folder(path, *, make=False):
    """Walk to ``path`` through directory descriptors, checking each folder as it is opened: ``(real path, identity)``.

    Never a link is followed that was not checked (``O_NOFOLLOW`` on each step; a link of this user's or root's is
    read and walked, one of another user's refused), every folder walked through is checked when opened (not by
    path, later), and with ``make`` each missing folder is made through its parent's descriptor and checked to be
    this user's. The real path is the kernel's name of the folder opened. Path checks made one after another left
    gaps in which another user, in a sticky folder the rule trusts, planted and removed a link (sweeps 32y, 32z).

    Returns
    -------
    (str, tuple of int or None)
        The real path and ``(st_dev, st_ino)``; without ``make``, a path whose end does not exist yet gives the real
        path of what exists joined with the rest, and None.

    Raises
    ------
    SharedFolderError
        A folder or link on the way that another user can change.
    """
    trust = os.environ.get(TRUST_ENV) == "1"
    if not (hasattr(os, "O_NOFOLLOW") and hasattr(os, "geteuid") and os.path.isdir("/proc/self/fd")):
        if make:
            make_own_folders(path)
        real = os.path.realpath(path)
        st = os.stat(real) if os.path.isdir(real) else None
        return real, None if st is None else (st.st_dev, st.st_ino)
    me, text = os.geteuid(), os.fspath(path)
    todo = [(c, False) for c in text.split("/") if c not in ("", ".")][::-1]  # (name, named by a link's target)
    stack = [os.open("/" if os.path.isabs(text) else ".", _OPEN_FOLDER)]
    made = []
    try:
        if not trust and not os.path.isabs(text):  # the folders above the current one too: a relative path passed
            _judge_above(stack[0], text, me)  # inside another user's folder where its absolute spelling did not
        return _walk(text, todo, stack, made, make, trust, me)  # (sweep 32af B1: the cache written into theirs)
    except SharedFolderError as exc:
        if exc.folder not in made:
            raise
        for folder in reversed(made):  # refused as this walk made it: not left behind (empty folders only)
            try:
                os.rmdir(folder)
            except OSError:
                break
        mask = _umask()
        umask = "" if mask is None else f" {mask:03o}"
        why = (
            f"{exc.why} (lbee made it just now, as this process's umask{umask} makes folders: set a umask such as 022)"
        )
        raise SharedFolderError(text, exc.folder, why) from None
    finally:
        for fd in stack:
            os.close(fd)


def _judge_above(fd, text, me):
    """`SharedFolderError` for the first folder above the one of descriptor ``fd`` that another user can change."""
    gone = FileNotFoundError(  # said as such, not as a bare "[Errno 2]" (sweep 32ag N1)
        errno.ENOENT,
        f"the current folder no longer exists (deleted or moved), so {text!r} leads nowhere; cd to a folder and run "
        "again",
    )
    if os.fstat(fd).st_nlink == 0:  # deleted: its ".." may still open, and a folder made in it fails bare
        raise gone
    closed = PermissionError(  # not "--out 'w' is not a writable folder: Permission denied" of a folder it can write
        errno.EACCES,
        f"a folder above the current one cannot be opened (permission denied), so who else can change {text!r} "
        "cannot be checked; cd to a folder whose parents you can open, and run again",
    )
    try:
        here = os.open("..", _OPEN_FOLDER, dir_fd=fd)
    except FileNotFoundError:
        raise gone from None
    except PermissionError:
        raise closed from None
    try:
        while True:
            st = os.fstat(here)
            why = _why_untrusted(st, me, at=here)
            if why:
                raise SharedFolderError(text, _fd_path(here), why)
            try:
                up = os.open("..", _OPEN_FOLDER, dir_fd=here)
            except PermissionError:
                raise closed from None
            if (os.fstat(up).st_dev, os.fstat(up).st_ino) == (st.st_dev, st.st_ino):  # "/": its own parent
                os.close(up)
                return
            os.close(here)
            here = up
    finally:
        os.close(here)


def _umask():
    """The umask of this process (Linux's ``/proc/self/status``), or None."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _walk(text, todo, stack, made, make, trust, me):
    """`trusted_real_folder`'s walk, on its open descriptors ``stack``; each folder it makes appended to ``made``."""
    flags, hops = _OPEN_FOLDER | os.O_NOFOLLOW, 0
    while todo:
        part, linked = todo.pop()
        here = stack[-1]
        if not trust:  # every folder the kernel walks through, a folder left by ".." too: its ".." entry is
            # where another user who can move it points it (sweep 32ab B1: `--out ../../x` from a folder in
            # theirs, which they moved into a sticky folder during the run, took the output there)
            why = _why_untrusted(os.fstat(here), me, at=here)
            if why:
                raise SharedFolderError(text, _fd_path(here), why)
        if part == "..":
            if len(stack) > 1:
                os.close(stack.pop())
            else:  # above the start: ".." of the start folder, opened afresh
                up = os.open("..", _OPEN_FOLDER, dir_fd=stack[-1])
                os.close(stack.pop())
                stack.append(up)
            continue
        try:
            stack.append(os.open(part, flags, dir_fd=here))
        except FileNotFoundError:
            if not make:
                return os.path.join(_fd_path(here), part, *(c for c, _ in todo[::-1])), None
            if linked:  # a link to nothing: never made, as mkdir -p never makes one's target
                raise FileExistsError(17, f"{text!r} is a symbolic link to nothing ({part!r} is missing)") from None
            try:  # made through its parent's descriptor, then opened as any folder on the way: checked
                os.mkdir(part, dir_fd=here)
                made.append(os.path.join(_fd_path(here), part))
            except FileExistsError:  # another user's entry, made in the gap: judged as it is opened
                pass
            todo.append((part, False))
            continue
        except OSError:  # ELOOP (a link) or ENOTDIR: what is there, said or walked
            st = os.lstat(part, dir_fd=here)
            if not stat.S_ISLNK(st.st_mode):
                raise
            if st.st_uid not in (me, 0) and not trust:
                where = os.path.join(_fd_path(here), part)
                why = f"a symbolic link owned by user {_user(st.st_uid)}"
                raise SharedFolderError(text, where, why) from None
            hops += 1
            if hops > MAX_LINKS:
                why = f"{TOO_MANY_LINKS} {MAX_LINKS} symbolic links in a row (a loop?)"
                raise SharedFolderError(text, os.path.join(_fd_path(here), part), why) from None
            target = os.readlink(part, dir_fd=here)
            todo.extend([(c, True) for c in target.split("/") if c not in ("", ".")][::-1])
            if os.path.isabs(target):  # the walk starts again at /, as the kernel's: a ".." past it stays at /
                while stack:  # (one "/" pushed on the stack let "r/../tmp" climb back to r's folder: 32aa B3)
                    os.close(stack.pop())
                stack.append(os.open("/", _OPEN_FOLDER))
    st = os.fstat(stack[-1])
    why = None if trust else _why_untrusted(st, me, at=stack[-1])
    if why:
        raise SharedFolderError(text, _fd_path(stack[-1]), why)
    return _fd_path(stack[-1]), (st.st_dev, st.st_ino)


def _fd_path(fd):
    return os.readlink(f"/proc/self/fd/{fd}")
