"""Output folders of a run: never replaced or mixed in silence.

The ``--overwrite`` rule, for every command that writes a run into ``--out``:

- a folder that already holds a run (any of `RUN_ENTRIES`) is refused,
  before any work, unless ``overwrite=True``;
- a run is written into a staging folder beside ``--out`` and moved in whole
  when it is complete (`lbee.io.staging`, the one mechanism for every
  multi-file output): the previous run's entries (``report.html``,
  ``slicer_domino/``, ...) are moved out first, so the folder never mixes two
  runs, and a run that fails or is killed half-way leaves the folder as it
  was. Files that are not a run's own (a cache folder, notes) are left where they are.
"""

from __future__ import annotations

import fnmatch
import os
from contextlib import contextmanager
from pathlib import Path

from ..io.output_lock import pin_output
from ..io.staged_tree import finish_part, recover_tree
from ..io.staging import recover_leftovers, staged_entries

#: Names a run writes into its folder (glob patterns): their presence means the folder holds a run.
RUN_ENTRIES = (
    "explanation.json",
    "assignments.parquet",
    "images.parquet",
    "spotlight.parquet",
    "report.md",
    "report.html",
    "per_class.json",
    "per_class_metrics.csv",
    "per_class_summary.csv",
    "metrics.json",
    "metrics.csv",
    "sweep.csv",
    "sweep.png",
    "slicer_*",
    "evaluate_metrics.json",
    "demo.txt",  # lbee demo's story of its run (sweep 32h: it stayed beside a new run)
)


def run_entries(folder):
    """The entries of ``folder`` that belong to an lbee run, sorted (empty when none, or no folder)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if any(fnmatch.fnmatch(p.name, pat) for pat in RUN_ENTRIES))


def held_input(folder, inputs):
    """The first ``(entry, input)`` where a run entry of ``folder`` is, or holds, one of ``inputs``; else None.

    ``entry`` is the entry's name (`run_entries`), ``input`` the path as given. Replacing that run would delete
    the input, so callers refuse it even with ``overwrite``: a predictions table named ``metrics.csv`` in the
    run folder, say, found by name, through a symlink or a hard link, or inside a ``slicer_*`` folder.
    """
    import os

    sources = [Path(p) for p in inputs if p is not None and Path(p).exists()]
    for name in run_entries(folder):
        entry = Path(folder) / name
        for src in sources:
            same = entry == src or (entry.is_dir() and src.resolve().is_relative_to(entry.resolve()))
            if same or (entry.exists() and not entry.is_dir() and os.path.samefile(entry, src)):
                return name, src
    return None


def check_out_folder(out, *, overwrite=False, option="--out", inputs=(), how="--overwrite"):
    """Refuse ``out`` when it holds a run and ``overwrite`` is false (``ValueError`` naming what is there).

    An entry that is one of ``inputs`` (a predictions table named ``metrics.csv``, say) is refused even with
    ``overwrite``: replacing the run would delete the command's own input. Call it before any work: the answer
    comes in a second, not after the embedding.
    """
    if os.path.lexists(out) and not os.path.isdir(out):  # the CLI says so earlier; the library's callers here
        raise ValueError(f"{option} {str(out)!r} exists and is not a folder; give a folder for the run.")
    pin_output(out)  # the folder written at the end is this one (lbee.io.output_lock)
    recover_leftovers(out)  # a killed run's swap is settled first, so what is checked is one whole run
    _settle_reports_above(out, lambda above: recover_tree(above, RUN_ENTRIES))  # and a killed report's (32m)
    found = run_entries(out)
    from ..io.staging import refuse_special_entries

    refuse_special_entries(out, found)  # said before the work, as staged_entries would refuse it after
    held = held_input(out, inputs)
    if held:
        raise ValueError(
            f"{option} {str(out)!r}: its {held[0]!r} is this command's input {str(held[1])!r}; replacing the run "
            "would delete it, even with --overwrite. Give another folder."
        )
    if found and not overwrite:
        shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
        raise ValueError(
            f"{option} {str(out)!r} already holds a run ({shown}); lbee does not replace or mix runs. "
            f"Pass {how} to replace that run whole, or give another folder."
        )
    return found


def check_report_out(root, run_folders, *, overwrite=False, option="--out", inputs=()):
    """Refuse a report into ``root`` when it holds one and ``overwrite`` is false (``ValueError`` naming it).

    A report is there when ``root/index.html`` exists or one of ``run_folders``
    (the folders this report writes, inside ``root``) holds a run. ``inputs`` is a sequence of
    ``(label, paths)``, one per dataset entry (``label`` names it, e.g. ``"r.yaml, line 3: datasets[0] (cats)"``):
    a run folder whose run entry is, or holds, one of those paths is refused even with ``overwrite``
    (`held_input`), since replacing the run would delete that input. Call it before any work.
    """
    from ..io.staged_tree import check_real_folder
    from ..io.staging import refuse_special_entries

    root = Path(root)
    pin_output(root)  # the folder written at the end is this one (lbee.io.output_lock)
    recover_tree(root, RUN_ENTRIES)  # a killed report's own swap (`lbee.io.staged_tree`) is settled first
    refuse_special_entries(root, ["index.html"])  # before the work: never replaced (sweep 27)
    found = ["index.html"] if (root / "index.html").exists() or (root / "index.html").is_symlink() else []
    for folder in run_folders:
        check_real_folder(root, Path(folder).relative_to(root))  # a file or a link there was replaced (sweep 32h)
        recover_leftovers(folder)  # a killed run's swap is settled first
        for label, paths in inputs:
            held = held_input(folder, paths)
            if held:
                raise ValueError(
                    f"{label}: the run folder {str(folder)!r} holds this dataset's input {str(held[1])!r}; replacing "
                    "the run would delete it, even with --overwrite. Move the input out of that folder, or give "
                    "another output."
                )
        rel = Path(folder).relative_to(root).as_posix()
        refuse_special_entries(folder, run_entries(folder))
        found += [n if rel == "." else f"{rel}/{n}" for n in run_entries(folder)]
    if found and not overwrite:
        shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
        raise ValueError(
            f"{option} {str(root)!r} already holds a report ({shown}); lbee does not replace reports in silence. "
            "Pass --overwrite to replace them, or give another folder."
        )
    return found


@contextmanager
def staged_run_folder(out, *, overwrite=False, option="--out", inputs=(), how="--overwrite"):
    """Yield a staging folder beside ``out``; on success its content replaces the run in ``out`` whole.

    The previous run's entries in ``out`` (`run_entries`) are moved
    aside and deleted once the new ones are in place; an exception inside the
    block removes the staging folder and leaves ``out`` untouched, and a kill
    at any step leaves either run whole (`lbee.io.staging`, which the next
    run into ``out`` settles). The staging folder has the depth of ``out``, so
    relative links written by the run (thumbnails, images) stay right after the move.
    """
    out = Path(out)
    check_out_folder(out, overwrite=overwrite, option=option, inputs=inputs, how=how)  # a killed report's swap too

    # and again at the commit, under this folder's lock, for its part: one that died while this run worked (32j, 32k)
    def again(held):  # under the run folder's lock, through that held folder: by its real path, never re-resolved
        here = Path(held.path)  # (a "latest" link repointed meanwhile moved another report's part in, sweep 32o)
        _settle_reports_above(here, lambda above: finish_part(above, here, held, RUN_ENTRIES))

    with staged_entries(out, replaces=RUN_ENTRIES, exclusive=not overwrite, under_lock=again) as stage:
        yield stage


def _settle_reports_above(out, settle):
    """``settle(folder)`` for a report's output one or two folders above ``out`` (its run folder, maybe).

    Only a folder that holds a report's ``index.html``, or has a report's leftovers beside it (killed in its swap,
    its index aside), is looked at (sweep 32j: not every folder above an --out).
    """
    import glob

    for above in list(Path(out).resolve().parents)[:2]:
        try:
            found = (above / "index.html").is_file() or any(
                above.parent.glob(f".{glob.escape(above.name)}.lbee-report-staging-*")
            )
        except OSError:  # a folder above that cannot be read: no report of this user's was written there
            continue
        if found:  # what settling it raises stops the run: a report left half put in place would later be finished
            settle(above)  # over it (sweep 32ag B1: a busy report folder, its error swallowed, the run replaced)


#: The columns of ``assignments.parquet`` whose values ``explanation.json`` records a digest of.
DIGESTED_COLUMNS = ("image", "split", "cluster", "confidence", "performance")


def assignments_digest(table):
    """sha256 of ``assignments.parquet``'s values (`DIGESTED_COLUMNS`), as ``explanation.json`` records it.

    ``lbee evaluate`` reads ω from that file by default: an edited ω (inverted, say) would change every metric in
    silence. Floats are digested as float64 bytes, text as UTF-8, so the digest does not depend on parquet's layout.
    """
    return table_digest(table, DIGESTED_COLUMNS)


def check_assignments_digest(payload, table, path):
    """Refuse an ``assignments.parquet`` whose values differ from those its run recorded; False when none was.

    Raises
    ------
    ValueError
        Naming the file: it was edited, or belongs to another run.
    """
    recorded = payload.get("assignments_sha256")
    if recorded is None:  # an older file (or one downgraded to an older format)
        return False
    if assignments_digest(table) != recorded:
        raise ValueError(
            f"{str(path)!r}: its values (split, group, confidence, ω) differ from the ones its run recorded "
            "(explanation.json's assignments_sha256): the file was edited or belongs to another run."
        )
    return True


def table_digest(table, columns):
    """sha256 of a table's values in ``columns`` (those it has), independent of the file's layout: a hex string."""
    import hashlib

    import numpy as np

    h = hashlib.sha256()
    for column in columns:
        if column not in table.columns:
            continue
        values = table[column]
        h.update(column.encode() + b"\0")
        if values.dtype.kind in "iuf":
            h.update(np.ascontiguousarray(values.to_numpy(dtype=np.float64)).tobytes())
        else:
            h.update("\0".join(map(str, values)).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def run_digest(run_dir):
    """sha256 of ``run_dir``'s ``explanation.json`` (None when it has none): which run a command read there."""
    import hashlib

    from .._files import read_bytes_file

    try:  # bounded, never waiting on a FIFO (sweep 32v B2: a link to /dev/zero took 18 GB, a FIFO hung for good)
        return hashlib.sha256(read_bytes_file(Path(run_dir) / "explanation.json", "Explanation file")).hexdigest()
    except (OSError, ValueError):  # none, or none lbee could read: the reader that follows says why
        return None


def write_beside_run(run_dir, target, data, read):
    """Write ``data`` to ``target`` only while ``run_dir`` holds the run read (``read``: its `run_digest` then).

    Into the run's own folder, under that folder's lock (`lbee.io.output_lock`), as a run's swap is: a run swapped
    in while `lbee evaluate` scored the old one got the old run's metrics.json beside it (sweep 32m).

    Raises
    ------
    ValueError
        The run was replaced meanwhile: nothing was written.
    """
    from ..io.cache import atomic_write_bytes
    from ..io.output_lock import check_pinned, lock_output, pinned_file, unlock_output

    run_dir, target = Path(run_dir), Path(target)
    check_pinned(target.parent)  # the folder the command checked at its start (sweep 32o), written by its real path
    target = pinned_file(target)  # a link in the path repointed meanwhile changes nothing (sweep 32q)
    run_dir = Path(pinned_file(run_dir / "explanation.json")).parent
    lock = lock_output(run_dir.resolve()) if target.parent.resolve() == run_dir.resolve() else None
    try:
        if run_digest(run_dir) != read:
            raise ValueError(
                f"The run in {str(run_dir)!r} was replaced (another lbee wrote a new run there) while this command "
                "read it; nothing was written. Run the command again for the new run."
            )
        atomic_write_bytes(target, data)
    finally:
        unlock_output(lock)


def record_in_explanation(out_dir, key, value):
    """Add ``key: value`` to the ``explanation.json`` of ``out_dir`` (if it holds one), its content digest renewed.

    A file written beside the explanation after it (the report's ``images.parquet``) is recorded there by its
    digest, so that an edit of it is refused on reading as an edit of the explanation is.
    """
    import json

    from ..core.explanation_payload import content_digest
    from ..io.cache import atomic_write_bytes

    path = Path(out_dir) / "explanation.json"
    if not path.is_file():
        return
    payload = json.loads(path.read_bytes())
    payload[key] = value
    payload["content_sha256"] = content_digest(payload)
    atomic_write_bytes(path, json.dumps(payload, separators=(",", ":")).encode())
