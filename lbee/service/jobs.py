"""Jobs: validation of a submitted entry, running one under a lease, cancellation and recovery.

A job is one dataset entry of a ``lbee report`` config. It is stored in the
database (``queued``), claimed with a lease by one worker process
(``running``), run through `lbee.reports.batch.run_dataset` (the run
layer: no second copy of the analysis) and ends ``done`` (with a row per model
in ``runs``), ``failed`` (with the reason) or ``cancelled``.

Reliability:

- Every attempt writes its own folder (``jobs/<id>/attempt-<n>``) and only the
  owner of the job's lease may record its runs (`lbee.service.db.Database`),
  so a stored run's files are never written again: a resubmission gets a new
  job and new folders, and an older run keeps its report and numbers.
- A job whose worker died with its server is taken again once its lease
  expired (at once by a server on the same host, which sees that the worker's
  process is gone). The new attempt reuses what was saved: the content-keyed
  embedding cache and a generated SpotCheck world; its log says what was
  reused and what was computed, as it happened.
- Cancellation is checked between stages (each step the run layer logs) and
  by the heartbeat thread, every `CANCEL_POLL` seconds: on a cancel it
  raises `JobCancelled` in the job's thread, so a long phase that never
  logs (clustering, merging hypotheses, reading a grammar) stops too.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
import threading
import time
import traceback
import uuid

from ..io.own_store import make_own
from .worlds import keep_world, seed_world

logger = logging.getLogger("lbee")

LOG_LINES = 200
#: Seconds between the heartbeat's looks for a cancel request: a running job stops within about this.
CANCEL_POLL = 1.0


class JobCancelled(BaseException):
    """Raised at a stage boundary of a cancelled job.

    A BaseException, so the run layer's per-dataset and per-model ``except Exception`` (which records a failure
    and goes on) lets it through.
    """


def entry_key(entry, root):
    """Content hash of an entry as submitted under ``root``."""
    text = json.dumps({"entry": entry, "root": str(root)}, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def validate_entry(entry, root, allowed_encoders=(), *, deep=True):
    """The parsed `DatasetSpec` of a raw entry, with every path confined to ``root``.

    ``deep=False`` (a submission) leaves out the checks whose cost grows with the data (walking folders,
    reading a manifest's rows): the worker runs them, with ``deep=True``, before the job reads anything.

    Raises
    ------
    ValueError
        A bad entry (the message names key and value, as ``lbee report`` does), an encoder outside the
        allow-list, or a `PathEscape`.
    """
    from ..io.confinement import confined_to
    from ..reports.config_entries import parse_dataset_entry
    from .paths import check_dataset_paths, check_encoder, check_entry_paths

    if not isinstance(entry, dict):
        raise ValueError(
            f"the job must be one dataset entry (a mapping such as {{name: demo, spotcheck: {{seed: 0}}}}"
            f"); received {type(entry).__name__}."
        )
    with confined_to(root):  # the paths its files name too (a sidecar's grammar, a manifest's rows)
        check_entry_paths(entry, root)
        if isinstance(entry.get("encoder"), str) and entry["encoder"].strip():
            entry = {**entry, "encoder": check_encoder(entry["encoder"], root, allowed_encoders)}
        ds = parse_dataset_entry(entry, base=root)
        check_dataset_paths(ds, root, deep=deep)
    return ds


def submit(db, settings, entry, *, token=None):
    """Validate and queue ``entry``: (job id, reused). An identical queued or running job is returned instead."""
    from sqlalchemy import select

    from .db import Job
    from .paths import redact_paths

    try:
        ds = validate_entry(entry, settings.root, settings.allowed_encoders, deep=False)  # the worker checks deeply
    except ValueError as exc:  # a 422 names no server path, as a job's error does
        raise ValueError(redact_paths(str(exc), settings)) from None
    key = entry_key(entry, settings.root)
    with db.session() as s:
        same = s.scalars(
            select(Job)
            .where(Job.key == key, Job.status.in_(("queued", "running")), Job.cancel_requested.is_(False))
            .order_by(Job.created)
        ).first()
        if same is not None:
            return same.id, True
        job_id = uuid.uuid4().hex
        s.add(
            Job(
                id=job_id,
                name=ds.name,
                key=key,
                entry=json.dumps(entry, default=str),
                root=str(settings.root),
                folder=f"jobs/{job_id}",
                status="queued",
                token=token,
            )
        )
        s.commit()
        return job_id, False


def cancel(db, job_id):
    """Cancel a queued job now, or ask a running one to stop (within `CANCEL_POLL` s): its new status.

    Raises
    ------
    KeyError
        No such job.
    ValueError
        The job had ended already (done, failed or cancelled).
    """
    from sqlalchemy import update

    from .db import Job, utcnow

    with db.session() as s:
        res = s.execute(
            update(Job)
            .where(Job.id == job_id, Job.status == "queued")
            .values(status="cancelled", finished=utcnow(), progress="cancelled before it started")
        )
        if res.rowcount == 0:
            res = s.execute(
                update(Job)
                .where(Job.id == job_id, Job.status == "running")
                .values(cancel_requested=True, progress="cancel requested: the job stops within seconds")
            )
        s.commit()
        job = s.get(Job, job_id)
    if job is None:
        raise KeyError(job_id)
    if res.rowcount == 0:
        raise ValueError(f"job {job_id} is {job.status}; only a queued or running job can be cancelled.")
    return job.status


def new_owner():
    """A lease owner id: ``host:pid:random`` (the server tells its own dead workers by host and pid)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _process_gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    try:  # a zombie (exited, not reaped yet) is gone too
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def recover(db, settings):
    """Make the jobs of dead workers on this host claimable now instead of when their lease expires.

    A lease owner ``host:pid:...`` on this host whose process is gone (a server
    killed with its workers) is dead for sure; leases of other hosts are left to
    expire. A ``running`` job without a lease (written by an lbee before leases)
    is claimable at once. Returns the ids of the jobs made claimable.
    """
    from sqlalchemy import select, update

    from .db import Job, utcnow

    host = socket.gethostname()
    with db.session() as s:
        rows = s.execute(select(Job.id, Job.lease_owner).where(Job.status == "running")).all()
        legacy = [job_id for job_id, owner in rows if owner is None]
        if legacy:
            s.execute(update(Job).where(Job.id.in_(legacy)).values(lease_expires=utcnow()))
            s.commit()
    dead = set()
    for _, owner in rows:
        parts = (owner or "").split(":")
        if len(parts) == 3 and parts[0] == host and parts[1].isdigit() and _process_gone(int(parts[1])):
            dead.add(owner)
    db.expire_leases(dead)
    ids = legacy + [job_id for job_id, owner in rows if owner in dead]
    if ids:
        logger.info("%d job(s) of stopped workers will be taken again", len(ids))
    return ids


def _async_raise(thread_id, exc_type):
    """Raise ``exc_type`` in thread ``thread_id`` at its next Python instruction (None: withdraw a pending one)."""
    import ctypes

    exc = None if exc_type is None else ctypes.py_object(exc_type)  # None: a NULL pointer
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), exc)


class _Heartbeat:
    """Renews the lease every third of its length while the job runs; notes a cancel or a lost lease.

    Between renewals it looks for a cancel every `CANCEL_POLL` seconds; inside `interruptible`,
    a cancel raises `JobCancelled` in the thread that entered the heartbeat (the job's), once.
    """

    def __init__(self, db, job_id, owner, lease_seconds, poll=None):
        self.db, self.job_id, self.owner, self.lease_seconds = db, job_id, owner, lease_seconds
        self.poll = min(CANCEL_POLL if poll is None else poll, lease_seconds / 3)
        self.cancel = self.lost = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"lease-{job_id[:8]}", daemon=True)
        self._target, self._armed, self._sent = threading.get_ident(), False, False
        self._lock = threading.Lock()

    def _run(self):
        from .db import LeaseLost

        renew_at = time.monotonic() + self.lease_seconds / 3
        while not self._done.wait(self.poll):
            try:
                if time.monotonic() >= renew_at:
                    renew_at = time.monotonic() + self.lease_seconds / 3
                    self.cancel = (
                        self.db.renew(self.job_id, self.owner, lease_seconds=self.lease_seconds) or self.cancel
                    )
                elif not self.cancel:
                    self.cancel = self.db.cancel_requested(self.job_id)
            except LeaseLost:
                self.lost = True
                return
            except Exception:  # the database is briefly unreachable: try again next beat
                logger.warning("job %s: lease renewal failed", self.job_id, exc_info=True)
            if self.cancel and not self._sent:
                with self._lock:
                    if self._armed:
                        self._sent = True
                        _async_raise(self._target, JobCancelled)

    @contextlib.contextmanager
    def interruptible(self):
        """While inside, a cancel interrupts the job's thread wherever it is (a phase that never logs)."""
        self._armed = True
        try:
            yield
        finally:
            with self._lock:  # after this, nothing is raised in the job's thread any more
                self._armed = False
                if self._sent:
                    _async_raise(self._target, None)  # withdraw it if it has not fired yet

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join(10)


def run_job(db, settings, job_id, *, owner, attempt):
    """Run a claimed job to its end as the lease ``owner``. Never raises for a job's own problem.

    Returns
    -------
    str
        The job's final status as recorded, or ``'lost'`` when the lease was lost (nothing recorded).
    """
    from ..io.confinement import confined_to
    from ..progress import listening
    from ..reports.batch import run_dataset
    from .db import Job, LeaseLost
    from .job_progress import PHASE_LINE, job_listener
    from .job_warnings import entry_advice, job_warnings
    from .paths import file_digests, redact_paths

    with db.session() as s:
        job = s.get(Job, job_id)
    lines = [ln for ln in (job.log or "").splitlines() if ln]
    lease = settings.lease_seconds

    def private(text):  # what a job shows (error, log, failures) names no server path
        return None if text is None else redact_paths(text, settings)

    def record(status, **values):
        values = {"phase": status, **{k: private(v) if k in ("error", "progress") else v for k, v in values.items()}}
        done = db.finish(job_id, owner, status, log="\n".join(lines[-LOG_LINES:]), **values)
        # the server's log tells each job's end, not only the clients' polls
        error = values.get("error")
        logger.info("job %s (%s): %s%s", job_id, job.name, status, f": {error}" if error else "")
        return status if done else "lost"

    logger.info("job %s (%s): started, attempt %d", job_id, job.name, attempt)

    if job.root != str(settings.root):
        return record(
            "failed",
            error=f"the job was submitted for another data root ({job.root!r}); this server reads only its own "
            "--root and does not run jobs of another root.",
        )
    if attempt > 1:
        lines.append(
            f"attempt {attempt}: attempt {attempt - 1} stopped without finishing (its worker stopped or "
            "lost its lease); starting again"
        )
    folder = f"{job.folder}/attempt-{attempt}"
    out = settings.output / folder

    with _Heartbeat(db, job_id, owner, lease) as beat:

        def beat_with(**values):  # a heartbeat that writes values: a cancel or a lost lease stops the job here
            if beat.lost:
                raise LeaseLost(job_id)
            if db.renew(job_id, owner, lease_seconds=lease, **values) or beat.cancel:
                raise JobCancelled()

        def log(msg):
            msg = private(str(msg))
            lines.extend(msg.splitlines() or [""])
            del lines[:-LOG_LINES]
            beat_with(progress=msg.strip()[:500], log="\n".join(lines))

        def note(msg):  # a log line that leaves the progress as it is
            lines.append(msg)
            del lines[:-LOG_LINES]
            beat_with(log="\n".join(lines))

        t0 = time.perf_counter()
        try:
            with beat.interruptible():
                ds = validate_entry(json.loads(job.entry), settings.root, settings.allowed_encoders)  # links may change
                make_own(settings.output, *out.relative_to(settings.output).parts)  # never 0777 (32ak N1)
                log(f"[{ds.name}] started (attempt {attempt}, folder {folder})")
                reused = seed_world(settings, job, attempt, out)
                if reused:
                    log(reused)
                with (
                    confined_to(settings.root, out, settings.cache_dir),
                    job_warnings(lines, settings),
                    listening(job_listener(beat_with, on_phase=lambda phase: note(PHASE_LINE + phase))),
                ):
                    reports, failures = run_dataset(  # pages without links to files: no server path in them
                        ds, out, cache_dir=settings.cache_dir, device=settings.device, log=log, links=False
                    )
                log(f"[{ds.name}] analysis finished in {time.perf_counter() - t0:.1f} s")
        except JobCancelled:
            lines.append("cancelled at the user's request")
            return record("cancelled", progress="cancelled", error="cancelled at the user's request")
        except LeaseLost:
            logger.warning("job %s: lease lost by %s; its results are not recorded", job_id, owner)
            return "lost"
        except Exception as exc:  # the job fails, the worker goes on
            logger.debug("job %s failed:\n%s", job_id, traceback.format_exc())
            msg = entry_advice(private(str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"))
            lines.append(f"failed: {msg}")
            return record("failed", error=msg)
    seconds = time.perf_counter() - t0
    runs = [
        {
            "dataset": rep["dataset"],
            "model": rep["model"],
            "n_images": int(rep["n_images"]),
            "folder": rep["folder"].relative_to(settings.output).as_posix(),
            "metrics": json.dumps(rep["rows"]),
            "n_hard": int(rep["n_hard"]),
            "seconds": seconds,
            "files_sha256": json.dumps(file_digests(rep["folder"])),
        }
        for rep in reports
    ]
    failures = [(label, entry_advice(private(msg))) for label, msg in failures]
    status = "done" if reports else "failed"
    error = "; ".join(f"{label}: {msg}" for label, msg in failures) or None
    result = record(
        status, runs=runs, error=error, failures=json.dumps(failures), progress=f"{status} in {seconds:.1f} s"
    )
    if result == "done":
        keep_world(settings, job, out, attempt)
    return result


def run_next_job(db, settings, *, worker="inline"):
    """Claim the oldest claimable job and run it in this process: its id, or None when there is none."""
    owner = new_owner()
    claimed = db.claim(
        owner, worker, lease_seconds=settings.lease_seconds, max_attempts=settings.max_attempts, root=settings.root
    )
    if claimed is not None:
        run_job(db, settings, claimed[0], owner=owner, attempt=claimed[1])
    return None if claimed is None else claimed[0]
