"""What a run's confirmed statements are worth when its encoder means nothing (random weights, an encoder's caveat).

The terminal, ``report.md``, the HTML reports and ``lbee submit`` say it beside the findings.
"""

from __future__ import annotations

#: What "confirmed" says, and does not, in a run whose sentences mean nothing (random weights, an encoder's caveat):
#: a thirty-seventh user read a random-weights run's "Findings ... CONFIRMED" as a named failure.
MEANINGLESS_FINDINGS = (
    "the sentences mean nothing here (the warning at the top): a confirmed statement's images do fail more often, "
    "but its words do not say what they share"
)
#: The same run given Γ: the encoder only proposed the sentences, Γ said where each holds (trial 43 read "its words
#: do not say what they share" beside two statements that were exactly its planted failures).
MEANINGLESS_BUT_GAMMA = (
    "the encoder means nothing here (the warning at the top): it only proposed the sentences; where each statement "
    "holds was read from the given Γ, so Γ, not the encoder, found these"
)

#: The last line of such a run in the terminal (a sixteenth user read the confirmed statements as real); given Γ,
#: it must not take back what the findings said Γ found (sweep 32bd N4).
REMEMBER = (
    "Remember the warning at the top: with this encoder, the sentences and statements above mean nothing about your "
    "images."
)
REMEMBER_GIVEN_GAMMA = (
    "Remember the warning at the top: with this encoder, the sentences above say nothing of your images by "
    "themselves; only where the given Γ says a statement holds is read from your images."
)


def found_by_gamma(statements):
    """Whether every one of ``statements`` (dicts with "region") holds where the given Γ says, not the encoder."""
    return bool(statements) and all(s.get("region") == "relevance" for s in statements)


def meaningless_caveat(statements):
    """What "confirmed" is worth in a run whose encoder means nothing, given its confirmed ``statements``."""
    return MEANINGLESS_BUT_GAMMA if found_by_gamma(statements) else MEANINGLESS_FINDINGS
