"""What a killed writer's leftovers mean: its swap finished only over what it left, and no reader of its output.

A writer killed in its swap leaves a committed stage; the next writer into the same output finishes that swap
(`lbee.io.staging.recover_leftovers`). If the output was changed in between, say removed and made again with a
file of the user's own, finishing the swap moved that file aside and deleted it with the replaced entries.
The commit therefore records what each of its names held (`recorded`): the old entry it replaces,
and its own new entry (a rename keeps the inode). An entry there that is neither is refused (`refuse_changed`):
nothing is moved, and the message says where the killed writer's entries are kept. A reader of an output that
holds such leftovers refuses it (`refuse_interrupted`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def entry_identity(st, path=None, dir_fd=None, *, moved=False):
    """What names an entry (from its ``lstat``): device, inode, a file's mtime and ctime, a folder's contents.

    A folder's own mtime changes when a rename moves it into another folder (its ``..``), so it is left out; what
    it holds is named instead (`contents`, when its ``path`` is given, relative to ``dir_fd``): a folder emptied
    and filled again, or removed and made again on the same inode, is another. A file's mtime, kept
    by a rename, tells a file made since on a reused inode number; its ctime, which no user sets, a file edited in
    place with its mtime put back (``touch -r``). A rename changes a file's ctime, and removing a hard link the
    ctimes in a folder (a report's world linked into a new run): ``moved`` (a new entry, moved in later) leaves them
    out, and `same` compares the identity now with a record that has none on that part alone.
    """
    folder = stat.S_ISDIR(st.st_mode)
    kept = [st.st_dev, st.st_ino, None if folder else st.st_mtime_ns]
    if folder:
        return kept + contents(path, dir_fd)[: 1 if moved else 2] if path is not None else kept
    return kept if moved else kept + [st.st_ctime_ns]


def contents(path, dir_fd=None):
    """Two digests of every entry below folder ``path``: without and with each file's ctime, a list.

    Each digests an entry's path inside, inode, and a file's size and mtime. Links are not followed; an entry
    that cannot be read is left out (the same both times). The ctime, which no user sets, tells a file edited in
    place with its size and mtime put back (``touch -r``); moving the folder changes none below it, but removing a
    hard link to a file does (a new folder's record keeps the first digest alone). The walk keeps no stack of open
    folders and no recursion: a tree 1,200 folders deep stopped a run with a bare RecursionError.
    """
    import hashlib

    digest, changed = hashlib.sha256(), hashlib.sha256()
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        top = os.open(path, flags, dir_fd=dir_fd)
    except OSError:
        return ["", ""]
    try:
        todo = ["."]
        while todo:
            inside = todo.pop()
            try:
                fd = os.open(inside, flags, dir_fd=top)
                try:
                    entries = [(n, os.stat(n, dir_fd=fd, follow_symlinks=False)) for n in sorted(os.listdir(fd))]
                finally:
                    os.close(fd)
            except OSError:
                continue
            for name, st in entries:
                folder = stat.S_ISDIR(st.st_mode)
                size = "" if folder else f"{st.st_size}:{st.st_mtime_ns}"
                line = f"{inside}/{name}\0{st.st_ino}\0{size}".encode("utf-8", "surrogateescape")
                digest.update(line + b"\n")
                changed.update(line + (b"\n" if folder else f":{st.st_ctime_ns}\n".encode()))
                if folder:
                    todo.append(f"{inside}/{name}")
    finally:
        os.close(top)
    return [digest.hexdigest(), changed.hexdigest()]


def same(now, then):
    """Whether identity ``now`` is the recorded ``then`` (a record written before folders' contents: its part)."""
    return now is not None and then is not None and list(now[: len(then)]) == list(then)


def recorded(held, stage, new, old):
    """The commit's record of what its names hold: ``{"was": {old name: identity}, "made": {new name: identity}}``.

    ``held``: the locked output folder (`lbee.io.output_lock.HeldFolder`); ``stage``: the folder of the new entries.
    """
    return {
        "was": {name: held.identity(name) for name in old},
        "made": {name: entry_identity(os.lstat(stage / name), stage / name, moved=True) for name in new},
    }


class OutputChangedError(OSError):
    """The output of a killed writer changed after it was killed: its swap is not finished over it."""


def refuse_changed(held, stage, aside, mark):
    """Raise `OutputChangedError` when an entry of ``mark``'s names is neither the old one it recorded nor its own.

    A commit written before the record (no ``was`` / ``made``) is finished as before.
    """
    was, made = mark.get("was"), mark.get("made")
    if not isinstance(was, dict) or not isinstance(made, dict):
        return
    changed = []
    for name in sorted(set(mark["new"]) | set(mark["old"])):
        now = held.identity(name)
        if now is None or same(now, was.get(name)):
            continue  # nothing there, or the entry the killed writer meant to replace
        if same(now, made.get(name)) and not os.path.lexists(stage / name):
            continue  # its own new entry, moved in before it was killed
        changed.append(name)
    if changed:
        shown = ", ".join(changed[:3]) + (", ..." if len(changed) > 3 else "")
        raise OutputChangedError(
            f"{str(held.path)!r} was changed ({shown}) after an lbee command writing it was killed; nothing more of "
            f"that command's was put in place. Its new files not moved in before it was killed are kept in "
            f"{str(stage)!r}, those it replaced in {str(aside)!r}: take out what you need, remove both folders, then "
            "run again"
        )


def refuse_interrupted(path, name):
    """Refuse to read ``path`` while its folder holds the leftovers of a killed lbee writer of that folder.

    Killed between the renames of its swap, ``lbee embed --overwrite`` left new embeddings beside old, or no, ids;
    ``lbee describe`` read them, mispaired. The next writer of the folder settles the leftovers
    (`lbee.io.staging.recover_leftovers`); a reader says so and reads nothing.
    """
    real = Path(os.path.realpath(Path(path).parent))
    try:  # the folder owner's leftovers count too: a reader is seldom the writer (sweep 32ap B3: a service job
        uids = {os.getuid(), os.stat(real).st_uid}  # read another user's half-swapped folder)
    except (OSError, AttributeError):
        uids = None
    from .staged_tree import _KINDS as REPORT_KINDS
    from .staging import _dead_owners

    if real.name and _dead_owners(real.parent, real.name, uids=uids):
        raise ValueError(
            f"{name} {str(path)!r}: its folder was being rewritten by an lbee command that was killed (its hidden "
            f"leftovers .{real.name}.lbee-* lie beside it), so its files may be half old, half new. Run that command "
            "again (`lbee embed ... --out` settles the folder first), then this one."
        )
    # a report's run folder lies two folders below the report's output, and its leftovers beside that (sweep 32bb N1:
    # `lbee evaluate` scored a run of a killed `lbee report` half swapped, and wrote its metrics into it)
    for top in [real, *list(real.parents)[:2]]:
        if top.name and _dead_owners(top.parent, top.name, kinds=REPORT_KINDS, uids=uids):
            raise ValueError(
                f"{name} {str(path)!r}: it lies in the output of an `lbee report` that was killed while putting its "
                f"runs in place (its hidden leftovers .{top.name}.lbee-report-* lie beside {str(top)!r}), so its "
                "files may be half old, half new. Run that report again (it settles its output first), then this one."
            )
