"""Jobs: validation of a submitted entry, the worker processes that run them, and recovery after a restart.

A job is one dataset entry of a ``lbee report`` config. It is stored in the
database (``queued``), claimed atomically by one worker process (``running``),
run through :func:`lbee.reports.batch.run_dataset` (the run layer: no second
copy of the analysis) and ends ``done`` (with a row per model in ``runs``) or
``failed`` (with the reason).

Reliability:

- Identical entries (same content, same root) share one output folder, so a
  resubmission reuses the generated SpotCheck world and the embedding cache;
  while one is queued or running, the same job is returned.
- On start, jobs left ``running`` by a previous server (there is no worker
  alive to own them) are queued again and resume from the caches, or are
  marked failed once they were interrupted ``max_attempts`` times.
- A job runs in a worker process: an exception fails the job only; a worker
  that dies (a crash, the OOM killer) fails its job with the exit code and is
  replaced. The server itself never runs analysis code.

One server per database: recovery assumes that no other server's workers are
running jobs of the same database.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
import traceback
import uuid
from pathlib import Path

logger = logging.getLogger("lbee")

LOG_LINES = 200


def entry_key(entry, root):
    """Content hash of an entry as submitted under ``root``."""
    text = json.dumps({"entry": entry, "root": str(root)}, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def validate_entry(entry, root):
    """The parsed :class:`~lbee.run.inputs.DatasetSpec` of a raw entry, with every path confined to ``root``.

    Raises
    ------
    ValueError
        A bad entry (the message names key and value, as ``lbee report`` does) or a
        :class:`~lbee.service.paths.PathEscape`.
    """
    from ..reports.config import parse_dataset_entry
    from .paths import check_dataset_paths, check_entry_paths

    if not isinstance(entry, dict):
        raise ValueError(f"the job must be one dataset entry (a mapping such as {{name: demo, spotcheck: {{seed: 0}}}}"
                         f"); received {type(entry).__name__}.")
    check_entry_paths(entry, root)
    ds = parse_dataset_entry(entry, base=root)
    check_dataset_paths(ds, root)
    return ds


def submit(db, settings, entry, *, token=None):
    """Validate and queue ``entry``: (job id, reused). An identical queued or running job is returned instead."""
    from sqlalchemy import select

    from ..run.pipeline import slug
    from .db import Job

    ds = validate_entry(entry, settings.root)
    key = entry_key(entry, settings.root)
    with db.session() as s:
        same = s.scalars(select(Job).where(Job.key == key, Job.status.in_(("queued", "running")))
                         .order_by(Job.created)).first()
        if same is not None:
            return same.id, True
        job = Job(id=uuid.uuid4().hex, name=ds.name, key=key, entry=json.dumps(entry, default=str),
                  root=str(settings.root),
                  folder=f"runs/{slug(ds.name)}-{key[:12]}", status="queued", token=token)
        s.add(job)
        s.commit()
        return job.id, False


def _fail(db, job_id, message, **extra):
    from .db import utcnow

    db.update_job(job_id, status="failed", error=message, finished=utcnow(), **extra)


def run_job(db, settings, job_id):
    """Run a claimed job to its end (``done`` or ``failed``). Never raises for a job's own problem."""
    from ..reports.batch import run_dataset
    from .db import Job, Run, utcnow

    with db.session() as s:
        job = s.get(Job, job_id)
    if job.root != str(settings.root):
        _fail(db, job_id, f"the job was submitted for the data root {job.root!r}; this server reads "
                          f"{str(settings.root)!r} and does not run jobs of another root.")
        return
    lines = [ln for ln in (job.log or "").splitlines() if ln]
    if job.attempts > 1:
        lines.append(f"attempt {job.attempts}: resumed from the caches after an interruption")

    def log(msg):
        lines.extend(str(msg).splitlines() or [""])
        del lines[:-LOG_LINES]
        db.update_job(job_id, progress=str(msg).strip()[:500], log="\n".join(lines), heartbeat=utcnow())

    t0 = time.perf_counter()
    try:
        ds = validate_entry(json.loads(job.entry), settings.root)  # again: links may have changed since
        log(f"[{ds.name}] started")
        reports, failures = run_dataset(ds, settings.output / job.folder, cache_dir=settings.cache_dir,
                                        device=settings.device, log=log)
    except Exception as exc:  # the job fails, the worker goes on
        logger.debug("job %s failed:\n%s", job_id, traceback.format_exc())
        msg = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        _fail(db, job_id, msg, log="\n".join(lines + [f"failed: {msg}"]))
        return
    seconds = time.perf_counter() - t0
    with db.session() as s:
        for rep in reports:
            s.add(Run(job_id=job_id, dataset=rep["dataset"], model=rep["model"],
                      folder=Path(rep["folder"]).relative_to(settings.output).as_posix(),
                      metrics=json.dumps(rep["rows"]), n_images=int(rep["n_images"]), n_hard=int(rep["n_hard"]),
                      seconds=seconds))
        s.commit()
    error = "; ".join(f"{label}: {msg}" for label, msg in failures) or None
    status = "done" if reports else "failed"
    db.update_job(job_id, status=status, error=error, failures=json.dumps(failures), finished=utcnow(),
                  progress=f"{status} in {seconds:.1f} s", log="\n".join(lines))


def run_next_job(db, settings, *, worker="inline"):
    """Claim the oldest queued job and run it in this process: its id, or None when none is queued."""
    job_id = db.claim(worker)
    if job_id is not None:
        run_job(db, settings, job_id)
    return job_id


def recover(db, settings):
    """Jobs left ``running`` by a stopped server: queue them again, or fail them after ``max_attempts``.

    Returns
    -------
    (list of str, list of str)
        Ids requeued, ids failed.
    """
    from sqlalchemy import select

    from .db import Job, utcnow

    requeued, failed = [], []
    with db.session() as s:
        for job in s.scalars(select(Job).where(Job.status == "running")):
            if job.attempts >= settings.max_attempts:
                job.status, job.finished = "failed", utcnow()
                job.error = (f"interrupted {job.attempts} times (server restart or worker crash); not retried "
                             f"again (max_attempts={settings.max_attempts}).")
                failed.append(job.id)
            else:
                job.status, job.worker = "queued", None
                job.progress = "queued again after a server restart; resumes from the caches"
                requeued.append(job.id)
        s.commit()
    if requeued or failed:
        logger.info("recovered jobs: %d queued again, %d failed", len(requeued), len(failed))
    return requeued, failed


def worker_main(settings_dict, name, stop, poll=0.5):
    """A worker process: claim and run jobs until ``stop`` (a multiprocessing Event) is set."""
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {name} %(levelname)s %(message)s")
    from .db import Database
    from .settings import ServiceSettings

    settings = ServiceSettings(**settings_dict)
    db = Database(settings.db_url)
    while not stop.is_set():
        try:
            job_id = run_next_job(db, settings, worker=name)
        except Exception:  # the database was briefly unavailable: wait and try again
            logger.exception("worker %s: could not claim a job", name)
            job_id = None
        if job_id is None:
            stop.wait(poll)
    db.dispose()


class JobRunner:
    """Worker processes (spawned, so no state is shared with the server) and a thread that watches them.

    A worker that dies fails the job it was running (with its exit code) and is
    replaced.
    """

    def __init__(self, db, settings, *, check_every=1.0):
        self.db, self.settings, self.check_every = db, settings, check_every
        self.procs = {}
        self._thread = None
        self._stopping = threading.Event()
        import multiprocessing

        self._ctx = multiprocessing.get_context("spawn")
        self._stop = self._ctx.Event()
        self._serial = 0

    def _spawn(self):
        self._serial += 1
        name = f"worker-{os.getpid()}-{self._serial}"
        proc = self._ctx.Process(target=worker_main, args=(self.settings.to_dict(), name, self._stop), name=name,
                                 daemon=True)
        proc.start()
        self.procs[name] = proc

    def start(self):
        for _ in range(self.settings.workers):
            self._spawn()
        self._thread = threading.Thread(target=self._watch, name="lbee-job-watch", daemon=True)
        self._thread.start()
        return self

    def _watch(self):
        from sqlalchemy import select

        from .db import Job

        while not self._stopping.wait(self.check_every):
            for name, proc in list(self.procs.items()):
                if proc.is_alive() or self._stopping.is_set():
                    continue
                with self.db.session() as s:
                    ids = list(s.scalars(select(Job.id).where(Job.status == "running", Job.worker == name)))
                for job_id in ids:
                    _fail(self.db, job_id, f"the worker process died (exit code {proc.exitcode}) while running this "
                                           "job; the server goes on.")
                logger.warning("worker %s died (exit code %s); starting another", name, proc.exitcode)
                del self.procs[name]
                self._spawn()

    def stop(self, timeout=10):
        """Ask workers to stop after their current job; terminate them after ``timeout`` seconds.

        A terminated worker's job stays ``running`` in the database and is queued
        again by the next start (:func:`recover`).
        """
        self._stopping.set()
        self._stop.set()
        deadline = time.monotonic() + timeout
        for proc in self.procs.values():
            proc.join(max(0.0, deadline - time.monotonic()))
        for proc in self.procs.values():
            if proc.is_alive():
                proc.terminate()
                proc.join(5)
        if self._thread is not None:
            self._thread.join(5)
