"""Output folders of a run: never replaced or mixed in silence.

The ``--overwrite`` rule, for every command that writes a run into ``--out``:

- a folder that already holds a run (any of :data:`RUN_ENTRIES`) is refused,
  before any work, unless ``overwrite=True``;
- a run is written into a staging folder beside ``--out`` and moved in whole
  when it is complete: the previous run's entries (``report.html``,
  ``slicer_domino/``, ...) are moved out first, so the folder never mixes two
  runs, and a run that fails half-way leaves the folder as it was. Files that
  are not a run's own (a cache folder, notes) are left where they are.
"""

from __future__ import annotations

import fnmatch
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path

#: Names a run writes into its folder (glob patterns): their presence means the folder holds a run.
RUN_ENTRIES = (
    "explanation.json",
    "assignments.parquet",
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
)


def run_entries(folder):
    """The entries of ``folder`` that belong to an lbee run, sorted (empty when none, or no folder)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if any(fnmatch.fnmatch(p.name, pat) for pat in RUN_ENTRIES))


def check_out_folder(out, *, overwrite=False, option="--out"):
    """Refuse ``out`` when it holds a run and ``overwrite`` is false (``ValueError`` naming what is there).

    Call it before any work: the answer comes in a second, not after the embedding.
    """
    found = run_entries(out)
    if found and not overwrite:
        shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
        raise ValueError(
            f"{option} {str(out)!r} already holds a run ({shown}); lbee does not replace or mix runs. "
            f"Pass --overwrite to replace that run whole, or give another folder."
        )
    return found


@contextmanager
def staged_run_folder(out, *, overwrite=False, option="--out"):
    """Yield a staging folder beside ``out``; on success move its content into ``out`` whole.

    The previous run's entries in ``out`` (:func:`run_entries`) are moved
    aside first and deleted once the new ones are in place; an exception
    inside the block removes the staging folder and leaves ``out`` untouched.
    The staging folder has the depth of ``out``, so relative links written by
    the run (thumbnails, images) stay right after the move.
    """
    out = Path(out)
    check_out_folder(out, overwrite=overwrite, option=option)
    out.parent.mkdir(parents=True, exist_ok=True)
    tag = uuid.uuid4().hex[:12]
    stage = out.parent / f".{out.name}.lbee-staging-{tag}"
    stage.mkdir()
    try:
        yield stage
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    out.mkdir(parents=True, exist_ok=True)
    old = out.parent / f".{out.name}.lbee-replaced-{tag}"
    previous = run_entries(out)
    if previous:
        old.mkdir()
        for name in previous:
            (out / name).rename(old / name)
    for entry in sorted(stage.iterdir()):  # renames within one folder's parent: no copy, no partial file
        entry.rename(out / entry.name)
    shutil.rmtree(stage, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)  # kept (hidden, beside out) only if a rename above failed
