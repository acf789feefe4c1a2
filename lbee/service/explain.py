"""``POST /v1/explain``: arrays in, explanations out, through :func:`lbee.explain_methods`."""

from __future__ import annotations

import io

import numpy as np

#: The RunSettings knobs that apply to embeddings already in hand (the others need a dataset and a model).
EXPLAIN_KNOBS = ("a", "clusters", "easy_clusters", "k", "tau", "methods", "ward")
ARRAY_FIELDS = ("image_embeddings", "sentence_embeddings", "confidence", "hard", "easy")


def _array(value, name, dtype):
    if isinstance(value, np.ndarray):
        arr = value
    else:
        try:
            arr = np.asarray(value, dtype=dtype)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"`{name}` must be a numeric array (nested lists of equal length); {exc}") from None
    if arr.dtype == object:
        raise ValueError(f"`{name}` must be a numeric array; received objects.")
    return arr


def load_npy_bytes(data, name):
    """A ``.npy`` upload (no pickles)."""
    try:
        return np.load(io.BytesIO(data), allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"`{name}` is not a readable .npy file: {exc}") from None


def explain_request(body):
    """Run the analysis of one request.

    Parameters
    ----------
    body : dict
        ``image_embeddings`` (n, d), ``sentence_embeddings`` (N, d), ``confidence``
        (n,) or ``hard`` / ``easy`` (n,) masks, optional ``sentences`` (N strings)
        and ``settings`` (the knobs of :data:`EXPLAIN_KNOBS`, validated by
        :class:`lbee.RunSettings`).

    Returns
    -------
    dict
        ``lbee_version``, ``settings`` (as used), ``warnings`` (clusters capped or tiny: what to change) and
        ``explanations`` (method -> ``Explanation.to_dict()``, whose params record the clusters formed).

    Raises
    ------
    ValueError, TypeError
        Naming the field, what was received and what is expected.
    """
    import lbee
    from lbee.run.settings import RunSettings

    if not isinstance(body, dict):
        raise ValueError(f"the body must be a JSON object; received {type(body).__name__}.")
    unknown = [k for k in body if k not in ARRAY_FIELDS + ("sentences", "settings")]
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(map(repr, unknown))}; expected "
                         f"{', '.join(ARRAY_FIELDS + ('sentences', 'settings'))}.")
    for name in ("image_embeddings", "sentence_embeddings"):
        if body.get(name) is None:
            raise ValueError(f"`{name}` is required: an array of shape ({'n' if name[0] == 'i' else 'N'}, d).")
    settings = body.get("settings") or {}
    if not isinstance(settings, dict):
        raise ValueError(f"`settings` must be an object of knobs; received {type(settings).__name__}.")
    other = [k for k in settings if k not in EXPLAIN_KNOBS and k in RunSettings.knobs()]
    if other:
        raise ValueError(f"settings {', '.join(map(repr, other))} need a dataset and a model (use POST /v1/jobs); "
                         f"/v1/explain takes {', '.join(EXPLAIN_KNOBS)}.")
    st = RunSettings.from_mapping(settings, where="settings")
    X = _array(body["image_embeddings"], "image_embeddings", np.float32)
    S = _array(body["sentence_embeddings"], "sentence_embeddings", np.float32)
    masks = {}
    for name in ("confidence", "hard", "easy"):
        if body.get(name) is not None:
            masks[name] = _array(body[name], name, np.float64 if name == "confidence" else bool)
    sentences = body.get("sentences")
    if sentences is not None and not (isinstance(sentences, list) and all(isinstance(s, str) for s in sentences)):
        raise ValueError("`sentences` must be a list of strings, one per row of sentence_embeddings.")
    exps = lbee.explain_methods(X, S, methods=list(st.methods), a=st.a, n_clusters=st.n_clusters,
                                n_easy_clusters=st.easy_clusters, k=st.k, tau=st.resolved_tau(None),
                                sentences=sentences, ward=st.ward, **masks)
    from lbee.core.clustering import cluster_notes

    for e in exps.values():
        e.params["n_hard_clusters_formed"] = len(e.hard_clusters)
        e.params["n_easy_clusters_formed"] = len(e.easy_clusters)
    notes = cluster_notes(next(iter(exps.values()))) if exps else []
    first = next(iter(exps.values()), None)
    if first is not None and first.params.get("n_clusters", 0) > first.params.get("n_hard", 10**12):
        from lbee.core.clustering import capped_clusters_message

        notes.insert(0, capped_clusters_message(first.params["n_clusters"], first.params["n_hard"],
                                                option="settings.clusters"))
    if st.tau is None:  # bare arrays carry no encoder: say which τ was assumed (lbee.io.provenance)
        notes.append(f"settings.tau not given and JSON arrays carry no provenance: τ = {st.resolved_tau(None):g} "
                     "(CLIP's) was assumed; pass settings.tau for another encoder's embeddings (the SpotCheck "
                     "encoder's is in the .provenance.json that `lbee embed` writes).")
    used = {k: v for k, v in st.to_dict().items() if k in EXPLAIN_KNOBS}
    used["tau"] = st.resolved_tau(None)
    return {"lbee_version": lbee.__version__, "settings": used, "warnings": notes,
            "explanations": {m: e.to_dict() for m, e in exps.items()}}
