"""A batch report replaced whole: its index and every run folder staged together, then swapped in.

``lbee report`` killed between two datasets left one run of the new config beside one of the old, under the old
``index.html`` (sweep 32g). The whole report is now written into one stage (`lbee.io.staging.staged_entries` on
the output folder): the index and the dataset folders go in together, or not at all.

A dataset folder may hold more than this report writes: the user's notes, an input, a model's folder of an earlier
config, a SpotCheck world a rerun reuses. Before the report is written, the stage receives hard links of all of it
(a copy where the file system has none), except the previous runs' own entries (`lbee.run.outputs.RUN_ENTRIES`)
in the run folders this report writes: only those are replaced, as a single run's swap replaces them.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import stat
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def staged_report(root, run_folders):
    """Yield the report's stage; on success, its index and dataset folders replace the report in ``root`` whole.

    Parameters
    ----------
    root : path-like
        The report's output folder.
    run_folders : list of path-like
        The run folders this report writes, inside ``root`` (a dataset's folder, or its model sub-folders).

    Yields
    ------
    pathlib.Path
        The stage: write ``index.html`` and each run folder at the same relative path as in ``root``.
    """
    from ..io.staging import staged_entries

    root = Path(root)
    runs = {Path(f).relative_to(root) for f in run_folders}
    tops = sorted({r.parts[0] for r in runs if r.parts})
    with staged_entries(root, replaces=("index.html",)) as stage:
        for name in tops:  # what the report's folders hold beyond its runs, carried into the new report
            if (root / name).is_dir() and not (root / name).is_symlink():
                _carry(root / name, stage / name, Path(name), runs)
        yield stage


def _carry(old, new, rel, runs):
    """Hard links in ``new`` of what folder ``old`` holds, except the runs' own entries where ``rel`` is a run."""
    from ..run.outputs import RUN_ENTRIES

    new.mkdir(parents=True, exist_ok=True)
    for entry in sorted(old.iterdir()):
        if rel in runs and any(fnmatch.fnmatch(entry.name, pat) for pat in RUN_ENTRIES):
            continue  # the previous run's: replaced by this report's run
        if rel / entry.name in runs or any((rel / entry.name) in r.parents for r in runs):
            if entry.is_dir() and not entry.is_symlink():  # a model's folder of this report: its runs likewise
                _carry(entry, new / entry.name, rel / entry.name, runs)
                continue
        _link(entry, new / entry.name)


def _link(src, dst):
    """``dst`` as ``src``: a hard link of a file, a symlink as such, a folder's tree likewise.

    A regular file is copied where the file system has no hard links.
    """
    mode = os.lstat(src).st_mode
    if stat.S_ISLNK(mode):
        os.symlink(os.readlink(src), dst)
    elif stat.S_ISDIR(mode):
        shutil.copytree(src, dst, symlinks=True, copy_function=_link_file)
    else:
        _link_file(src, dst)


def _link_file(src, dst):
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:
        if not stat.S_ISREG(os.lstat(src).st_mode):  # a FIFO or a device is never opened (it could block)
            raise
        shutil.copy2(src, dst)
