"""The held-out marks of a report's sentences: confirmed, not confirmed, or going with a stronger statement."""

from __future__ import annotations


def leading_text(conf, i):
    """The text of hard group ``i``'s leading statement in a run's confirmation (None when there is none)."""
    groups = conf.get("groups") or ()
    if i >= len(groups) or groups[i].get("statement") is None:
        return None
    return conf["statements"][groups[i]["statement"]]["text"]


def held_out_state(statement, conf):
    """A tested statement's mark: True (a failure of its own), False (not confirmed), or those it goes with.

    Confirmed but adding no failure beyond stronger statements (a condition that goes with a failure), the mark
    names those statements in words. An eleventh user's page gave the confounder's sentences the same green mark
    as the failure's own.
    """
    from ..run.confirm_text import adds_a_failure, stronger_than

    if not statement["confirmed"]:
        return False
    above = [] if adds_a_failure(statement) else stronger_than(statement, conf["statements"])
    if not above:
        return True
    more = f" and {len(above) - 1} more" if len(above) > 1 else ""
    return f"“{above[0]}”{more}"


def held_out_mark(confirmed, text, leading):
    """A sentence's held-out mark: 'confirmed' wherever it is, 'not confirmed' on the group's leading statement only.

    A seventh user's page carried 15 red marks a group, saying what the group's own line says once. A confirmed
    statement that goes with a stronger one is marked so wherever it is (its mark is that statement's text).
    """
    if confirmed or (confirmed is not None and text == leading):
        return confirmed
    return None
