"""Schema migrations of the service database (Alembic, scripts in `lbee.service.migrations`)."""

from __future__ import annotations

from pathlib import Path

#: The schema this lbee writes.
HEAD = "0004"
#: The schema of databases made before migrations shipped (tables, no ``alembic_version``).
FIRST = "0001"


def _quiet_alembic():
    """Keep Alembic's INFO lines out of the server's log unless --log-level is debug.

    Alembic logs each routine step at INFO (its plugins as it is imported, "Context impl SQLiteImpl", every
    revision): ten lines at each start of ``lbee serve``. The one line that matters, the upgrade of an existing
    database, is lbee's own (`upgrade`).
    """
    import logging

    if not logging.getLogger().isEnabledFor(logging.DEBUG):
        logging.getLogger("alembic").setLevel(logging.WARNING)


def _config(connection):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    cfg.attributes["connection"] = connection
    return cfg


def current_revision(engine):
    """The database's schema revision (None: empty database)."""
    _quiet_alembic()
    from alembic.runtime.migration import MigrationContext
    from sqlalchemy import inspect

    with engine.connect() as conn:
        rev = MigrationContext.configure(conn).get_current_revision()
        if rev is None and "jobs" in inspect(conn).get_table_names():
            return FIRST
        return rev


def upgrade(engine, revision="head"):
    """Create or upgrade the schema to ``revision`` (default: this lbee's).

    Raises
    ------
    ValueError
        The database is at a revision this lbee does not know (a newer lbee made it).
    """
    import logging

    _quiet_alembic()
    from alembic import command
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from sqlalchemy import inspect

    with engine.begin() as conn:
        cfg = _config(conn)
        known = {r.revision for r in ScriptDirectory.from_config(cfg).walk_revisions()}
        current = MigrationContext.configure(conn).get_current_revision()
        if current is None and "jobs" in inspect(conn).get_table_names():
            command.stamp(cfg, FIRST)  # made by lbee before migrations shipped: the first schema
        elif current is not None and current not in known:
            from .._version import __version__

            raise ValueError(
                f"the database {engine.url.render_as_string(hide_password=True)} has schema revision "
                f"{current!r}, which lbee {__version__} does not know (a newer lbee wrote it; this one "
                f"writes {HEAD!r}): upgrade lbee, or use another database."
            )
        command.upgrade(cfg, revision)
        now = MigrationContext.configure(conn).get_current_revision()
    if current is not None and now != current:  # a new database is no news; an upgraded one is
        logging.getLogger("lbee").info("database schema upgraded: %s -> %s", current, now)
