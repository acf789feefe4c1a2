"""The one confinement rule for paths: a request's paths and the paths its files name.

``lbee serve`` reads files only inside its data root (``--root``). A request's
own path fields are checked by `lbee.service.paths`; the paths that a
*file* names (a ``.conditions.tsv`` sidecar's ``# grammar:`` line, a manifest's
image rows) are resolved by `resolve_named_path`, which checks them
against the same root with the same rule (`confine`) whenever one is
active (`confined_to`). On the command line no root is active: a user's
own files may name any file the user can read.

A path refused here is never opened, so an error can quote nothing of it.
"""

from __future__ import annotations

import os
import stat
from contextlib import contextmanager
from pathlib import Path, PurePosixPath, PureWindowsPath

# what a file must be to be read at all is below the grammar layer, which reads grammar files (lbee._files); the
# active data root lives there too, so that every reader checks it when it opens a file
from .._files import (  # noqa: F401  (re-exported: io's readers name them from here)
    MAX_CONFIG_BYTES,
    MAX_TEXT_BYTES,
    ROOT,
    NotRegularFile,
    PathEscape,
    check_regular_file,
    file_kind,
    pinned,
    read_bytes_file,
    read_text_file,
    real_path,
)


def inside(path, root):
    """Whether ``path`` (already absolute) lies inside ``root``."""
    try:
        Path(path).relative_to(root)
        return True
    except ValueError:
        return False


def confine(value, root, key):
    """``value`` (a path string) resolved inside ``root``: the resolved Path.

    Relative paths are read from the root; an absolute path must lie inside it;
    ``..`` and ``~`` are refused; the path is resolved (symbolic links
    followed) and checked again, so a link inside the root that points out is
    refused.

    Raises
    ------
    PathEscape
        Naming ``key`` and the path as given, never anything read from it.
    """
    if not isinstance(value, str) or not value or "\x00" in value:
        raise PathEscape(f"`{key}` must be a non-empty path string inside the data root; received {value!r}.")
    parts = set(PurePosixPath(value).parts) | set(PureWindowsPath(value).parts)
    if ".." in parts or value.startswith("~"):
        raise PathEscape(f"`{key}` {value!r}: '..' and '~' are not allowed; give a path inside the data root.")
    given, root = os.path.abspath(root), Path(root).resolve()
    p = Path(value)
    # an absolute path may be written as the root was given, through its link (sweep 32c): resolved, checked below
    if p.is_absolute() and not (inside(os.path.abspath(p), root) or inside(os.path.abspath(p), given)):
        raise PathEscape(f"`{key}` {value!r} is outside the data root; give a path relative to the root.")
    resolved = Path(real_path(p if p.is_absolute() else root / p, f"`{key}` {value!r}"))
    if not inside(resolved, root):
        raise PathEscape(f"`{key}` {value!r} leads outside the data root (through a symbolic link).")
    return resolved


def data_root():
    """The active data root, or None (no confinement: the command line)."""
    return ROOT[0]


@contextmanager
def confined_to(root, *readable):
    """Within the block, every path a file names must lie inside ``root`` (None: no confinement).

    Every file a reader opens (`check_regular_file`) must then lie inside ``root``, one of the ``readable``
    folders (a job's output folder, the cache) or lbee's own files (built-in sentence sets and grammars), resolved
    when it is opened: a file swapped for a link out after the job's paths were checked is refused.
    """
    before = list(ROOT)
    if root is None:
        ROOT[:] = [None, ()]
    else:
        ROOT[:] = [Path(root).resolve(), tuple(Path(p).resolve() for p in (*readable, *_own_folders()) if p)]
    try:
        yield ROOT[0]
    finally:
        ROOT[:] = before


def _own_folders():
    """The folders of lbee's own data: the package (its weights), the built-in sentence sets and grammars."""
    from ..grammar import builtin_grammar_dir  # the built-in sentence sets live beside the grammars

    return (Path(__file__).resolve().parents[1], builtin_grammar_dir())


def resolve_named_path(ref, base, *, key, source, fix=""):
    """The path a file names: ``ref`` read relative to the file's folder ``base``.

    Under an active data root it must lie inside the root (`confine`);
    otherwise any path is accepted.

    Parameters
    ----------
    ref : str
        The path as the file writes it.
    base : path-like
        The folder of the file that names it.
    key : str
        What names the path, for the error (e.g. "its '# grammar:' line").
    source : str
        The naming file, for the error.
    fix : str, optional
        How to put it right, said after the error.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    PathEscape
        Under a data root, for a path that leads out of it (the file is not opened).
    """
    path = Path(ref) if Path(ref).is_absolute() else Path(base) / ref
    root = data_root()
    if root is None:
        return path
    if str(ref).startswith("~"):  # not a link: lbee never expands '~' (sweep 32c read "through a symbolic link")
        raise PathEscape(f"{source}: {key} names {ref!r}; '~' is not expanded: name a file inside the data root.")
    rel = os.path.relpath(os.path.abspath(path), root) if inside(os.path.abspath(path), root) else None
    if rel is None:
        raise PathEscape(
            f"{source}: {key} names {ref!r}, outside the data root; a file may only name files inside it{fix}."
        )
    try:
        return confine(rel, root, key)
    except PathEscape:
        raise PathEscape(
            f"{source}: {key} names {ref!r}, which leads outside the data root (through a symbolic link)."
        ) from None


def sidecar(path, *, of, what, beside=None):
    """A sidecar of an input: a file the input names implicitly, by sitting beside it under a derived name.

    ``ids.txt`` / ``<stem>.ids.txt`` and ``<stem>.provenance.json`` beside embeddings, ``<stem>.conditions.tsv``
    beside a sentence file. Every reader of a sidecar goes through here, so that one rule holds: under an
    active data root (`confined_to`) the sidecar must lie inside it, symbolic links followed, as
    every other path does (`confine`); a sidecar that exists must be a regular file. Nothing is
    opened here (``stat`` only), so a FIFO cannot block and a refused file is never read.

    Parameters
    ----------
    path : path-like
        Where the sidecar would be.
    of : str
        The input it belongs to, as messages name it (``image_embeddings 'ds/x.npy'``).
    what : str
        What the sidecar is, for messages (``row ids file``).
    beside : path-like, optional
        The input itself: its sidecar must then be its owner's (or this user's), and no more writable by other
        users than the input is. Another user's ``.provenance.json`` planted beside bare embeddings in ``/tmp`` was
        taken as their record, its τ used without a word (sweep 32ao R3).

    Returns
    -------
    pathlib.Path or None
        ``path`` when a regular file is there; None when nothing is (a dangling link inside the root included).

    Raises
    ------
    PathEscape
        Under a data root, a sidecar that leads outside it (named by its own name, never by where it leads).
    NotRegularFile
        A sidecar that is a folder, a FIFO, a socket or a device.
    """
    path = Path(path)
    try:
        if not os.path.lexists(path):
            return None
        root = data_root()
        if root is not None and not inside(real_path(path, f"{of}: its {what}"), root):
            raise PathEscape(
                f"{of}: its {what} {path.name!r} leads outside the data root (through a symbolic link); "
                "a file beside an input is read only inside the root."
            )
        mode = os.stat(path).st_mode
    except FileNotFoundError:  # a dangling link inside the root: nothing there
        return None
    except OSError as exc:
        raise ValueError(f"{of}: its {what} {path.name!r} cannot be used: {exc.strerror}.") from None
    if not stat.S_ISREG(mode):
        raise NotRegularFile(
            f"{of}: its {what} {str(path)!r} is {file_kind(mode)}, not a regular file; remove it, or replace it "
            "with the file lbee wrote."
        )
    why = None if beside is None else _foreign_sidecar(path, beside)
    if why:
        raise ValueError(
            f"{of}: its {what} {str(path)!r} {why}, so lbee does not take it for the input's own record. Remove it, "
            "or keep the input and the files beside it in a folder only their owner can write."
        )
    return path


def _foreign_sidecar(path, beside):
    """Why the sidecar ``path`` may be another user's word on the input ``beside``, or None."""
    if not hasattr(os, "geteuid"):
        return None
    from .folder_trust import _user

    try:
        link, st, of = os.lstat(path), os.stat(path), os.stat(beside)
    except OSError:
        return None
    if stat.S_ISLNK(link.st_mode) and link.st_uid not in (of.st_uid, os.geteuid()):
        # where the link leads is the link's owner's choice (sweep 32ap B1: nobody's link to tester's own record)
        return f"is a symbolic link of user {_user(link.st_uid)} and the input belongs to user {_user(of.st_uid)}"
    if st.st_uid not in (of.st_uid, os.geteuid()):
        return f"belongs to user {_user(st.st_uid)} and the input to user {_user(of.st_uid)}"
    if st.st_mode & 0o022 & ~of.st_mode:
        return "can be changed by other users who cannot change the input"
    return None
