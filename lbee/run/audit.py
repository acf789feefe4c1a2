"""`audit`: what `lbee describe` does, from arrays in Python, in one call.

`lbee.explain` gives one describer's explanation; the command line does more: it holds images out and confirms
each statement on them, merges the groups of a grammar's sentences into one hypothesis per failure, tests which
conditions each statement needs, and ranks the findings. A twenty-second user rebuilt that from thirty lines of
the library guide. `audit` runs the command line's own analysis (`lbee.run.pipeline.analyse`) on arrays.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def audit(
    image_embeddings,
    sentence_embeddings,
    *,
    sentences,
    probs=None,
    logits=False,
    labels=None,
    confidence=None,
    performance=None,
    relevance=None,
    tau=None,
    image_ids=None,
    settings=None,
    provenance=None,
):
    """Find, describe and confirm where a model fails, as `lbee describe` does.

    Parameters
    ----------
    image_embeddings : array-like of shape (n, d)
        The images' embeddings, one row an image (``lbee embed``'s ``embeddings.npy``).
    sentence_embeddings : array-like of shape (N, d)
        The embeddings of ``sentences``, in their order, by the same encoder.
    sentences : list of str, path-like or lbee.io.sentences.SentenceSet
        The N sentences; or a sentence file or set (one from `lbee sentences generate GRAMMAR` brings its grammar,
        and then 'compose' leads and the groups are merged into one hypothesis per failure).
    probs : array-like of shape (n, C), optional
        The model's class probabilities. With ``labels``, φ is the true class's probability and ω whether the
        prediction is right (the command line's label-aware split); without them, φ is −entropy.
    logits : bool, default=False
        ``probs`` holds logits (raw scores): a softmax is applied first, as the command line's ``--logits``.
    labels : array-like of int, shape (n,), optional
        True classes (indices into the columns of ``probs``).
    confidence : array-like of shape (n,), optional
        φ, higher for an easier image, instead of ``probs`` (with ``performance``).
    performance : array-like of shape (n,), optional
        ω, higher for a better outcome (for a classifier 1 right, 0 wrong; any finite number, as a predictions
        table's ``performance`` column), instead of ``probs`` (with ``confidence``).
    relevance : array-like of bool, shape (n, N), optional
        Γ: statements are then judged by it, and the metrics computed.
    tau : float, optional
        The encoder's threshold (default: CLIP's).
    image_ids : list of str, optional
        Names of the images, for the results (default: "0", "1", ...).
    settings : RunSettings, optional
        Every other knob (``confirm``, ``clusters``, ``methods``, ...), as the command line's options.
    provenance : dict, optional
        The record `lbee.io.provenance.load_embeddings` returns with ``image_embeddings``: the encoder and its
        weights travel into the result and its reports (a run on random weights carries their banner, and warns),
        and its τ is the default of ``tau``, as on the command line. Without it the reports say "encoder unknown".
        A record of other rows (its ``data_sha256``), or of ids other than ``image_ids`` (its ``ids_sha256``), is
        refused.

    Returns
    -------
    RunResult
        ``result.main.explanations`` per describer, and ``result.confirmed()``: the findings, strongest first.
    """
    from .._validation import as_bool_matrix, as_float_matrix, check_real
    from ..io.provenance import warn_assumed_tau
    from .pipeline import analyse
    from .settings import RunSettings
    from .specs import RunInputs

    # every input passes the readers the command line's inputs pass (sweep 32e: logits taken for probabilities,
    # a NaN in Γ taken as "relevant", where the command line and lbee.evaluate refuse them)
    X, S = (
        as_float_matrix(image_embeddings, "image_embeddings"),
        as_float_matrix(sentence_embeddings, "sentence_embeddings"),
    )
    texts, conditions, grammar, name = _sentences(sentences)
    if X.shape[1] != S.shape[1]:
        raise ValueError(f"embeddings must be (n, d) and (N, d) of one d; received {X.shape} and {S.shape}.")
    if S.shape[0] != len(texts):
        raise ValueError(f"`sentence_embeddings` has {S.shape[0]} rows for {len(texts)} sentences; expected one each.")
    if not isinstance(logits, (bool, np.bool_)):  # "yes" or 1 would have been taken as True in silence
        raise TypeError(f"`logits` is {logits!r}; expected True or False.")
    if logits and probs is None:  # it says how to read probs: without them it would be ignored (sweep 32aq N3)
        raise ValueError("`logits=True` says `probs` holds logits, but no `probs` was given; expected probs=.")
    scores = _scores(X.shape[0], probs, labels, confidence, performance, logits=logits)
    ids = [str(i) for i in range(X.shape[0])] if image_ids is None else [str(i) for i in image_ids]
    if len(ids) != X.shape[0] or len(set(ids)) != len(ids):
        raise ValueError(f"`image_ids` must be {X.shape[0]} distinct names, one per image; received {len(ids)}.")
    from .._validation import INVISIBLE, line_break_in

    for i, image_id in enumerate(ids):  # as the tables' id columns are read (an id is one line of every output)
        if image_ids is not None and (image_ids[i] is None or not image_id.strip()):
            raise ValueError(f"`image_ids[{i}]` is {image_ids[i]!r}; expected an image id (blank ids are refused).")
        bad = line_break_in(image_id)
        if bad is not None:
            raise ValueError(
                f"`image_ids[{i}]` holds U+{ord(bad):04X} ({INVISIBLE}); expected an image id of visible text."
            )
    if settings is not None and not isinstance(settings, RunSettings):
        raise TypeError(
            f"`settings` is a {type(settings).__name__}; expected an lbee.RunSettings, e.g. RunSettings(clusters=3)."
        )
    rel = None if relevance is None else as_bool_matrix(relevance, "relevance", (X.shape[0], len(texts)))
    encoder = _encoder_of(provenance, X, None if image_ids is None else ids)
    if tau is None and provenance is not None and provenance.get("tau") is not None:
        tau = provenance["tau"]  # the encoder's own τ, as lbee describe reads it from the record
    if tau is not None:
        tau = check_real(tau, "tau", minimum=-1.0)
        if tau > 1:
            raise ValueError(f"`tau` is a cosine similarity in [-1, 1]; received {tau}.")
    else:
        warn_assumed_tau(  # arrays, whatever files they came from (a twenty-fourth user's had sidecars)
            RunSettings().resolved_tau(None),
            "the embeddings",
            "tau=, e.g. the 'tau' of the record lbee.io.provenance.load_embeddings returns with them",
            why="arrays passed to lbee.audit",
        )
    inputs = RunInputs(
        embeddings=X,
        sentence_embeddings=S,
        sentences=texts,
        image_ids=ids,
        image_paths=None,
        thumbnails=None,
        labels=None if labels is None else np.asarray(labels),
        relevance=rel,
        relevance_source="" if rel is None else "given",
        encoder_tau=tau,
        encoder=encoder,
        sentence_set=name,
        sentence_conditions=conditions,
        grammar=grammar,
    )
    return analyse(inputs, scores, settings or RunSettings())


def _sentences(sentences):
    """(texts, conditions or None, grammar or None, name) of a list, a sentence file or a `SentenceSet`."""
    from ..io.sentences import SentenceSet, load_sentence_set

    if isinstance(sentences, (str, Path, SentenceSet)):
        sset = sentences if isinstance(sentences, SentenceSet) else load_sentence_set(sentences)
        conds = None if sset.conditions is None else list(sset.conditions)
        return list(sset.sentences), conds, sset.grammar, sset.name
    from ..io.sentences import parse_sentences

    texts = [str(s) for s in sentences]
    if not texts or any("\n" in t or "\r" in t for t in texts):
        raise ValueError(
            "`sentences` must be the N embedded sentences, each one line of text; received none or a "
            "sentence with a line break."
        )
    parsed, _ = parse_sentences("\n".join(texts), "`sentences`")  # the sentence file's rules: no repeat, visible
    if list(parsed) != [t.strip() for t in texts]:
        raise ValueError(
            "`sentences` holds a blank or '#' line, which a sentence file would skip; give sentences only."
        )
    return texts, None, None, "sentences"


def _scores(n, probs, labels, confidence, performance, *, logits=False):
    """`Scores` from class probabilities (and labels), or from φ and ω as given."""
    from .._validation import as_float_matrix, as_float_vector
    from .scores import _label_aware_phi
    from .specs import Scores

    if probs is not None:
        import pandas as pd

        from ..io.probabilities import check_probabilities
        from ..scoring.confidence import scores_from_probabilities

        if confidence is not None or performance is not None:
            raise ValueError("give `probs` (and `labels`), or `confidence` and `performance`: not both.")
        from ..scoring.confidence import softmax

        table = pd.DataFrame(softmax(as_float_matrix(probs, "probs")) if logits else as_float_matrix(probs, "probs"))
        table.columns = [f"prob_{c}" for c in table.columns]
        probs = check_probabilities(table, list(table.columns), "`probs`")  # the CLI's rule: in [0, 1], rows sum to 1
        ms = scores_from_probabilities(probs, labels=labels)
        if ms.confidence.shape[0] != n:
            raise ValueError(f"`probs` has {ms.confidence.shape[0]} rows for {n} images.")
        phi, words, extra = _label_aware_phi(ms, "auto")
        omega = "correctness" if labels is not None else "−entropy (no labels)"
        return Scores(phi, ms.performance, words, omega, ms, None, extra)
    if confidence is None or performance is None:
        raise ValueError("give `probs` (and `labels`), or both `confidence` and `performance`.")
    # ω any finite number, higher better, as a predictions table's performance column (a score, an IoU, −loss)
    phi, omega = as_float_vector(confidence, "confidence", n), as_float_vector(performance, "performance", n)
    return Scores(phi, omega, "the confidence given", "the performance given")


def _encoder_of(provenance, X, ids):
    """The encoder identity a run of the embeddings ``X`` records: the provenance record's, or "precomputed".

    A library run's reports said "encoder unknown", and one on random weights had no banner, where the command
    line reading the same files shows both (trial 36). The record must be these rows' (their digest), and the ids
    given, where it records its ids file, those ids in that order: another array's record named the run's rows by
    another encoder, τ and digest (sweep 32au B3), as the command line refuses.
    """
    shape = X.shape
    if provenance is None:
        return {"encoder": "precomputed"}
    if not isinstance(provenance, dict) or not isinstance(provenance.get("encoder"), dict):
        what = "a dict without an 'encoder' record" if isinstance(provenance, dict) else type(provenance).__name__
        raise TypeError(
            f"`provenance` is {what}; expected the record lbee.io.provenance.load_embeddings returns with the image "
            "embeddings (a dict with 'encoder')."
        )
    if provenance.get("kind", "image_embeddings") != "image_embeddings":
        raise ValueError(f"`provenance` is a record of {provenance['kind']}; expected the image embeddings' record.")
    from ..io.provenance import record_problems

    problems = record_problems(provenance)  # the rule a sidecar read from disk passes
    if problems:
        raise ValueError(
            f"`provenance` is not a record lbee writes beside embeddings: {'; '.join(problems)}; expected the record "
            "lbee.io.provenance.load_embeddings returns."
        )
    if provenance["shape"] != list(shape):
        raise ValueError(
            f"`provenance` records embeddings of shape {tuple(provenance['shape'])}; `image_embeddings` has shape "
            f"{tuple(shape)}: expected the record of these embeddings."
        )
    from ..io.provenance import array_digest

    if provenance["data_sha256"] != (digest := array_digest(X)):
        raise ValueError(
            f"`provenance` records rows of digest {provenance['data_sha256'][:16]}…, but `image_embeddings` digest "
            f"to {digest[:16]}…: expected the record of these embeddings (load_embeddings returns the two together)."
        )
    if ids is not None and provenance.get("ids_sha256") is not None:
        from ..io.row_ids import ids_digest

        if ids_digest(ids) != provenance["ids_sha256"]:
            raise ValueError(
                "`image_ids` are not the ids written with these embeddings (their ids.txt), in its order: each row "
                "would be named as another image; expected ids.txt's lines, as lbee.io.row_ids reads them."
            )
    # the rows' digest, so that an export finds these very rows again, as the command line's
    encoder = dict(provenance["encoder"], image_embeddings_sha256=provenance["data_sha256"])
    from .identity import random_weights_banner

    banner = random_weights_banner(encoder)
    if banner is not None:
        import warnings

        from .._validation import caller_stacklevel

        warnings.warn(banner, UserWarning, stacklevel=caller_stacklevel())
    return encoder
