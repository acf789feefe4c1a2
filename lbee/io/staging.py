"""Outputs of several files, replaced whole: staged beside their place, then swapped in.

Every lbee command that writes more than one file (a run folder, a report's run
folders, ``lbee embed``'s arrays with their ids and provenance, a generated
sentence set with its ``.conditions.tsv`` and grammar copy) writes through
`staged_entries`, so a reader never sees the old and the new output mixed,
even after a SIGKILL. The steps, each safe to interrupt:

1. **stage**: the new entries are written into ``<home>/.<label>.lbee-staging-<pid>-<tag>/``;
   the output is untouched. Killed here, the output is the old one.
2. **commit**: ``.lbee-complete.json`` (the new entries' names and the old ones
   they replace) is written atomically into the stage: the new output is complete.
3. **swap**: the old entries are moved into ``<home>/.<label>.lbee-replaced-<pid>-<tag>/``,
   then the new ones from the stage into the output folder (renames, no copy).
4. **clean**: the replaced folder, then the stage, are removed.

Steps 2 to 4 run under an exclusive lock on the output folder (`flock`), so two writers into it take turns; one
held by another process for longer than `lbee.io.output_lock.LOCK_PATIENCE_S` is given up, nothing written.

The next writer into the same output (`recover_leftovers`) handles what a
killed writer left, once that writer's process is gone (its pid is in the
name) or, seen under the output's lock, its stage is committed (a live writer
swaps only under that lock; a killed one is briefly still "running"): a stage
without the commit file is deleted (the old output was never
touched); a committed stage has its swap finished, so the output is the complete
new one; a replaced folder without a committed stage (not a state these steps
leave) means an unfinished new output, so the old entries are put back in its
place. Old files are never deleted blindly, and names without a pid (written
before pids were recorded) are left alone.

Test hook: with the environment variable ``LBEE_TEST_KILL_AT`` set to a step
(`KILL_STEPS`), the writer SIGKILLs itself there, so tests interrupt it at
a known point (``staged``: the new output is complete in the stage, not yet
committed; ``swapping``: the old entries are aside and one new entry is in; ``swapping:2``: the second time).
"""

from __future__ import annotations

import errno
import fnmatch
import json
import os
import re
import shutil
import signal
import stat
import uuid
from contextlib import contextmanager
from pathlib import Path

from .._files import process_tag, read_mark_text, tag_alive
from .no_replace import OutputExistsError, check_no_replace, refuse_special_entries  # noqa: F401  (named here too)
from .output_lock import check_pinned, lock_output, pinned, started_identity, unlock_output
from .rollforward import OutputChangedError, recorded, refuse_changed

#: The commit file inside a stage: the new output is complete (JSON: ``new`` and ``old`` entry names).
COMPLETE = ".lbee-complete.json"
#: Made with the stage: a writer whose stage was removed under it (by another host's or container's lbee, which
#: could not tell it was alive) finds it gone at commit and stops, instead of committing the part it re-created.
STARTED = ".lbee-started"
#: A writer's part of a leftover's name: `lbee._files.process_tag` (or an older pid, or pid and start), a 12-hex tag.
OWNER = re.compile(r"\d+(?:\.\d+)?(?:\.[0-9a-f]{8}\.[0-9a-f]{8})?-[0-9a-f]{12}")
#: A stage's own files, never entries of the output.
_OWN = (COMPLETE, STARTED)
#: Where ``LBEE_TEST_KILL_AT`` can stop a writer (see the module docstring).
KILL_STEPS = ("staged", "swapping")


@contextmanager
def staged_entries(folder, *, replaces=(), home=None, label=None, exclusive=False, under_lock=None):
    """Yield an empty stage folder; on success, its entries replace the output's in ``folder`` whole.

    Parameters
    ----------
    folder : path-like
        Where the output's entries go (created when missing).
    replaces : tuple of str, default=()
        Glob patterns of the previous output's entries in ``folder``, moved out
        even when the new output has no entry of that name (a run's old
        ``slicer_domino/``). An entry of the same name as a new one is always replaced.
    home : path-like, optional
        The folder that holds the stage and the replaced entries, on the same
        file system as ``folder`` [default: ``folder``'s parent, so the stage has
        the depth of ``folder`` and relative links written into it stay right].
    label : str, optional
        Names the hidden folders ``.<label>.lbee-staging-*`` [default: ``folder``'s name].
    exclusive : bool, default=False
        Replace nothing: when another writer put an entry this output would replace there meanwhile (two commands
        started at once without ``--overwrite``, sweep 32i), `OutputExistsError` at the commit, under the lock.
    under_lock : callable, optional
        Called with the held output folder (`lbee.io.output_lock.HeldFolder`) once its lock is taken, before the
        commit reads what it replaces (a run in a report's folder finishes that report's part there first,
        `lbee.run.outputs.staged_run_folder`).

    An exception inside the block removes the stage and leaves ``folder`` as it was.
    """
    from .folder_trust import check_trusted_folder

    check_trusted_folder(folder)  # as given, before it is resolved: a link another user owns is theirs (32x B2)
    given, started = folder, started_identity(folder)  # another folder there at the commit is refused
    folder, home, label = _place(folder, home, label)
    recover_leftovers(folder, home=home, label=label)
    owner, stage, aside = _new_stage(home, lambda owner: _names(home, label, owner))
    lock = None
    try:
        yield stage
        _check_started(stage, folder)
        new = sorted(p.name for p in stage.iterdir() if p.name not in _OWN)
        _test_kill("staged")
        from .cache import atomic_write_bytes  # (numpy: imported only by a write)

        check_pinned(given)  # the pinned folder (or the one above it, sweep 32p), before anything is made in it
        folder.mkdir(mode=0o755, parents=True, exist_ok=True)  # a world kept in a run folder: never 0777 (32al BL3)
        # Two writers into one output take turns from here: each sees what the other left and replaces it whole.
        lock = lock_output(folder, expect=started)
        # again under the lock: whoever removes a stage holds it, so the stage stays until the commit (sweep 32h)
        _check_started(stage, folder)
        if under_lock is not None:
            under_lock(lock)
        old = sorted(n for n in lock.names() if n in new or any(fnmatch.fnmatch(n, pat) for pat in replaces))
        if exclusive and old:
            raise OutputExistsError(
                f"{str(folder)!r} now holds {', '.join(old[:3])}{', ...' if len(old) > 3 else ''}, written by another "
                "lbee while this one ran; nothing was replaced. Pass --overwrite to replace it, or give another folder."
            )
        refuse_special_entries(folder, old)  # before anything is moved: a device or a FIFO is never deleted
        mark = {"new": new, "old": old, **recorded(lock, stage, new, old)}  # what a recovery may replace
        atomic_write_bytes(stage / COMPLETE, json.dumps(mark).encode())
    except BaseException:
        _abandon(lock, stage, aside)
        raise
    try:
        _finish(lock, stage, aside, mark)
        _settle_after(lock, home, label, owner, set(new), replaces)
    finally:
        unlock_output(lock)


def _new_stage(home, names):
    """A new writer's ``(owner, stage, aside)``: ``names(owner)`` gives the folders; both are made, the stage marked.

    The folder the old entries go aside into is made first, by this writer alone (``mkdir`` fails on any entry
    there): made only at the swap, a link another user planted under that name, its writer read from the stage's
    visible name, took the old entries wherever it pointed (sweep 32m).
    """
    made_home(home)
    owner = f"{process_tag()}-{uuid.uuid4().hex[:12]}"
    stage, aside = names(owner)
    # this user's alone whatever the umask: under umask 000 (or 002 with a shared group) another user wrote into
    # the stage before the commit, and their files went out as the run's (sweep 32ai B1); what the run writes
    # inside keeps the umask, as its output should
    try:
        aside.mkdir(mode=0o700)
    except FileExistsError:
        raise _taken(aside) from None
    try:
        try:
            stage.mkdir(mode=0o700)
        except FileExistsError:
            raise _taken(stage) from None
        (stage / STARTED).touch()
    except BaseException:
        _abandon(None, stage, aside)
        raise
    return owner, stage, aside


def _taken(path):
    """The error when a staging folder's name is already taken (another process, or user, made it first)."""
    return FileExistsError(
        errno.EEXIST,
        f"{str(path)!r}, the staging folder lbee was making, already exists (another process or user made it first); "
        "nothing was written. Run again, or write where no other user can make folders",
    )


def _abandon(lock, stage, aside):
    """A writer that stops before its commit: its lock released, its stage and aside folder removed."""
    unlock_output(lock)
    shutil.rmtree(stage, ignore_errors=True)
    shutil.rmtree(aside, ignore_errors=True)


def made_home(home):
    """Make ``home`` (a real path: the folder that holds a stage), refused when another user can change it.

    The stage is written by path: another user who can rename its entries could swap it (sweep 32q B7). Checked
    before anything is made, then walked and made through descriptors, each folder checked as it is opened: a folder
    another user made first in the gap (32u B1), or a link they put there and repointed later (32v, 32y, 32z).
    """
    from .folder_trust import SharedFolderError, check_trusted_folder, trusted_real_folder

    check_trusted_folder(home)
    real, _ = trusted_real_folder(home, make=True)  # through descriptors, each folder checked (sweeps 32y, 32z)
    if real != str(home):
        raise SharedFolderError(home, str(home), "a symbolic link put there while lbee made it")


def _check_started(stage, folder):
    """Refuse to commit a stage that was removed while this writer wrote into it (it would commit a part)."""
    if not (stage / STARTED).is_file():  # a link put in its place took the files since (sweep 32u N3): said so
        linked = stage.is_symlink()
        how, why = (
            ("replaced by a link", f"the files written since went to {os.path.realpath(stage)!r}")
            if linked
            else ("removed", "another lbee, on another host or in another container, took it for a killed writer's")
        )
        raise OSError(
            f"The staging folder {str(stage)!r} was {how} while lbee wrote into it ({why}): nothing was replaced "
            f"in {str(folder)!r}. Run the command again"
        )


def _place(folder, home, label):
    """``(folder, home, label)`` with the defaults: the stage beside the folder, named after it.

    The folder is named by its real path, so that every spelling of it (``.``, ``x/..``, a path through a link)
    names the same leftovers: ``--out .`` left a killed writer's stage where no other spelling looked, and a later
    ``--out .`` finished it over a newer run (sweep 32m). An output folder that is a symbolic link has its stage
    beside the folder it points to, on that folder's file system: beside the link, every swap failed with "Invalid
    cross-device link" (sweep 32g).
    """
    check_pinned(folder)  # nothing is made in a pinned folder that is no longer that folder (sweep 32p)
    pin = pinned(folder)  # as the command found it when it began (sweep 32o), else as it is now
    real = Path(pin[0] if pin else os.path.realpath(folder))  # used from here on: a link repointed moves nothing
    if home is None:
        if not real.name:
            raise ValueError(
                f"{str(folder)!r} is the file system's root; lbee writes an output into a folder of its own"
            )
        home, label = real.parent, real.name if label is None else label
    return real, Path(os.path.realpath(home)), label


def recover_leftovers(folder, *, home=None, label=None):
    """Settle what killed writers left for this output (see the module docstring); return the folders handled.

    Only leftovers whose writer process is gone are touched; a live writer's stage is left alone.
    """
    folder, home, label = _place(folder, home, label)
    if not home.is_dir() or os.path.realpath(home) != str(home):  # reached through a link put there since: not ours
        return []
    if not _dead_owners(home, label, committed=_committed(home, label, True)):
        return []
    folder.mkdir(parents=True, exist_ok=True)
    lock = lock_output(folder)  # two writers starting at once settle a dead writer's leftovers one after the other
    try:
        owners = _dead_owners(home, label, committed=_committed(home, label, lock.fd is not None))
        _settle(lock, home, label, owners)
    finally:
        unlock_output(lock)
    return sorted(owners)


def _settle(held, home, label, owners):
    """Settle ``owners``' leftovers into the held output folder (`lbee.io.output_lock.HeldFolder`)."""
    for owner in sorted(owners):
        if not _owned(home, label, owner):  # under the lock now: a part planted meanwhile is never settled
            continue
        stage, aside = _names(home, label, owner)
        mark = _read_mark(stage)
        if mark is not None:  # the new output is complete: finish its swap, over what it left only (sweep 32ay B2)
            refuse_changed(held, stage, aside, mark)
            _finish(held, stage, aside, mark)
        else:
            if aside.is_dir():  # no committed stage: the new output is unfinished, so the old one goes back whole
                for entry in sorted(aside.iterdir()):
                    _move_over(entry, held)  # over an unfinished new entry in the old one's place
                aside.rmdir()
            shutil.rmtree(stage, ignore_errors=True)


def _move_over(entry, held):
    """Move ``entry`` into the held folder under its name, removing what is there first (a file, link or folder)."""
    held.remove(entry.name)
    held.move_in(entry, entry.name)


def _settle_after(held, home, label, owner, written, replaces=()):
    """After this writer's swap, settle what dead writers left for this output, never over what it ``written``.

    A writer killed before its leftovers could be settled (not yet reaped, or stopped and killed while this one
    waited for the lock) had them finished later over this newer output (sweep 32e). Now, under the lock: an entry
    of theirs that this writer also wrote, or that its swap ``replaces`` (a run's ``slicer_domino/``: this writer's
    output replaces a run whole, sweep 32g), is dropped (this one is newer); the others are moved in as their swap
    would have (another writer may write other entries into the same folder: `lbee embed`'s images, then its
    sentences).
    """

    def ours(name):
        return name in written or any(fnmatch.fnmatch(name, pat) for pat in replaces)

    for other in sorted(_dead_owners(home, label, committed=_committed(home, label, held.fd is not None)) - {owner}):
        stage, aside = _names(home, label, other)
        if (mark := _read_mark(stage)) is not None:  # committed: its new entries this writer did not write go in
            try:  # (this writer's output is in: one changed since is said by the next writer, not over its run)
                refuse_changed(held, stage, aside, {**mark, "new": [n for n in mark["new"] if not ours(n)], "old": []})
            except OutputChangedError:
                continue
            for entry in sorted(stage.iterdir()) if stage.is_dir() else ():
                if entry.name in _OWN or ours(entry.name):
                    continue
                _move_over(entry, held)
        elif aside.is_dir():  # not committed: its old entries go back, where this writer wrote none
            for entry in sorted(aside.iterdir()):
                if not ours(entry.name) and not held.has(entry.name):
                    held.move_in(entry, entry.name)
        shutil.rmtree(aside, ignore_errors=True)
        shutil.rmtree(stage, ignore_errors=True)


def _dead_owners(home, label, kinds=("staging", "replaced"), committed=None, uids=None):
    """The writers whose leftovers for this output lie in ``home`` and whose process is gone (no pid: alive).

    ``kinds``: the leftovers' kinds, ``.<label>.lbee-<kind>-<writer>`` (`lbee.io.staged_tree` has its own).
    ``committed``: with the output's lock held, ``committed(writer)`` says whether its stage is committed; such a
    writer counts as gone too, as a live one swaps only under that lock (sweep 32l: a killed writer is briefly
    still "running" after its lock is released, and its swap was finished later, over the newer output).
    ``uids``: the users whose leftovers count (default: this user's alone, the only ones it may settle).
    """
    owners = set()
    try:
        names = [p.name for p in home.iterdir()]
    except PermissionError:  # a folder this user may not list holds no leftover it could settle (sweep 32ah N1:
        return set()  # ~/index.html under a /home of mode 0711 refused every run into ~/a/b)
    for kind in kinds:
        prefix = f".{label}.lbee-{kind}-"
        for name in names:
            owner = name[len(prefix) :]
            # only a name as a writer makes it: another output's (".x.lbee-staging-1" beside "x") is not one (32i)
            if name.startswith(prefix) and OWNER.fullmatch(owner):
                owners.add(owner)
    owners = {o for o in owners if _owned(home, label, o, kinds, uids)}  # before anything in one is read (32ah H1)
    return {o for o in owners if not tag_alive(o.split("-")[0]) or (committed is not None and committed(o))}


def _committed(home, label, locked):
    """``committed`` for `_dead_owners` under the output's lock (None without one: Windows)."""
    return (lambda owner: _read_mark(_names(home, label, owner)[0]) is not None) if locked else None


def _owned(home, label, owner, kinds=("staging", "replaced"), uids=None):
    """Whether every part of a writer's leftovers is a folder of this user's own (or of one of ``uids``).

    Another user's planted half beside a killed writer's real stage was settled with it (sweep 32k); checked again
    under the output's lock, right before they are settled (sweep 32l: planted while the settler waited for it).
    """
    parts = [home / f".{label}.lbee-{kind}-{owner}" for kind in kinds]
    return all(_mine(p, uids) for p in parts if os.path.lexists(p))


def _mine(path, uids=None):
    """Whether a leftover is a folder of this user's: one planted by another user (in /tmp) is never settled (32j)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and (not hasattr(os, "getuid") or st.st_uid in (uids or {os.getuid()}))


def own_folder(path):
    """Make ``path`` unless there; `OSError` unless it is this user's real folder (not a planted link, sweep 32m)."""
    try:
        path.mkdir(mode=0o700)  # this user's alone, as the stage (sweep 32ai B1)
    except FileExistsError:
        pass
    if not _mine(path):
        raise OSError(f"{str(path)!r} is not lbee's own folder; nothing was moved into it. Remove it, then run again")


def _names(home, label, owner):
    return home / f".{label}.lbee-staging-{owner}", home / f".{label}.lbee-replaced-{owner}"


def _finish(held, stage, aside, mark):
    """Steps 3 and 4 (old entries aside, new ones in, clean) through ``held``, the locked output folder. Re-runnable."""
    move_aside(held, stage, aside, mark)
    move_in(held, stage, aside, mark)


def move_aside(held, stage, aside, mark):
    """Step 3's first half: the old entries of ``mark`` that ``held`` still holds go into ``aside``. Re-runnable."""
    new, old = mark["new"], mark["old"]
    for name in old:
        if name in new and not _lexists(stage / name):  # this name's new entry is already in place
            continue
        if held.has(name):
            own_folder(aside)
            held.move_out(name, aside / name)


def move_in(held, stage, aside, mark):
    """Step 3's second half and step 4: the new entries still in ``stage`` go in, then both are removed."""
    new = mark["new"]
    for i, name in enumerate(new):
        if _lexists(stage / name):
            held.move_in(stage / name, name)  # within one file system: no copy, no partial file
            if i == 0:
                _test_kill("swapping")
    shutil.rmtree(aside, ignore_errors=True)
    shutil.rmtree(stage, ignore_errors=True)


def _lexists(path):  # ``path`` is there, a link to nothing included
    return path.exists() or path.is_symlink()


def _read_mark(stage):
    try:
        mark = json.loads(read_mark_text(stage / COMPLETE))
    except (OSError, ValueError):
        return None
    return mark if _entry_names(mark) else None


def _entry_names(mark):  # ``mark`` is a commit's {"new": [...], "old": [...]} of plain entry names (no path)
    return isinstance(mark, dict) and all(
        isinstance(mark.get(k), list)
        and all(isinstance(n, str) and "/" not in n and n not in ("", ".", "..", *_OWN) for n in mark[k])
        for k in ("new", "old")
    )


_REACHED: dict = {}


def _test_kill(step):
    """SIGKILL this process at ``step`` when ``LBEE_TEST_KILL_AT`` names it.

    ``step:N``: the N-th time it is reached (a report's own swap comes after those of its run folders in its stage).
    """
    want, _, nth = os.environ.get("LBEE_TEST_KILL_AT", "").partition(":")
    if want == step:
        _REACHED[step] = _REACHED.get(step, 0) + 1
        if _REACHED[step] == int(nth or 1):
            os.kill(os.getpid(), signal.SIGKILL)
