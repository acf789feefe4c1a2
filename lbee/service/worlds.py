"""The SpotCheck worlds a service keeps: a job's world reused by its next attempt and by later jobs of its entry."""

from __future__ import annotations

import json
import os
import shutil
import uuid

from ..io.own_store import foreign_in_tree, tighten_tree


def _world_store(settings, job):
    return settings.output / "worlds" / job.key[:32]


def seed_world(settings, job, attempt, out):
    """Copy a SpotCheck world generated for this entry before into ``out``: a line for the log, or None.

    The world comes from an earlier attempt or an earlier job; the run layer loads it instead of generating it
    again.
    """
    entry = json.loads(job.entry)
    if not isinstance(entry.get("spotcheck"), dict) or "seed" not in entry["spotcheck"] or (out / "ec").exists():
        return None
    job_dir = settings.output / job.folder
    sources = [(job_dir / f"attempt-{k}", f"attempt {k}") for k in range(attempt - 1, 0, -1)]
    sources.append((_world_store(settings, job), "an earlier job of this entry"))
    for folder, who in sources:
        if (folder / "ec" / "ec.json").is_file() and not foreign_in_tree(folder / "ec"):  # never theirs (32ak B7)
            shutil.copytree(folder / "ec", out / "ec")
            return f"  SpotCheck world: reusing the one {who} generated"
    return None


def keep_world(settings, job, out, attempt):
    """After a finished job: keep its SpotCheck world for later jobs of the entry, drop unfinished attempts."""
    store = _world_store(settings, job)
    if (out / "ec" / "ec.json").is_file() and not store.exists():
        tmp = store.with_name(f".{store.name}.{uuid.uuid4().hex[:8]}")
        shutil.copytree(out / "ec", tmp / "ec")
        tighten_tree(tmp)  # this user's alone whatever the umask: later jobs read it as their own (sweep 32ak B7)
        try:
            os.replace(tmp, store)
        except OSError:  # another job stored it first
            shutil.rmtree(tmp, ignore_errors=True)
    job_dir = settings.output / job.folder
    for k in range(1, attempt):  # folders of attempts that never finished: no run points there
        shutil.rmtree(job_dir / f"attempt-{k}", ignore_errors=True)
        for left in job_dir.glob(f".attempt-{k}.lbee-*"):  # and its stages: nothing writes attempt-k again (32r N1)
            shutil.rmtree(left, ignore_errors=True)
