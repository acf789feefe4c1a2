"""An output of several folders replaced whole: a batch report's index and every run folder, swapped in together.

``lbee report`` killed between two datasets left one run of the new config beside one of the old, under the old
``index.html`` (sweep 32g). The report is now written into one stage beside its output folder,
``.<root>.lbee-report-staging-<writer>/``, with the run folders at their paths inside it (`staged_tree`). Then, as
for a single output (`lbee.io.staging`), under the output folder's lock:

1. **commit**: ``.lbee-complete.json`` lists, per folder of the report (each run folder, the dataset folders above
   them, the output folder itself), the new entries and the old ones they replace, with what each name held
   (`lbee.io.rollforward`: a killed report's swap is finished only over what it left there);
2. **swap**: every folder's old entries are moved aside into ``.<root>.lbee-report-replaced-<writer>/`` (the
   index first), then every folder's new ones in (the index last): an index is never beside another report's runs;
3. **clean**: the replaced entries, then the stage, are removed.

Only what the report writes is replaced: a run folder's run entries (``replaces``: `lbee.run.outputs.RUN_ENTRIES`)
and the entries the new report has (a dataset's SpotCheck world, ``index.html``). What else the folders hold (a note, an
input, another config's model, what another report writes meanwhile) stays, and a run folder whose run failed
keeps its previous run (sweep 32h). A report killed before its commit leaves the old report; one killed during the
swap is finished by the next report into that folder, once its writer is gone.
"""

from __future__ import annotations

import errno
import fnmatch
import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path

from .folder_trust import TRUST_ENV, SharedFolderError, _why_untrusted
from .output_lock import check_pinned, lock_output, started_identity, unlock_output
from .own_store import make_own
from .rollforward import entry_identity, refuse_changed
from .staging import (
    COMPLETE,
    STARTED,
    _abandon,
    _check_started,
    _entry_names,
    _lexists,
    _new_stage,
    _owned,
    _place,
    move_aside,
    move_in,
    own_folder,
    read_mark_text,
    refuse_special_entries,
)

_OWN = (COMPLETE, STARTED)


@contextmanager
def staged_tree(root, run_folders, *, replaces=(), exclusive=False):
    """Yield the output's stage; on success its run folders and other entries replace those in ``root`` together.

    Parameters
    ----------
    root : path-like
        The output folder (a report's).
    run_folders : list of path-like
        The run folders written, inside ``root`` (a dataset's folder, or its model sub-folders).
    replaces : tuple of str, default=()
        Glob patterns of a run folder's entries that its new run replaces even when it has none of that name
        (a run's old ``slicer_domino/``); an entry of the same name as a new one is always replaced.
    exclusive : bool, default=False
        Replace no report: when another writer put an index or a run there meanwhile (two reports started at once
        without ``--overwrite``), `lbee.io.staging.OutputExistsError` at the commit, under the lock.

    Yields
    ------
    pathlib.Path
        The stage: write each run folder at its path relative to ``root``, and ``root``'s own new entries.
    """
    from .folder_trust import check_trusted_folder

    check_trusted_folder(root)  # as given, before it is resolved: a link another user owns is theirs (sweep 32x B2)
    started = started_identity(root)  # the folder this report writes into: another one there at the commit is refused
    given, (root, home, label) = Path(root), _place(root, None, None)
    runs = [Path(f).relative_to(given) for f in run_folders]  # named from root as given; root is now its real path
    recover_tree(root, replaces)
    _, stage, aside = _new_stage(home, lambda owner: _names(home, label, owner))
    lock = None
    try:
        yield stage
        _check_started(stage, root)
        folders = _folders(runs)
        root.mkdir(parents=True, exist_ok=True)
        lock = lock_output(root, expect=started)  # two reports (or a report and a run) into one folder take turns
        check_pinned(given)  # and a pinned folder above it (sweep 32p)
        _check_started(stage, root)
        if exclusive:
            _refuse_a_report_there(root, runs, replaces)
        mark = {}
        for rel in folders:
            new = _new_entries(stage / rel, rel, folders)
            if not new:  # a run that failed (or a dataset that did): the folder keeps what it has
                continue
            live = root / rel
            check_real_folder(root, rel)
            is_run = rel in runs
            old = sorted(
                p.name
                for p in (live.iterdir() if live.is_dir() else ())
                if p.name in new or (is_run and any(fnmatch.fnmatch(p.name, pat) for pat in replaces))
            )
            refuse_special_entries(live, old)  # before anything is moved: a FIFO or a device is never deleted
            mark[rel.as_posix()] = {"new": new, "old": old, "run": is_run, **_recorded(live, stage / rel, new, old)}
        from .cache import atomic_write_bytes

        atomic_write_bytes(stage / COMPLETE, json.dumps({"folders": mark}).encode())
    except BaseException:
        _abandon(lock, stage, aside)
        raise
    try:
        _swap(lock, stage, aside, mark, replaces)
    except OSError as exc:  # a full disk mid-swap: the commit stands, and the next report finishes it (sweep 32i)
        raise OSError(
            f"The new report in {str(root)!r} is complete and committed, but putting it in place stopped part-way "
            f"({str(exc.strerror or exc).rstrip('.')}). The next `lbee report` into that folder finishes putting "
            "it in place" + (", once some space is freed" if exc.errno == errno.ENOSPC else "")
        ) from None
    finally:
        unlock_output(lock)


def _refuse_a_report_there(root, runs, replaces):
    """`OutputExistsError` when ``root`` holds an index or one of ``runs`` holds a run (written meanwhile)."""
    from .staging import OutputExistsError

    found = ["index.html"] if (root / "index.html").exists() else []
    for rel in runs:
        live = root / rel
        if live.is_dir():
            found += [
                f"{rel.as_posix()}/{p.name}"
                for p in live.iterdir()
                if any(fnmatch.fnmatch(p.name, x) for x in replaces)
            ]
    if found:
        raise OutputExistsError(
            f"{str(root)!r} now holds a report ({', '.join(found[:3])}{', ...' if len(found) > 3 else ''}), written by "
            "another lbee while this one ran; nothing was replaced. Pass --overwrite to replace it, or give another "
            "folder."
        )


def check_real_folder(root, rel):
    """Refuse a folder of the report (``root / rel`` or one above it, inside ``root``) that is not a real folder.

    A file named like a dataset's folder was replaced by it, and a run folder that was a symbolic link was written
    through the link, outside the report's stage (sweep 32h): refused, before the work and at the commit.
    """
    path = Path(root)
    for part in Path(rel).parts:
        path = path / part
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            what = "a symbolic link" if path.is_symlink() else "not a folder"
            raise ValueError(
                f"{str(path)!r} is {what}, where the report writes a folder of its runs; lbee replaces only its own "
                "folders. Move it away, or give another output folder."
            )
        if path.is_dir() and hasattr(os, "geteuid") and os.environ.get(TRUST_ENV) != "1":
            # a run folder another user can write: a report's swap moved its files in beside theirs (sweep 32ak B3)
            why = _why_untrusted(os.stat(path), os.geteuid(), at=str(path))
            if why:
                raise SharedFolderError(str(path), str(path), why)


def recover_tree(root, replaces=()):
    """Settle what a killed `staged_tree` writer left beside ``root`` (its writer gone); return the writers handled.

    ``replaces``: the run folders' entries its swap replaces (`staged_tree`'s), never read from the leftover.
    """
    root, home, label = _place(root, None, None)
    if not home.is_dir():
        return []
    if not _dead_owners(home, label, locked=True):
        return []
    root.mkdir(parents=True, exist_ok=True)
    lock = lock_output(root)
    try:
        owners = _dead_owners(home, label, locked=lock.fd is not None)
        for owner in sorted(owners):
            if not _owned(home, label, owner, _KINDS):  # under the lock now: a part planted meanwhile (sweep 32l)
                continue
            stage, aside = _names(home, label, owner)
            mark = _read_mark(stage)
            if mark is not None:  # committed: the new report is complete, its swap is finished
                _swap(lock, stage, aside, mark, replaces)
            else:  # the swap starts only after the commit: the old report was never touched
                shutil.rmtree(stage, ignore_errors=True)
                shutil.rmtree(aside, ignore_errors=True)
    finally:
        unlock_output(lock)
    return sorted(owners)


def finish_part(root, folder, held, replaces=()):
    """Finish, in run folder ``folder`` alone, the swap of a killed report into ``root`` whose commit includes it.

    Called by a run into that folder under the folder's lock, before its own commit replaces the run whole (sweep
    32k: a report that died while the run waited for the lock was later finished over the newer run). The rest of
    the report is left to `recover_tree`; the part finished here is not done again. ``held``: the run folder,
    locked (`lbee.io.output_lock.HeldFolder`): its moves go through it.
    """
    root, home, label = _place(root, None, None)
    if not home.is_dir():
        return
    rel = Path(folder).resolve().relative_to(root.resolve()).as_posix()
    # a committed part is finished whether its writer looks alive or not: a live report swaps it only under this
    # folder's lock, held here, and skips it once finished (sweep 32l: one killed was briefly still "running")
    for owner in sorted(_dead_owners(home, label, locked=True)):  # this user's own, checked under the lock held
        stage, aside = _names(home, label, owner)
        mark = _read_mark(stage) or {}
        entry = mark.get(rel)
        if entry is not None and _staged_part(stage, rel):
            _index_aside(root, stage, aside, mark, replaces)
            _finish_folder(held, stage, aside, rel, entry, replaces)


def _index_aside(root, stage, aside, mark, replaces):
    """The report's own old entries (its index) moved aside, as its swap does first, unless they are already.

    A run into one of its folders finished that folder's part while a report killed after its commit still had
    its old index in place: killed then too, it left the old index over the new report's run (sweep 32af B2).
    Under the output folder's lock, taken without waiting: a report holding it is putting its own index aside
    this moment (`OutputBusyError`: run again).
    """
    dot = mark.get(".")
    if dot is None:
        return
    new = set(dot["new"])
    if not any(_lexists(root / n) and (n not in new or _lexists(stage / n)) for n in dot["old"]):
        return  # aside already (or never there)
    held_root = lock_output(root, wait=False)
    try:
        _finish_folder(held_root, stage, aside, ".", dot, replaces, moving_in=False)
    finally:
        unlock_output(held_root)


def _swap(held_root, stage, aside, mark, replaces=()):
    """Steps 2 and 3 in two passes: old entries aside (the index first), then new ones in (the index last).

    Safe to run again after a kill. Folder by folder in one pass, a kill left the old ``index.html`` over a new run
    folder (sweep 32ae B1); in two, an index is only ever beside the runs of its own report: the old one before any
    run is replaced, none while the runs go in, the new one after. Each folder's moves hold that folder's lock too,
    so that a run written into it by itself (`lbee describe --out` a report's run folder) takes turns with the
    report; what it replaces is read then, under the lock: the folder's entries of the new names or of the run's
    (sweep 32i: a run that came in between stayed half).
    """
    root = Path(held_root.path)
    deepest_first = sorted(mark, key=lambda r: (-len(Path(r).parts), r))
    for rel in deepest_first:  # no folder changed since the commit, before any is touched (as lbee.io.staging's)
        if rel == "." or (_staged_part(stage, rel) and _lexists(root / rel)):  # a folder not made yet holds nothing
            lock = held_root if rel == "." else lock_output(rel, below=held_root)
            try:
                refuse_changed(
                    lock, stage / rel, aside / rel, {**mark[rel], "old": _old_now(lock, mark[rel], replaces)}
                )
            finally:
                if lock is not held_root:
                    unlock_output(lock)
    for moving_in, order in ((False, deepest_first[::-1]), (True, deepest_first)):
        for rel in order:
            if rel != "." and not _staged_part(stage, rel):  # its part was finished (its stage is gone): never again,
                continue  # over a run that came in since (sweep 32k)
            make_own(root, *Path(rel).parts)  # never writable by others, whatever the umask (sweep 32ak B3)
            # the output folder's own lock is held already; a run folder's is opened from it, no step a link (32n)
            lock = held_root if rel == "." else lock_output(rel, below=held_root)
            try:
                if rel != "." and not _staged_part(stage, rel):  # again under the folder's lock: a run into it may
                    continue  # have finished this part while this waited (sweep 32l)
                _finish_folder(lock, stage, aside, rel, mark[rel], replaces, moving_in)
            finally:
                if lock is not held_root:
                    unlock_output(lock)
    shutil.rmtree(aside, ignore_errors=True)
    shutil.rmtree(stage, ignore_errors=True)


def _finish_folder(held, stage, aside, rel, entry, replaces, moving_in=None):
    """One folder's swap (`lbee.io.staging._finish`), replacing what the folder holds now.

    That is the new names and, in a run folder, the entries of the caller's ``replaces`` (never patterns read from
    the file, sweep 32j). ``held``: that folder, locked (`lbee.io.output_lock.HeldFolder`). ``moving_in``: False
    moves the old entries aside only, True the new ones in only (then cleans), None both.
    """
    if moving_in is not True:
        old = _old_now(held, entry, replaces)
        refuse_changed(held, stage / rel, aside / rel, {**entry, "old": old})  # a run's finish_part too (32ay)
        for above in reversed(Path(rel).parents):  # the folders above this one's aside: this user's own (sweep 32m)
            own_folder(aside / above)
        move_aside(held, stage / rel, aside / rel, {"new": entry["new"], "old": old})
    if moving_in is not False:
        move_in(held, stage / rel, aside / rel, {"new": entry["new"], "old": []})


def _old_now(held, entry, replaces):
    """What a folder's swap replaces now: its recorded old entries and, in a run folder, the run's entries there.

    One of the run's entries made since the commit is not in its record, so `refuse_changed` refuses it: a user's
    ``sweep.csv`` put in a run folder after the report was killed was deleted by the next report.
    """
    patterns = replaces if entry.get("run") is True else ()
    return sorted({*entry["old"], *(n for n in held.names() if any(fnmatch.fnmatch(n, x) for x in patterns))})


def _recorded(live, staged, new, old):
    """`lbee.io.rollforward.recorded` for one folder of the report: what its names hold at the commit."""

    def identity(path, moved=False):
        try:
            return entry_identity(os.lstat(path), path, moved=moved)
        except FileNotFoundError:
            return None

    return {"was": {n: identity(live / n) for n in old}, "made": {n: identity(staged / n, True) for n in new}}


def _staged_part(stage, rel):
    """Whether folder ``rel`` of the stage is there as lbee made it: a real folder, no step of it a link.

    A link in a leftover stage (one's own) was followed at the recovery, and the files it led to moved into the run
    folder (sweep 32ai N2).
    """
    path = Path(stage)
    for part in Path(rel).parts:
        path = path / part
        if path.is_symlink():
            return False
    return path.is_dir()


def _dead_owners(home, label, locked=False):
    """The writers of the reports whose leftovers lie beside this output and whose process is gone.

    ``locked``: the output's lock is held, so a committed report counts as gone too (it swaps only under it).
    """
    from .staging import _dead_owners as dead

    committed = (lambda owner: _read_mark(_names(home, label, owner)[0]) is not None) if locked else None
    return dead(home, label, kinds=_KINDS, committed=committed)


#: The kinds of a report's leftovers (`lbee.io.staging._dead_owners`).
_KINDS = ("report-staging", "report-replaced")


def _folders(runs):
    """Every folder of the report: the run folders, the folders above them, and the output folder (``.``)."""
    out = {Path(".")}
    for r in runs:
        out.add(r)
        out.update(p for p in r.parents)
    return sorted(out, key=lambda p: (len(p.parts), p.as_posix()))


def _new_entries(staged, rel, folders):
    """What the stage holds for folder ``rel``: its entries, less the report's folders below it and staging's own."""
    if not staged.is_dir():
        return []
    skip = {*_OWN, *(f.name for f in folders if f != rel and f.parent == rel)}
    return sorted(p.name for p in staged.iterdir() if p.name not in skip and ".lbee-" not in p.name)


def _names(home, label, owner):
    return home / f".{label}.lbee-report-staging-{owner}", home / f".{label}.lbee-report-replaced-{owner}"


def _read_mark(stage):
    """The commit's ``folders`` (``{folder: {"new": [...], "old": [...]}}``), or None when absent or not lbee's."""
    try:
        mark = json.loads(read_mark_text(stage / COMPLETE)).get("folders")  # a FIFO or a link never read (32ah H1)
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(mark, dict):
        return None
    for rel, entry in mark.items():
        parts = Path(rel).parts
        if Path(rel).is_absolute() or ".." in parts or not _entry_names(entry):
            return None
    return mark


def link_worlds(root, stage, names):
    """Link each run folder's kept SpotCheck world (``<name>/ec``) into the stage, for a rerun to reuse it.

    A world another user can change is not linked: the run generates it again (sweep 32al BL3, 32am AM1).
    """
    from .own_store import foreign_in_tree

    for name in names:
        world = root / name / "ec"
        if (world / "ec.json").is_file() and not world.is_symlink() and not (root / name).is_symlink():
            if not foreign_in_tree(world):
                link_tree(world, stage / name / "ec")


def drop_unreported(stage, names, reported):
    """Take out of the stage the folder of each of ``names`` that no report went into (``reported``: folders).

    A run that failed keeps what it has: its stage folder held only the world linked in (or generated) for it, and
    was committed over the pages of the run before (sweep 32am AM1).
    """
    done, top = {Path(r).resolve() for r in reported}, Path(stage).resolve()
    for name in names:
        folder = (top / name).resolve()
        if name not in ("", ".") and folder != top and not any(folder in (d, *d.parents) for d in done):
            shutil.rmtree(folder, ignore_errors=True)


def link_tree(src, dst):
    """``dst`` as a copy of folder ``src`` made of hard links (a copy of a file where the file system has none)."""
    shutil.copytree(src, dst, symlinks=True, copy_function=_link_file)


def _link_file(src, dst):
    """A hard link of ``src`` at ``dst`` (a copy of a regular file where the file system has none)."""
    import stat

    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:
        if not stat.S_ISREG(os.lstat(src).st_mode):  # a FIFO or a device is never opened (it could block)
            raise
        shutil.copy2(src, dst)
