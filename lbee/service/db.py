"""The service's database: API tokens, jobs and the runs they produced (SQLAlchemy; SQLite or PostgreSQL)."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

from sqlalchemy import (Column, DateTime, Float, ForeignKey, Integer, String, Text, create_engine, event, select,
                        update)
from sqlalchemy.orm import DeclarativeBase, sessionmaker

JOB_STATES = ("queued", "running", "done", "failed")


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
    folder = Column(Text, nullable=False)  # output folder, relative to the service output
    status = Column(String(16), nullable=False, default="queued", index=True)
    progress = Column(Text, nullable=False, default="")
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


class Run(Base):
    """One dataset × model result of a job: its folder and metric rows."""

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

    @property
    def rows(self):
        return json.loads(self.metrics or "[]")


class Database:
    """An engine and a session factory; creates the tables on first use.

    SQLite files get WAL mode and a busy timeout so the server and its worker
    processes can share one file.
    """

    def __init__(self, url):
        self.url = url
        kwargs = {}
        if url.startswith("sqlite"):
            path = url.split("///", 1)[-1]
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        try:
            self.engine = create_engine(url, future=True, **kwargs)
        except Exception as exc:  # a malformed URL or a missing driver
            raise ValueError(f"Cannot use database {url!r}: {exc}") from None
        if url.startswith("sqlite"):
            @event.listens_for(self.engine, "connect")
            def _pragmas(conn, _record):
                cur = conn.cursor()
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA busy_timeout=30000")
                cur.close()
        Base.metadata.create_all(self.engine)
        self.session = sessionmaker(self.engine, expire_on_commit=False, future=True)

    def claim(self, worker):
        """Atomically take the oldest queued job for ``worker``: its id, or None."""
        with self.session() as s:
            for job_id in s.scalars(select(Job.id).where(Job.status == "queued").order_by(Job.created).limit(5)):
                now = utcnow()
                res = s.execute(update(Job).where(Job.id == job_id, Job.status == "queued").values(
                    status="running", worker=worker, started=now, heartbeat=now, attempts=Job.attempts + 1,
                    error=None))
                s.commit()
                if res.rowcount == 1:
                    return job_id
        return None

    def update_job(self, job_id, **values):
        with self.session() as s:
            s.execute(update(Job).where(Job.id == job_id).values(**values))
            s.commit()

    def dispose(self):
        self.engine.dispose()
