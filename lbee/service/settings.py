"""What a ``lbee serve`` instance is configured with, and its limits (one place: API, CLI and docs use these)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

from ..io.cache import default_cache_dir

#: Default body limit of ``POST /v1/explain`` (a 2k × 512 float32 upload is 4 MB; as JSON about 20 MB).
DEFAULT_MAX_UPLOAD = 64 * 2**20
#: Body limit of ``POST /v1/jobs`` (a config entry).
MAX_ENTRY_BYTES = 2**20
#: Largest run id a path or query accepts (the SQL INTEGER of the id column): a larger number gets 422, not an
#: overflow in the database driver.
MAX_ID = 2**31 - 1
#: Deepest JSON / YAML nesting accepted in a request (an entry is a few levels; arrays are two).
MAX_NESTING = 32

#: Per-request limits of ``POST /v1/explain`` (each bounds the cost of one synchronous request; larger
#: analyses belong in a job). ``exact_ward``: the largest hard or easy split clustered with ``ward: exact``
#: (Ward on all pairs needs n² / 2 distances: 8,000 images are 256 MB).
EXPLAIN_LIMITS = {"images": 50_000, "sentences": 20_000, "dim": 4096, "clusters": 500, "exact_ward": 8_000}

#: Encoders a job may name besides checkpoint files inside ``--root``: the SpotCheck encoder and open_clip
#: models with a named pretrained tag (``open_clip:ViT-B-32@laion2b_s34b_b79k``). ``hf-hub:`` names, URLs
#: and files elsewhere are refused; ``--allow-encoder SPEC`` adds exact specs.
DEFAULT_ENCODERS = ("spotcheck", "open_clip", "open_clip:ViT-B-32@laion2b_s34b_b79k")


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
        Embedding and thumbnail cache shared by the jobs; default the CLI's (``$LBEE_CACHE_DIR``, else
        ``~/.cache/lbee``): embeddings are keyed by the encoder and each image's content, so a job reuses what
        ``lbee describe`` or ``lbee embed`` embedded on this machine, and the CLI what a job did.
    workers : int, default=1
        Job worker processes (0: jobs stay queued, for API tests).
    max_upload_bytes : int, default=64 MiB
        Largest request body; larger ones are answered 413.
    max_attempts : int, default=3
        A job interrupted (server killed, worker crash) this many times is marked failed.
    device : str, optional
        torch device of the jobs.
    lease_seconds : float, default=30
        A job's lease lasts this long after each heartbeat (every third of it); a job whose worker
        stopped heart-beating is taken by another worker once its lease expired.
    explain_workers : int, default=1
        Processes that answer ``POST /v1/explain`` (the server process never runs the analysis).
    explain_queue : int, default=4
        Explain requests waiting for a process beyond these are answered 503 (retry later).
    explain_limits : dict, optional
        Overrides of `EXPLAIN_LIMITS` (``images``, ``sentences``, ``dim``, ``clusters``, ``exact_ward``).
    allowed_encoders : tuple of str, optional
        Exact encoder specs allowed in jobs beyond `DEFAULT_ENCODERS` (e.g. an ``hf-hub:`` model the
        operator trusts).
    """

    root: Path
    output: Path = Path("lbee_out/service")
    db_url: str | None = None
    cache_dir: Path | None = None
    workers: int = 1
    max_upload_bytes: int = DEFAULT_MAX_UPLOAD
    max_attempts: int = 3
    device: str | None = None
    lease_seconds: float = 30.0
    explain_workers: int = 1
    explain_queue: int = 4
    explain_limits: dict = field(default_factory=dict)
    allowed_encoders: tuple = ()

    def __post_init__(self):
        root = Path(self.root).expanduser()
        if not root.is_dir():
            raise ValueError(f"`root` {str(self.root)!r} is not a folder; expected the data folder that jobs read.")
        self.root = root.resolve()
        from ..io.cache import cache_folder
        from ..io.folder_trust import SharedFolderError, check_trusted_folder, trusted_real_folder

        # every job writes there: refused at start, not job by job; made now through the checked walk (as given: a
        # link of another user's is theirs, 32x), not later by path, which left a gap for another user's folder
        check_trusted_folder(Path(self.output).expanduser())
        if self.db_url is not None and str(self.db_url).startswith("sqlite"):  # refused before the output is made
            from .db import checked_sqlite_file

            checked_sqlite_file(self.db_url)
        try:
            self.output = Path(trusted_real_folder(Path(self.output).expanduser(), make=True)[0])
        except SharedFolderError:
            raise
        except OSError as exc:
            raise ValueError(f"`output` {str(self.output)!r} cannot be made a folder: {exc.strerror or exc}.") from None
        if self.db_url is None:  # quoted: SQLAlchemy decodes '%2F' and cuts at '?' in a URL's path
            from sqlalchemy.engine import URL

            self.db_url = URL.create("sqlite", database=str(self.output / "lbee.db")).render_as_string()
        # the CLI's cache by default: content-addressed, so a job reuses what `lbee describe` embedded, and back;
        # every job reads and writes it (sweep 32u B4): refused at start, made now (`cache_folder`, sweep 32aa B2)
        self.cache_dir = cache_folder(Path(self.cache_dir or default_cache_dir()).expanduser())
        for name, low in (("workers", 0), ("explain_workers", 1), ("explain_queue", 0), ("max_attempts", 1)):
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= low):
                raise ValueError(f"`{name}` is {value!r}; expected an integer >= {low}.")
        if not (isinstance(self.max_upload_bytes, int) and self.max_upload_bytes >= 1024):
            raise ValueError(f"`max_upload_bytes` is {self.max_upload_bytes!r}; expected an integer >= 1024.")
        if not (isinstance(self.lease_seconds, (int, float)) and self.lease_seconds >= 1):
            raise ValueError(f"`lease_seconds` is {self.lease_seconds!r}; expected a number of seconds >= 1.")
        unknown = sorted(set(self.explain_limits) - set(EXPLAIN_LIMITS))
        if unknown:
            raise ValueError(
                f"`explain_limits` has unknown key(s) {', '.join(unknown)}; expected {', '.join(EXPLAIN_LIMITS)}."
            )
        self.explain_limits = {**EXPLAIN_LIMITS, **self.explain_limits}
        for k, v in self.explain_limits.items():
            if not (isinstance(v, int) and v >= 1):
                raise ValueError(f"`explain_limits[{k!r}]` is {v!r}; expected an integer >= 1.")
        self.allowed_encoders = tuple(self.allowed_encoders)

    def to_dict(self):
        """Plain values, for a worker process."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        return {**out, "root": str(self.root), "output": str(self.output), "cache_dir": str(self.cache_dir)}
