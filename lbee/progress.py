"""Progress of a run's long steps, for whoever listens: the phase, and how far into it (done of total).

The run layer reports its steps here (`report`); nothing listens unless a
caller opened `listening` around the work, as a ``lbee serve`` job does to
show its phase and fraction in the job's row while it embeds and describes. The
terminal's progress bars are separate (tqdm).
"""

from __future__ import annotations

import contextlib
import contextvars

#: The phases of a run, in order (a job's row shows one of them while it runs).
PHASES = ("preparing", "hashing images", "embedding images", "embedding sentences", "describing", "writing the report")

_LISTENER: contextvars.ContextVar = contextvars.ContextVar("lbee_progress", default=None)


@contextlib.contextmanager
def listening(callback):
    """Within the block, `report` calls ``callback(phase, done, total)`` (``done`` / ``total``: int or None).

    The callback is called often (per image while hashing, per batch while embedding): it throttles itself.
    """
    token = _LISTENER.set(callback)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def report(phase, done=None, total=None):
    """Tell the listener (if any) that the run is in ``phase`` (one of `PHASES`), ``done`` of ``total``."""
    callback = _LISTENER.get()
    if callback is not None:
        callback(phase, done, total)
