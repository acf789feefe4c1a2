"""A job's warnings in its own log: the API user reads the job, not the server's stderr."""

from __future__ import annotations

import contextlib
import logging


@contextlib.contextmanager
def job_warnings(lines, settings):
    """Within the block, lbee's warnings (its logger's and ``warnings.warn``'s) go into the job's log too.

    The user of the API reads the job, not the server's stderr: a warning that rows of a table matched nothing
    and were ignored must reach them as it reaches a CLI user. Paths in them are shown as job errors show them.
    """
    import warnings

    from .paths import redact_paths

    class ToLog(logging.Handler):
        def emit(self, record):
            lines.append("warning: " + redact_paths(record.getMessage(), settings))

    handler = ToLog(level=logging.WARNING)
    lbee_logger = logging.getLogger("lbee")
    lbee_logger.addHandler(handler)
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        lines.append("warning: " + redact_paths(str(message), settings))
        shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown
        lbee_logger.removeHandler(handler)
