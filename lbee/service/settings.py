"""What a ``lbee serve`` instance is configured with."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: Default body limit of ``POST /v1/explain`` (a 2k × 512 float32 upload is 4 MB; as JSON about 20 MB).
DEFAULT_MAX_UPLOAD = 64 * 2**20
#: Body limit of ``POST /v1/jobs`` (a config entry).
MAX_ENTRY_BYTES = 2**20


@dataclass
class ServiceSettings:
    """Configuration of the service.

    Parameters
    ----------
    root : path-like
        The data folder. Jobs may only read paths inside it (resolved, symlinks followed).
    output : path-like, default='lbee_out/service'
        Where job outputs (reports, explanations, metrics) are written.
    db_url : str, optional
        SQLAlchemy URL; default ``sqlite:///<output>/lbee.db``. PostgreSQL works the same.
    cache_dir : path-like, optional
        Embedding and thumbnail cache shared by the jobs; default ``<output>/cache``.
    workers : int, default=1
        Job worker processes (0: jobs stay queued, for API tests).
    max_upload_bytes : int, default=64 MiB
        Largest request body; larger ones are answered 413.
    max_attempts : int, default=3
        A job interrupted (server restart, worker crash) this many times is marked failed.
    device : str, optional
        torch device of the jobs.
    """

    root: Path
    output: Path = Path("lbee_out/service")
    db_url: str | None = None
    cache_dir: Path | None = None
    workers: int = 1
    max_upload_bytes: int = DEFAULT_MAX_UPLOAD
    max_attempts: int = 3
    device: str | None = None

    def __post_init__(self):
        root = Path(self.root).expanduser()
        if not root.is_dir():
            raise ValueError(f"`root` {str(self.root)!r} is not a folder; expected the data folder that jobs read.")
        self.root = root.resolve()
        self.output = Path(self.output).expanduser().resolve()
        if self.db_url is None:
            self.db_url = f"sqlite:///{self.output / 'lbee.db'}"
        self.cache_dir = Path(self.cache_dir).expanduser().resolve() if self.cache_dir else self.output / "cache"
        if not (isinstance(self.workers, int) and self.workers >= 0):
            raise ValueError(f"`workers` is {self.workers!r}; expected an integer >= 0.")
        if not (isinstance(self.max_upload_bytes, int) and self.max_upload_bytes >= 1024):
            raise ValueError(f"`max_upload_bytes` is {self.max_upload_bytes!r}; expected an integer >= 1024.")

    def to_dict(self):
        """Plain values, for a worker process."""
        return {"root": str(self.root), "output": str(self.output), "db_url": self.db_url,
                "cache_dir": str(self.cache_dir), "workers": self.workers, "max_upload_bytes": self.max_upload_bytes,
                "max_attempts": self.max_attempts, "device": self.device}
