"""The service's database: API tokens, jobs and the runs they produced (SQLAlchemy; SQLite or PostgreSQL).

The schema is versioned with Alembic (`lbee.service.migrations`, shipped
in the package): the server upgrades a database on start, so an upgrade of
lbee keeps the stored runs.

Leases
------
A worker claims a job with a lease: its owner id (``host:pid:random``) and an
expiry, renewed by a heartbeat. Only the owner of the current lease may record
runs or finish the job (every such write is conditioned on the owner in the
same statement), so a job finishes once even when a worker that was given up
for dead comes back. A job whose lease expired (its worker died with its
server) is claimed again by the next worker, up to ``max_attempts``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    create_engine,
    event,
    or_,
    select,
    update,
)
from sqlalchemy.orm import DeclarativeBase, sessionmaker

JOB_STATES = ("queued", "running", "done", "failed", "cancelled")
#: States a job does not leave.
FINAL_STATES = ("done", "failed", "cancelled")


def utcnow():
    return _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass


class Token(Base):
    """An API token; only its SHA-256 is stored."""

    __tablename__ = "tokens"
    id = Column(Integer, primary_key=True)
    name = Column(String(200), unique=True, nullable=False)
    digest = Column(String(64), unique=True, nullable=False, index=True)
    prefix = Column(String(16), nullable=False)
    scope = Column(String(16), nullable=False)
    created = Column(DateTime, nullable=False, default=utcnow)
    revoked = Column(DateTime, nullable=True)


class Job(Base):
    """A submitted dataset entry and what became of it."""

    __tablename__ = "jobs"
    id = Column(String(32), primary_key=True)
    name = Column(String(500), nullable=False)
    key = Column(String(64), nullable=False, index=True)  # content hash of the entry (+ root): identical jobs
    entry = Column(Text, nullable=False)  # the submitted entry, JSON
    root = Column(Text, nullable=False)  # the data root it was validated against
    folder = Column(Text, nullable=False)  # the job's folder, relative to the service output (an attempt's below)
    status = Column(String(16), nullable=False, default="queued", index=True)
    progress = Column(Text, nullable=False, default="")
    phase = Column(String(40), nullable=True)  # lbee.progress.PHASES while running, then the final status
    fraction = Column(Float, nullable=True)  # how far into the phase (0 to 1), when it counts
    log = Column(Text, nullable=False, default="")
    error = Column(Text, nullable=True)
    failures = Column(Text, nullable=False, default="[]")  # JSON list of [label, message]
    attempts = Column(Integer, nullable=False, default=0)
    worker = Column(String(64), nullable=True)
    token = Column(String(200), nullable=True)
    created = Column(DateTime, nullable=False, default=utcnow)
    started = Column(DateTime, nullable=True)
    finished = Column(DateTime, nullable=True)
    heartbeat = Column(DateTime, nullable=True)
    lease_owner = Column(String(200), nullable=True)  # host:pid:random of the worker holding the job
    lease_expires = Column(DateTime, nullable=True)
    cancel_requested = Column(Boolean, nullable=False, default=False)


class Run(Base):
    """One dataset × model result of a job: its folder (never written again) and metric rows."""

    __tablename__ = "runs"
    id = Column(Integer, primary_key=True)
    job_id = Column(String(32), ForeignKey("jobs.id"), nullable=False, index=True)
    dataset = Column(String(500), nullable=False, index=True)
    model = Column(String(500), nullable=False, index=True)
    folder = Column(Text, nullable=False)  # relative to the service output
    metrics = Column(Text, nullable=False, default="[]")  # JSON rows (slicer, method, ACR, AHR, TPR, JI, ...)
    n_images = Column(Integer, nullable=False, default=0)
    n_hard = Column(Integer, nullable=False, default=0)
    seconds = Column(Float, nullable=True)
    created = Column(DateTime, nullable=False, default=utcnow)
    #: JSON ``{file name: sha256}`` of the run's files as written: they are served only while they are these
    #: (`lbee.service.paths.check_own_files`); a run recorded before schema 0004 gets them when a server starts
    files_sha256 = Column(Text, nullable=True)

    @property
    def rows(self):
        return json.loads(self.metrics or "[]")


class LeaseLost(BaseException):
    """The worker no longer owns the job's lease (it expired and another worker took the job).

    A BaseException, like `lbee.service.jobs.JobCancelled`: the run layer's ``except Exception``
    (a failing model is recorded and the others go on) must let it through.
    """


def _hidden(url):
    """``url`` with its password hidden."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url


def sqlite_path(url):
    """The database file of an ``sqlite`` URL as SQLAlchemy reads it (``%XX`` decoded, the query apart), or None.

    lbee checked the text after ``///`` while SQLAlchemy opened ``%2Ftmp%2F…`` decoded, a ``file:`` URI, or the path
    before a ``?timeout=5``: another file than the one checked (sweep 32ac B1). SQLite's URI forms are refused.
    """
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception as exc:  # a malformed URL
        raise ValueError(f"Cannot use database {_hidden(url)!r}: {exc}") from None
    path = parsed.database
    uri = str(parsed.query.get("uri", "")).lower() not in ("", "false", "0", "no", "off")
    if path and (path.startswith("file:") or uri):
        raise ValueError(
            f"database {_hidden(url)!r}: SQLite's URI forms ('file:', uri=true) are not accepted; give the file's "
            "path, as sqlite:////path/to/lbee.db."
        )
    return path


def checked_sqlite_file(url, *, must_exist=False):
    """The real path of an ``sqlite`` URL's database file, its folder made and checked; None for ``:memory:``.

    Raises
    ------
    ValueError
        When the path is a folder or a special file, or (``must_exist``) no file; `SharedFolderError` when another
        user could replace or redirect it.
    """
    path = sqlite_path(url)  # the file SQLite opens, as SQLAlchemy reads the URL (sweep 32ac B1)
    if not path or path == ":memory:":
        return None
    if os.path.exists(path) and not Path(path).is_file():
        raise ValueError(  # a folder or a FIFO was said not to exist (sweep 32aa N4)
            f"database {url!r}: {path!r} is not a database file (a folder or a special file); check the --db URL."
        )
    if must_exist and not Path(path).is_file():
        raise ValueError(
            f"database {url!r} does not exist (no file {path!r}); check the --db URL, or create it with "
            "`lbee serve token create NAME --db URL` or by starting `lbee serve`."
        )
    from ..io.folder_trust import check_database_file

    # a database another user can replace holds their tokens (sweep 32y): its folder made through the checked walk
    # (checked, then made by path, left a gap), this user's alone, the file no link or file of another user's
    # (sweep 32ab B2)
    return check_database_file(path)


class Database:
    """An engine and a session factory.

    Parameters
    ----------
    url : str
        SQLAlchemy URL (``sqlite:///file.db``, ``postgresql+psycopg://user@host/db``).
    migrate : bool, default=True
        Create or upgrade the schema to this lbee's (the server and the token
        commands do; worker processes, started by a server that did, do not).
    must_exist : bool, default=False
        Refuse an SQLite file that does not exist instead of creating it (and
        its folders): commands that read a database (``token list``, ``revoke``).

    Raises
    ------
    ValueError
        Naming the URL (password hidden): a malformed URL, a missing driver, a
        database that does not exist (``must_exist``) or cannot be opened, or a
        file that is not a database.

    SQLite files get WAL mode and a busy timeout so the server and its worker
    processes can share one file.
    """

    def __init__(self, url, *, migrate=True, must_exist=False):
        self.url = url
        kwargs = {"pool_pre_ping": True}
        engine_url = url
        if url.startswith("sqlite"):
            checked = checked_sqlite_file(url, must_exist=must_exist)
            if checked is not None:
                from sqlalchemy.engine import make_url

                engine_url = make_url(url).set(database=checked)  # opened as checked
            kwargs = {"connect_args": {"check_same_thread": False, "timeout": 30}}
        try:
            self.engine = create_engine(engine_url, **kwargs)
        except Exception as exc:  # a malformed URL or a missing driver
            raise ValueError(f"Cannot use database {_hidden(url)!r}: {exc}") from None
        if url.startswith("sqlite"):

            @event.listens_for(self.engine, "connect")
            def _pragmas(conn, _record):
                cur = conn.cursor()
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA busy_timeout=30000")
                cur.close()

        if migrate:
            from sqlalchemy.exc import SQLAlchemyError

            from .migrate import upgrade

            try:
                upgrade(self.engine)
            except SQLAlchemyError as exc:  # not a database, unreachable, or no such database on the server
                self.engine.dispose()
                reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
                raise ValueError(f"Cannot use database {_hidden(url)!r}: {reason}.") from None
        self.session = sessionmaker(self.engine, expire_on_commit=False)

    # ---- leases
    def claim(self, owner, worker, *, lease_seconds, max_attempts, root=None):
        """Atomically take the oldest claimable job: (job id, attempt number), or None.

        Claimable: ``queued``, or ``running`` with an expired lease (its worker
        is gone), and submitted for ``root`` when it is given: a job of another
        data root waits for a server of that root instead of failing here. A
        job that already had ``max_attempts`` attempts is failed instead, with
        that reason.
        """
        now = utcnow()
        claimable = or_(Job.status == "queued", (Job.status == "running") & (Job.lease_expires < now))
        if root is not None:
            claimable = claimable & (Job.root == str(root))
        with self.session() as s:
            for job_id, attempts, cancel in s.execute(
                select(Job.id, Job.attempts, Job.cancel_requested).where(claimable).order_by(Job.created).limit(5)
            ).all():
                if cancel:  # its worker died after a cancel was asked for
                    s.execute(
                        update(Job)
                        .where(Job.id == job_id, claimable)
                        .values(
                            status="cancelled",
                            finished=now,
                            lease_owner=None,
                            lease_expires=None,
                            progress="cancelled",
                            error="cancelled at the user's request",
                        )
                    )
                    s.commit()
                    continue
                if attempts >= max_attempts:
                    s.execute(
                        update(Job)
                        .where(Job.id == job_id, claimable)
                        .values(
                            status="failed",
                            finished=now,
                            lease_owner=None,
                            lease_expires=None,
                            error=f"interrupted {attempts} times (server restart or worker crash); not retried "
                            f"again (max_attempts={max_attempts}).",
                        )
                    )
                    s.commit()
                    continue
                res = s.execute(
                    update(Job)
                    .where(Job.id == job_id, Job.attempts == attempts, claimable)
                    .values(
                        status="running",
                        worker=worker,
                        lease_owner=owner,
                        started=now,
                        heartbeat=now,
                        lease_expires=now + _dt.timedelta(seconds=lease_seconds),
                        attempts=attempts + 1,
                        error=None,
                    )
                )
                s.commit()
                if res.rowcount == 1:
                    return job_id, attempts + 1
        return None

    def renew(self, job_id, owner, *, lease_seconds, **values):
        """Extend ``owner``'s lease (and write ``values``): whether a cancel was requested.

        Raises
        ------
        LeaseLost
            ``owner`` does not hold the job's lease any more.
        """
        now = utcnow()
        with self.session() as s:
            res = s.execute(
                update(Job)
                .where(Job.id == job_id, Job.lease_owner == owner, Job.status == "running")
                .values(heartbeat=now, lease_expires=now + _dt.timedelta(seconds=lease_seconds), **values)
            )
            cancel = s.scalar(select(Job.cancel_requested).where(Job.id == job_id))
            s.commit()
        if res.rowcount != 1:
            raise LeaseLost(f"job {job_id}: the lease of {owner} was lost")
        return bool(cancel)

    def cancel_requested(self, job_id):
        """Whether a cancel of the job was requested (a read only: the heartbeat polls it between renewals)."""
        with self.session() as s:
            return bool(s.scalar(select(Job.cancel_requested).where(Job.id == job_id)))

    def earlier_identical(self, job_id):
        """The latest finished job of the same entry (and root) before ``job_id``, or None.

        A finished entry submitted again runs again (its files may have changed since); a user who sent the same
        entry twice read two identical runs and no word of it (trial 29): the answer names the earlier job.
        """
        with self.session() as s:
            job = s.get(Job, job_id)
            if job is None:
                return None
            return s.scalar(
                select(Job.id)
                .where(Job.key == job.key, Job.id != job.id, Job.status == "done", Job.created <= job.created)
                .order_by(Job.created.desc())
                .limit(1)
            )

    def finish(self, job_id, owner, status, *, runs=(), **values):
        """End a job as its lease owner, with its runs, in one transaction: whether it was still the owner."""
        with self.session() as s:
            res = s.execute(
                update(Job)
                .where(Job.id == job_id, Job.lease_owner == owner, Job.status == "running")
                .values(status=status, finished=utcnow(), lease_owner=None, lease_expires=None, **values)
            )
            if res.rowcount != 1:
                s.rollback()
                return False
            for run in runs:
                s.add(Run(job_id=job_id, **run))
            s.commit()
            return True

    def expire_leases(self, owners):
        """Expire now the leases held by ``owners`` (workers known to be dead): their jobs become claimable."""
        if not owners:
            return 0
        with self.session() as s:
            res = s.execute(
                update(Job)
                .where(Job.status == "running", Job.lease_owner.in_(list(owners)))
                .values(lease_expires=utcnow() - _dt.timedelta(seconds=1))
            )
            s.commit()
            return res.rowcount

    def update_job(self, job_id, **values):
        with self.session() as s:
            s.execute(update(Job).where(Job.id == job_id).values(**values))
            s.commit()

    def dispose(self):
        self.engine.dispose()
