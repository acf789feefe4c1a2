"""The server's child processes: job workers (`JobRunner`) and what every child does to die with it.

Children are spawned (no state shared with the server). Each one watches the
pipe that `multiprocessing` keeps open from its parent
(``parent_process().sentinel``): the kernel closes it when the server process
ends, however it ends (``kill -9`` included), and the child exits at once, so
no orphan goes on taking jobs. Its job's lease then expires, or is expired at
once by the next server on the same host (`lbee.service.jobs.recover`).
"""

from __future__ import annotations

import logging
import os
import threading
import time

logger = logging.getLogger("lbee")

#: Exit status of a child whose server went away.
ORPHAN_EXIT = 70


def _exit_cleanly(signum, frame):
    """SIGTERM in a child (the server stopping it): a normal exit, so that its finalizers run.

    Killed outright, a worker left the semaphores it had made (tqdm's lock, a DataLoader's queues) registered, and
    the resource tracker reported them at the server's stop ("There appear to be 1 leaked semaphore objects").
    A SIGTERM while the child is already exiting is ignored: stopped as a process group (systemd's way), a worker
    got one from the group and one from the server, and the second, raised in an atexit callback, left a traceback
    in the log (trial 42). Its main thread is marked stopped before the atexit callbacks run.
    """
    import threading

    if threading.main_thread().is_alive():
        raise SystemExit(128 + signum)


def die_with_parent():
    """In a spawned child: exit as soon as the parent process is gone (a thread waits on its pipe).

    The child also ignores SIGINT: Ctrl-C in a terminal reaches the whole process group, and the server stops its
    children itself (the stop event, then terminate). Without this, each child printed a KeyboardInterrupt
    traceback at every stop. SIGTERM (terminate) ends it as a normal exit (`_exit_cleanly`).
    """
    import multiprocessing
    import signal
    from multiprocessing.connection import wait

    parent = multiprocessing.parent_process()
    if parent is None:
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit_cleanly)

    def watch():
        wait([parent.sentinel])
        os._exit(ORPHAN_EXIT)  # no cleanup: the job's lease and files are the next attempt's to take over

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def worker_main(settings_dict, name, stop, poll=0.5):
    """A job worker process: claim and run jobs until ``stop`` is readable.

    ``stop`` is the read end of a pipe whose write end only the server holds: a message or its closing (EOF,
    also when the server dies) both make it readable. Unlike a shared ``multiprocessing.Event``, whose ``set``
    waits for every sleeper to wake, no worker killed while it waits can wedge it for the server or the others.
    """
    die_with_parent()
    # lbee's lines at INFO; other libraries' INFO (faiss probing CPU features, sentence-transformers loading) is
    # not the server operator's business: WARNING and above only.
    logging.basicConfig(level=logging.WARNING, format=f"%(asctime)s {name} %(levelname)s %(message)s")
    logging.getLogger("lbee").setLevel(logging.INFO)
    from .db import Database
    from .jobs import run_next_job
    from .settings import ServiceSettings

    settings = ServiceSettings(**settings_dict)
    db = Database(settings.db_url, migrate=False)  # the server migrated it
    while not stop.poll():
        try:
            job_id = run_next_job(db, settings, worker=name)
        except Exception:  # the database was briefly unavailable: wait and try again
            logger.exception("worker %s: could not claim a job", name)
            job_id = None
        if job_id is None:
            stop.poll(poll)
    db.dispose()


class JobRunner:
    """Job worker processes and a thread that watches them.

    A worker that dies fails the job it was running (with its exit code) and is
    replaced. Every ``lease_seconds`` the thread also frees the jobs of dead
    workers of this host (`lbee.service.jobs.recover`).
    """

    def __init__(self, db, settings, *, check_every=1.0):
        self.db, self.settings, self.check_every = db, settings, check_every
        self.procs = {}
        self._thread = None
        self._stopping = threading.Event()
        import multiprocessing

        self._ctx = multiprocessing.get_context("spawn")
        self._stops = {}  # worker name -> the write end of its stop pipe (`worker_main`)
        self._serial = 0

    def _spawn(self):
        self._serial += 1
        name = f"worker-{os.getpid()}-{self._serial}"
        recv, send = self._ctx.Pipe(duplex=False)
        proc = self._ctx.Process(target=worker_main, args=(self.settings.to_dict(), name, recv), name=name, daemon=True)
        proc.start()
        recv.close()  # the worker holds its own copy: the pipe ends for it only when the server closes `send`
        self.procs[name], self._stops[name] = proc, send

    def start(self):
        for _ in range(self.settings.workers):
            self._spawn()
        self._thread = threading.Thread(target=self._watch, name="lbee-job-watch", daemon=True)
        self._thread.start()
        return self

    def pids(self):
        """Process ids of the live workers."""
        return [p.pid for p in self.procs.values() if p.is_alive()]

    def _watch(self):
        from sqlalchemy import select, update

        from .db import Job, utcnow
        from .jobs import recover

        last_recover = time.monotonic()
        while not self._stopping.wait(self.check_every):
            for name, proc in list(self.procs.items()):
                if proc.is_alive() or self._stopping.is_set():
                    continue
                # replaced first, so that whoever sees the job failed also sees the new worker
                logger.warning("worker %s died (exit code %s); starting another", name, proc.exitcode)
                del self.procs[name]
                _close_stop(self._stops.pop(name, None))
                self._spawn()
                with self.db.session() as s:
                    ids = list(s.scalars(select(Job.id).where(Job.status == "running", Job.worker == name)))
                    s.execute(
                        update(Job)
                        .where(Job.id.in_(ids), Job.status == "running", Job.worker == name)
                        .values(
                            status="failed",
                            finished=utcnow(),
                            lease_owner=None,
                            lease_expires=None,
                            error=f"the worker process died (exit code {proc.exitcode}) while running this job; "
                            "the server goes on.",
                        )
                    )
                    s.commit()
            if time.monotonic() - last_recover > self.settings.lease_seconds:
                last_recover = time.monotonic()
                try:
                    recover(self.db, self.settings)
                except Exception:
                    logger.warning("could not check the leases of stopped workers", exc_info=True)

    def stop(self, timeout=10):
        """Ask workers to stop after their current job; terminate them after ``timeout`` seconds.

        At most 5 s for the watching thread, ``timeout`` for the workers, then 5 s per worker still alive
        (terminated). Nothing here waits on a worker: one that died (``kill -9``, the OOM killer) cannot
        hold up the shutdown. A terminated worker's job stays ``running`` until its lease expires (or the
        next start on this host frees it, `lbee.service.jobs.recover`) and is then taken again.
        """
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(5)  # first, so that no worker is started while the others are stopped
        procs = list(self.procs.values())
        for name in list(self._stops):
            _close_stop(self._stops.pop(name), message=True)
        deadline = time.monotonic() + timeout
        for proc in procs:
            proc.join(max(0.0, deadline - time.monotonic()))
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
                proc.join(5)


def _close_stop(send, message=False):
    """Close the server's end of a worker's stop pipe, telling it to stop first when ``message``; never blocks."""
    if send is None:
        return
    try:
        if message:
            send.send_bytes(b"stop")  # a few bytes into an empty pipe: no wait, even for a worker that is gone
    except OSError:  # the worker is gone, and so is the pipe's other end
        pass
    finally:
        send.close()


def _explain_worker_init():
    die_with_parent()
    import lbee  # noqa: F401 - imported once per process, not per request


def _noop():
    return None


class ExplainPool:
    """Processes answering ``POST /v1/explain`` (`lbee.service.explain.answer`).

    At most ``explain_workers`` at once plus ``explain_queue`` waiting; beyond that `run` answers 503.
    """

    def __init__(self, settings):
        self.size = settings.explain_workers
        self.capacity = settings.explain_workers + settings.explain_queue
        self.limits = dict(settings.explain_limits)
        self._pool = None
        self._busy = 0

    def _executor(self):
        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self._pool = ProcessPoolExecutor(
                self.size, mp_context=multiprocessing.get_context("spawn"), initializer=_explain_worker_init
            )
        return self._pool

    @property
    def busy(self):
        """Requests running or waiting."""
        return self._busy

    def warm(self):
        """Start the processes now (they import lbee), not on the first request."""
        for _ in range(self.size):
            self._executor().submit(_noop)
        return self

    async def run(self, kind, payload):
        """(HTTP status, JSON bytes) of one request, computed in a worker process."""
        import asyncio
        import json
        from concurrent.futures.process import BrokenProcessPool

        from .explain import answer

        if self._busy >= self.capacity:
            return 503, json.dumps(
                {"detail": f"the server is busy ({self._busy} explain requests in progress or waiting); retry later."}
            ).encode()
        self._busy += 1
        try:
            return await asyncio.wrap_future(self._executor().submit(answer, kind, payload, self.limits))
        except BrokenProcessPool:  # a worker was killed (out of memory?): start afresh
            self._pool = None
            logger.error("an explain worker process died; starting new ones")
            return 503, json.dumps({"detail": "the explain worker process died while answering; retry later."}).encode()
        finally:
            self._busy -= 1

    def shutdown(self):
        if self._pool is not None:
            # waits for a running request (bounded by EXPLAIN_LIMITS): its processes end and release their queues
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
