"""What a run whose statements were not tested on held-out images says of them (confirmation skipped or off)."""

from __future__ import annotations


def untested_reason(conf):
    """Why no statement of a run was tested on held-out images (its confirmation was skipped or off), or None.

    An empty list of confirmed statements reads as "tested, and none held" unless this is said beside it: a
    twenty-fifth user's 320-image run was skipped (confirmation needs 500) and every reader said "none confirmed".
    """
    if not isinstance(conf, dict) or conf.get("status") in (None, "done"):
        return None
    reason = str(conf.get("reason") or "")
    return f"confirmation {reason or 'off'}" if conf.get("status") == "off" else reason or "confirmation skipped"


def warn_untested(conf):
    """Warn (`UserWarning`) that a run's statements were not tested, saying why; nothing for a tested run."""
    why = untested_reason(conf)
    if why is not None:
        import warnings

        from .._validation import caller_stacklevel

        warnings.warn(
            f"no statement of this run was tested on held-out images ({why}): an empty list means untested, not "
            "rejected; the run's hypotheses are leads.",
            UserWarning,
            stacklevel=caller_stacklevel(),
        )


def untested_statement_lines(extra, params, i):
    """Hard group ``i``'s statement where it holds, when no statement was tested: how many of those images are hard.

    Without the held-out test only the group's own error rate was shown, measured where the statement was found: "a
    trap under strong glare" read 0.85 there, and holds for 105 images wrong at 23 % (trial 25). None when the run
    tested its statements, or records no hypothesis for the group: [].
    """
    hyps = extra.get("hypotheses") or ()
    if untested_reason(extra.get("confirmation")) is None or i >= len(hyps):
        return []
    n_hard, n_easy = params.get("n_hard"), params.get("n_easy")
    share, by = hyps[i].get("error_concentration"), ""
    counts = hyps[i].get("relevance_counts")
    if counts and sum(counts):  # where the given Γ says it holds, not the encoder's guess (trial 28)
        share, by = counts[0] / sum(counts), f"by the given Γ, of the {sum(counts)} "
    if share is None or not n_hard or n_easy is None:
        return []
    base = n_hard / (n_hard + n_easy)
    line = (
        f"not tested: {by or 'of the '}hard and easy images its statement holds for, {100 * share:.0f} % are hard, "
        f"against {100 * base:.0f} % of all of them"
    )
    if share <= base:  # the group's errors are listed under "What fails"; its statement's images fail less (trial 32)
        line += f": {NOT_SINGLED_OUT}"
    return [line]


#: The verdict on a group whose statement holds for images no harder than the run's on average.
NOT_SINGLED_OUT = "its statement does not single out failures (read the group's errors as stray ones)"


def singles_out_nothing(lines):
    """Whether `untested_statement_lines` ``lines`` end in the `NOT_SINGLED_OUT` verdict."""
    return any(line.endswith(NOT_SINGLED_OUT) for line in lines)
