"""Alembic migrations of the service database (run by :func:`lbee.service.migrate.upgrade`)."""
