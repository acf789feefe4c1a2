"""What a run returns: a `DescribeResult` per slicer, gathered in a `RunResult` (`lbee.audit`, `lbee.run.pipeline`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class DescribeResult:
    """Everything ``lbee describe`` writes.

    Attributes
    ----------
    explanations : dict of str to Explanation
    image_ids : list of str
        One per embedded image (row order of every per-image array).
    confidence, performance : ndarray of shape (n,)
    sentences : list of str
    encoder : dict
        The encoder identity.
    sentence_set : str
    failures : list of (str, str)
        Skipped images and why.
    image_paths : list of str or None
    """

    explanations: dict
    image_ids: list
    confidence: np.ndarray
    performance: np.ndarray
    sentences: list
    encoder: dict
    sentence_set: str
    failures: list = field(default_factory=list)
    image_paths: list | None = None
    #: what else the run records: ``confirmation`` (the held-out test: ``status`` 'done', 'skipped' or 'off', and
    #: the tested ``statements``), ``hypotheses`` (one per failure), the split criterion chosen
    extra: dict = field(default_factory=dict)
    #: the fitted lbee.core.partition.Partition (in memory: the slicer's groups before merging, the hypotheses)
    partition: object = field(default=None, repr=False, compare=False)


@dataclass
class RunResult:
    """One dataset × model run: a `DescribeResult` per slicer (the first is the main one), or a per-class result.

    Attributes
    ----------
    results : dict of str to DescribeResult
        Per slicer name, in the settings' order.
    slicer_objects : dict of str to slicer
        The fitted slicer objects of the non-Ward slicers (the HTML page shows their planes).
    per_class : PerClassResult or None
    scores : lbee.run.specs.Scores
    settings : RunSettings
    tau : float
        The τ the describers used.
    inputs : lbee.run.specs.RunInputs
    """

    results: dict
    slicer_objects: dict
    per_class: object
    scores: object
    settings: object
    tau: float
    inputs: object = None
    #: the run's sentences: the set's, then those 'compose' wrote (every explanation indexes this list)
    sentences: list | None = None
    #: Γ of those sentences: the inputs', then the composed relevance of the added ones (pseudo ground truth)
    relevance: object = None

    @property
    def main(self):
        """The first slicer's `DescribeResult`."""
        return next(iter(self.results.values())) if self.results else None

    def __repr__(self):
        """One line: the dataset's size, the slicers and describers, and what was confirmed (not the arrays)."""
        if self.per_class is not None:
            return f"RunResult(per class: {len(self.per_class.explanations)} classes)"
        from .confirm_text import adds_a_failure

        main = self.main
        conf = (main.extra.get("confirmation") or {}) if main is not None else {}
        ranked = [conf["statements"][j] for j in conf.get("ranked") or ()]
        own = sum(adds_a_failure(s) for s in ranked)  # "10 confirmed" read as 10 findings (trial 27): 1 and 9
        tested = (
            f"{own} finding(s), {len(ranked) - own} more confirmed statement(s) that go with them"
            if conf.get("status") == "done"
            else f"not tested ({conf.get('reason') or conf.get('status') or 'no confirmation'})"
        )
        methods = ", ".join(main.explanations) if main is not None else ""
        n = len(main.image_ids) if main is not None else 0
        return f"RunResult({n} images; slicers {', '.join(self.results)}; describers {methods}; {tested})"

    def _repr_html_(self):
        """In a notebook: the findings (or why there are none) and each hard group's verdict and statement."""
        from html import escape

        from .confirm_text import group_verdict, verdict_words
        from .text import first_method
        from .untested import untested_reason

        main = self.main
        if main is None:
            return f"<pre>{escape(repr(self))}</pre>"
        conf = main.extra.get("confirmation") or {}
        found = [s for s in self.confirmed() if s.get("adds_failure")] if conf.get("status") == "done" else []
        why = untested_reason(conf)
        head = (
            "".join(
                f"<li>{escape(s['text'])}: {s['n_in']} held-out images, error rate {s['error_rate_in']:.2f} "
                f"against {s['error_rate_out']:.2f}</li>"
                for s in found
            )
            if found
            else f"<li>nothing tested on held-out images ({escape(why)}): the groups are leads</li>"
            if why
            else "<li>no statement confirmed on held-out images: the groups are leads</li>"
        )
        lead = main.explanations[first_method(main.explanations)[0]]
        rows = "".join(
            f"<tr><td>{i}</td><td>{len(c.indices)}</td><td>{escape(verdict_words(group_verdict(conf, i)))}</td>"
            f"<td>{escape(str((lead.cluster_sentences(i) or ['(no sentence)'])[0]))}</td></tr>"
            for i, c in enumerate(lead.hard_clusters)
        )
        return (
            f"<p>{escape(repr(self))}</p><p>Findings:</p><ul>{head}</ul><table><tr><th>group</th><th>images</th>"
            f"<th>verdict</th><th>statement</th></tr>{rows}</table>"
        )

    def metrics(self, o=None):
        """AHR / ACR / TPR / JI of every slicer's describers against the run's Γ: the rows the CLI prints.

        Γ is the one the run was given (``relevance=`` / ``--relevance``), with the columns of the sentences
        'compose' wrote composed from their conditions' columns (`relevance`): a Γ over the sentence set alone does
        not cover them, so ``lbee.evaluate`` refuses it for a run with a grammar.

        Parameters
        ----------
        o : float, optional
            Severity of the failure sentences S*_β (default: the run's, 0.2 unless set).

        Returns
        -------
        pandas.DataFrame
            One row per slicer and describer: ``slicer``, ``method``, ``AHR``, ``ACR``, ``TPR``, ``JI``,
            ``n_failure_sentences``.

        Raises
        ------
        ValueError
            The run was given no relevance.
        """
        import pandas as pd

        from ..core.evaluation import metric_rows

        if self.per_class is not None:
            return self.per_class.metrics
        if self.relevance is None:
            raise ValueError(
                "this run was given no relevance Γ: pass `relevance=` (an (n, N) bool array, or a table) to "
                "lbee.audit, or --relevance to lbee describe, to score its describers"
            )
        o = getattr(self.settings, "o", None) if o is None else o
        explanations = {name: r.explanations for name, r in self.results.items()}
        return pd.DataFrame(metric_rows(explanations, self.relevance, self.scores.performance, o))

    def confirmed(self):
        """The first slicer's confirmed statements, strongest first; [] and a warning saying why when untested.

        Each is a dict (`lbee.run.confirm_text.ranked_statements`): its text and test, ``adds_failure`` (False for a
        companion of a stronger finding, named by ``goes_with``), ``images`` (the ids of the images it holds for;
        empty for a companion) and ``conditions`` (each condition's verdict; empty for a companion, whose extra
        condition is not tested).
        """
        from .confirm_text import ranked_statements, with_images
        from .untested import warn_untested

        conf = (self.main.extra.get("confirmation") or {}) if self.main is not None else {}
        warn_untested(conf)
        return with_images(ranked_statements(conf), self.main.image_ids if self.main is not None else [])

    def groups(self):
        """The first slicer's hard groups as ``lbee describe --json`` lists them, in the run's order: the leads.

        Each is a dict: ``group``, ``size``, ``verdict`` (None when the run tested nothing), ``error_rate`` (with a
        right / wrong ω), ``sentences`` (each describer's, best first), ``confirmation`` (its test, or None) and
        ``images`` (the ids of its images). A run too small to confirm (`confirmed` is []) still names its groups,
        and their images, here.
        """
        from .summary import summary_dict

        if self.main is None:
            return []
        clusters = next(iter(self.main.explanations.values())).hard_clusters
        ids = self.main.image_ids
        return [
            {**g, "images": [ids[int(i)] for i in clusters[g["group"]].indices]}
            for g in summary_dict(self.main)["hard_groups"]
        ]
