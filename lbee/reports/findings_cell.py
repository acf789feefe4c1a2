"""A run's findings in one table cell: its strongest confirmed statements, why none were tested, its first lead.

The batch index and the service's run list show them (`_findings.html.j2`).
"""

from __future__ import annotations

#: Confirmed statements the index lists per run (its report has them all).
INDEX_FINDINGS = 3


def run_findings(folder):
    """A run's strongest confirmed statements (texts) and why none were tested, from its ``explanation.json``.

    The index showed metrics alone, and every report had to be opened to see what fails (trial 25). None for a file
    that cannot be read as a run's (an older lbee's).
    """
    import json
    from pathlib import Path

    try:
        return findings_of(json.loads((Path(folder) / "explanation.json").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def findings_of(explanation):
    """`run_findings` of an ``explanation.json`` already read (a dict); None when it is not a run's."""
    from ..run.confirm_text import ranked_statements
    from ..run.meaningless import found_by_gamma
    from ..run.untested import untested_reason

    try:
        conf = explanation.get("confirmation") or {}
        ranked = [s for s in ranked_statements(conf) if s.get("adds_failure")]
        own = [str(s["text"]) for s in ranked]
    except (AttributeError, KeyError, IndexError, TypeError):  # a run of an older lbee
        return None
    from ..run.identity import means_nothing

    return {
        # random weights: the list says its words mean nothing, as the run's report does (trial 37)
        "meaningless": means_nothing(explanation.get("encoder")),
        "by_gamma": found_by_gamma(ranked),  # the encoder only proposed them (trial 43)
        "statements": own[:INDEX_FINDINGS],
        "more": len(own) - len(own[:INDEX_FINDINGS]),
        "untested": untested_reason(conf),
        "lead": _first_lead(explanation),
    }


def _first_lead(explanation):
    """The first hard group's leading sentence, by the describer read first (None when there is none).

    The run list said "its report lists leads" without one (trial 35).
    """
    from ..run.text import first_method

    methods, sentences = explanation.get("methods") or {}, explanation.get("sentences") or []
    if not isinstance(methods, dict) or not methods or not isinstance(sentences, list):
        return None
    lead = methods.get(first_method(methods)[0]) or {}
    try:
        return str(sentences[int(lead["hard_sentences"][0][0])])
    except (KeyError, IndexError, TypeError, ValueError):
        return None
