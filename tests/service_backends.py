"""Database back-ends of the service tests: SQLite files, and a real PostgreSQL server (pgserver).

``pgserver`` (PyPI, in the ``dev`` extra) ships PostgreSQL's binaries in its
wheel and starts a private server on a Unix socket; as root it runs the server
as a system user ``pgserver`` that it creates (PostgreSQL refuses to run as
root). Outside CI a machine where it cannot start skips the PostgreSQL cases
with the reason; under CI (CI set, as ``.ci/run`` does) they fail instead, as
the browser tests do without chromium.

Use: ``from service_backends import backend, postgres  # noqa: F401`` and
``@pytest.mark.parametrize("backend", BACKENDS, indirect=True)`` on the tests
that must pass on both; unparametrised, ``backend`` is SQLite.
"""

import atexit
import os
import shutil
import tempfile
import uuid

import pytest

BACKENDS = ["sqlite", "postgresql"]


_SERVER = {}  # one PostgreSQL server per test process, whichever modules import the fixture


def _start_postgres():
    """(server, socket folder) of the process's PostgreSQL server, started on first use; stopped and deleted
    when the process exits (pgserver's cleanup)."""
    if "error" in _SERVER:
        _unavailable(_SERVER["error"])
    if "server" not in _SERVER:
        try:
            import pgserver
            import psycopg  # noqa: F401 - the driver SQLAlchemy's postgresql+psycopg URLs use
        except ImportError as exc:
            _SERVER["error"] = f"pgserver or psycopg is not installed ({exc.name}); pip install -e '.[dev]'"
            _unavailable(_SERVER["error"])
        folder = tempfile.mkdtemp(prefix="lbee-pg-")  # short: the server's Unix socket lives there
        atexit.register(shutil.rmtree, folder, True)
        try:
            server = pgserver.get_server(os.path.join(folder, "data"), cleanup_mode="delete")
        except Exception as exc:  # initdb or pg_ctl failed: say why
            _SERVER["error"] = f"PostgreSQL (pgserver) could not start: {type(exc).__name__}: {exc}"
            _unavailable(_SERVER["error"])
        _SERVER["server"] = server
    return _SERVER["server"]


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL server: a function that returns the URL of a new empty database on it."""
    server = _start_postgres()
    socket_dir = server.get_postmaster_info().socket_dir

    def new_database():
        name = f"lbee_{uuid.uuid4().hex[:12]}"
        server.psql(f"CREATE DATABASE {name};")
        return f"postgresql+psycopg://postgres@/{name}?host={socket_dir}"

    return new_database


def _unavailable(reason):
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL is required in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture
def backend(request, tmp_path):
    """A fresh database URL: SQLite by default, PostgreSQL when parametrised with 'postgresql'."""
    kind = getattr(request, "param", "sqlite")
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'lbee.db'}"
    return request.getfixturevalue("postgres")()


def poll(check, timeout, what, every=0.05):
    """``check()``'s first truthy value, polled every ``every`` seconds; fails after ``timeout`` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(every)


def wait_healthy(proc, base, log_path, timeout=120):
    """Wait until the `lbee serve` subprocess ``proc`` answers /health at ``base`` (its log in the failure)."""
    import httpx

    def healthy():
        assert proc.poll() is None, f"the server exited:\n{open(log_path).read()}"
        try:
            return httpx.get(f"{base}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    poll(healthy, timeout, "the server to start", every=0.2)
