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

import os
import shutil
import tempfile
import uuid

import pytest

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL server for the session: a function that returns the URL of a new empty database."""
    try:
        import pgserver
        import psycopg  # noqa: F401 - the driver SQLAlchemy's postgresql+psycopg URLs use
    except ImportError as exc:
        _unavailable(f"pgserver or psycopg is not installed ({exc.name}); pip install -e '.[dev]'")
    folder = tempfile.mkdtemp(prefix="lbee-pg-")  # short: the server's Unix socket lives there
    try:
        server = pgserver.get_server(os.path.join(folder, "data"), cleanup_mode="delete")
    except Exception as exc:  # initdb or pg_ctl failed: say why
        shutil.rmtree(folder, ignore_errors=True)
        _unavailable(f"PostgreSQL (pgserver) could not start: {type(exc).__name__}: {exc}")
    socket_dir = server.get_postmaster_info().socket_dir

    def new_database():
        name = f"lbee_{uuid.uuid4().hex[:12]}"
        server.psql(f"CREATE DATABASE {name};")
        return f"postgresql+psycopg://postgres@/{name}?host={socket_dir}"

    try:
        yield new_database
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


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
