"""Alembic migrations of the service database (run by `lbee.service.migrate.upgrade`)."""
