"""A job's state and results, read for a person: its progress in words, and the statements it confirmed.

The client (`lbee.service.client`) and ``lbee submit`` print these; they need no server.
"""

from __future__ import annotations

import time


def describe_progress(job, t0=None):
    """One line for a job's state: ``[12 s] running · embedding images 40% (1200 of 3000)``."""
    when = "" if t0 is None else f"[{time.monotonic() - t0:4.0f} s] "
    phase, fraction = job.get("phase") or job["status"], job.get("fraction")
    line = f"{when}{job['status']}"
    if phase != job["status"]:
        line += f" · {phase}"
    detail = job.get("progress") or ""
    if fraction == 0 and detail.startswith(phase + ": 0 of "):  # a phase just begun: its size, not a 0 % that a
        return line + f" ({detail.rsplit(' of ', 1)[1]} to do)"  # fast phase never updates before the next
    if fraction is not None:
        line += f" {100 * fraction:.0f}%"
    if detail and detail != phase and not detail.startswith(phase + ":"):
        line += f" · {detail}"
    elif detail.startswith(phase + ":"):
        line += f" ({detail[len(phase) + 1 :].strip()})"
    return line


def progress_lines(job, seen, t0=None):
    """The lines to print for a job's new state: the phases it passed between two polls, then `describe_progress`.

    ``seen`` (a set, updated) holds the phases already shown; the job's log names every phase it entered
    (`lbee.service.job_progress.PHASE_LINE`), so a phase shorter than a poll is still said, in order.
    """
    from .job_progress import PHASE_LINE

    current = job.get("phase") or job["status"]
    out = []
    logged = [line[len(PHASE_LINE) :] for line in job.get("log") or () if line.startswith(PHASE_LINE)]
    if current in logged:  # the log names a phase before the job's row does: a later one waits for the next poll
        logged = logged[: logged.index(current)]
    for phase in logged:
        if phase not in seen and phase != current:
            seen.add(phase)
            when = "" if t0 is None else f"[{time.monotonic() - t0:4.0f} s] "
            out.append(f"{when}running · {phase}")  # it was running then, whatever it is now
    seen.add(current)
    out.append(describe_progress(job, t0))
    return out


#: What `confirmed_statements` gives of each statement, besides whether it adds a failure.
STATEMENT_FIELDS = ("text", "n_in", "error_rate_in", "error_rate_out", "lift", "effect_low", "q_value")


def confirmed_statements(explanation):
    """A run's confirmed statements, strongest first, from its ``explanation.json`` (a dict).

    Each is a dict: ``text``, ``n_in`` (held-out images it holds for), ``error_rate_in``, ``error_rate_out``,
    ``lift``, ``effect_low``, ``q_value``, and ``adds_failure``: False for one that confirms only as a companion
    of a stronger statement (a condition that goes with a failure; ``goes_with`` then names the strongest). An
    eleventh user had only the whole explanation, whose confirmation block begins with the held-out indices.
    []: nothing confirmed, or the run did not confirm (``explanation["confirmation"]["status"]`` says why).
    A ``ValueError`` for an explanation edited since it was written (its ``content_sha256``) or a confirmation
    block lbee did not write (`lbee.run.confirmation_record`).
    """
    from ..core.explanation_payload import content_digest
    from ..run.confirm_text import adds_a_failure, stronger_than
    from ..run.confirmation_record import check_confirmation_record

    if not isinstance(explanation, dict):
        raise ValueError(f"the explanation is a {type(explanation).__name__}; expected the object of explanation.json")
    recorded = explanation.get("content_sha256")
    if recorded is not None and recorded != content_digest(explanation):  # as the loader refuses it
        raise ValueError(
            "the explanation's content differs from what it was written with (content_sha256): it was edited"
        )
    check_confirmation_record(explanation, "the explanation")
    conf = explanation.get("confirmation") or {}
    statements = conf.get("statements") or []
    out = []
    try:
        for j in conf.get("ranked") or []:
            s = statements[j]
            entry = {k: s.get(k) for k in STATEMENT_FIELDS}
            entry["adds_failure"] = adds_a_failure(s)
            above = [] if entry["adds_failure"] else stronger_than(s, statements)
            if above:
                entry["goes_with"] = above[0]
            out.append(entry)
    except (TypeError, KeyError, IndexError, AttributeError):  # an answer no lbee wrote: said, not a traceback
        raise ValueError(
            "the explanation's 'confirmation' is not one lbee writes (its 'ranked' statements cannot be read)"
        ) from None
    return out
