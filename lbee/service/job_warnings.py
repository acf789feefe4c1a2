"""A job's warnings in its own log: the API user reads the job, not the server's stderr."""

from __future__ import annotations

import contextlib
import logging
import re

_FLAG_AND_KEY = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*) / ([a-z_]+:)")  # "--tau / tau:": the key is there
_FLAG_ON_CLI = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*) on the command line, ")
_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)(?:=| (?=[^\s(]))?")


def entry_advice(text):
    """``text`` with each CLI flag that is also a key of a job's entry named as that key (``encoder: X``).

    lbee's messages give a CLI user the flag to use; a job is configured by its entry's keys
    (`lbee.reports.config_entries.DATASET_KEYS`), so its error and warnings name those. Other flags stay.
    """
    from ..reports.config_entries import DATASET_KEYS

    def key(m):
        name = m.group(1).replace("-", "_")
        if name not in DATASET_KEYS or m.string[max(0, m.start() - 4) : m.start()] == "CLI ":
            return m.group(0)  # not a key, or named as the CLI's beside the key already
        return f"`{name}:`" if m.group(0) == f"--{m.group(1)}" else f"{name}: "  # a flag with a value: key: value

    text = _FLAG_AND_KEY.sub(
        lambda m: m.group(2) if m.group(1).replace("-", "_") == m.group(2)[:-1] else m.group(0), text
    )
    # "--logits on the command line, logits: true in a report config": the key's own form follows, so the flag's
    # goes (rewritten, it read "logits: on the command line, logits: true ...", a fifteenth user)
    text = _FLAG_ON_CLI.sub(lambda m: "" if m.group(1).replace("-", "_") in DATASET_KEYS else m.group(0), text)
    return _FLAG.sub(key, text)


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
            lines.append("warning: " + entry_advice(redact_paths(record.getMessage(), settings)))

    handler = ToLog(level=logging.WARNING)
    lbee_logger = logging.getLogger("lbee")
    lbee_logger.addHandler(handler)
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        lines.append("warning: " + entry_advice(redact_paths(str(message), settings)))
        # the server's log: one line with its timestamp, as every other record (not Python's source line)
        logging.getLogger("py.warnings").warning("%s", message)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown
        lbee_logger.removeHandler(handler)
