"""A job's phase and fraction in its row while it runs, from the run layer's `lbee.progress` reports."""

from __future__ import annotations

import time

#: Seconds between two writes of a job's progress within one phase (a new phase is written at once).
PROGRESS_EVERY = 1.0


#: How a job's log names each phase it entered (`lbee submit` prints the ones its polls fell between).
PHASE_LINE = "phase: "


def job_listener(write, every=PROGRESS_EVERY, clock=time.monotonic, on_phase=None):
    """A `lbee.progress.listening` callback that writes a job's progress, throttled.

    Parameters
    ----------
    write : callable
        ``write(phase=str, fraction=float or None, progress=str)``: the job's heartbeat with these values (it
        raises to stop the job when a cancel came).
    every : float, default=1.0
        Within a phase, at most one write per ``every`` seconds, and the phase's last step (done = total).
    on_phase : callable, optional
        ``on_phase(phase)`` when a new phase starts: the job's log keeps it (a phase shorter than a client's poll
        is otherwise never seen).
    """
    last = {"phase": None, "at": 0.0}

    def on_progress(phase, done, total):
        now = clock()
        finished = total is not None and done is not None and done >= total
        if phase == last["phase"] and now - last["at"] < every and not finished:
            return
        if phase != last["phase"] and on_phase is not None:
            on_phase(phase)
        last.update(phase=phase, at=now)
        counted = total is not None and done is not None and total > 0
        write(
            phase=phase,
            fraction=min(1.0, done / total) if counted else None,
            progress=f"{phase}: {done} of {total}" if counted else phase,
        )

    return on_progress
