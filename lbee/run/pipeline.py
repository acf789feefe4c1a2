"""End-to-end runs behind ``lbee describe``: inputs -> explanations -> output files."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._version import __version__
from ..io.cache import atomic_write_bytes
from ..core.explanation import Explanation, explain_methods


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
    extra: dict = field(default_factory=dict)


def align_scores(image_ids, image_paths, table_ids):
    """Row of the predictions table for each image, matching id, then path, then file name."""
    lookup = {}
    for row, tid in enumerate(table_ids):
        lookup.setdefault(tid, row)
        lookup.setdefault(Path(tid).name, row)
    rows, missing = [], []
    for iid, path in zip(image_ids, image_paths):
        row = lookup.get(iid, lookup.get(path, lookup.get(Path(path).name)))
        if row is None:
            missing.append(iid)
        rows.append(row)
    if missing:
        raise ValueError(f"{len(missing)} image(s) have no row in the predictions file, first: {missing[:3]}; "
                         "ids must match the manifest 'path' values, the paths relative to the folder, or file names.")
    return np.asarray(rows, dtype=np.int64)


def describe(image_embeddings, sentence_embeddings, *, confidence, performance, sentences, image_ids,
             methods, encoder_identity, sentence_set, failures=(), image_paths=None, hard=None, easy=None,
             extra=None, **explain_kwargs):
    """Run the requested describers and bundle the result as a :class:`DescribeResult`."""
    if hard is not None:
        exps = explain_methods(image_embeddings, sentence_embeddings, methods=methods, hard=hard, easy=easy,
                               sentences=sentences, **explain_kwargs)
    else:
        exps = explain_methods(image_embeddings, sentence_embeddings, methods=methods, confidence=confidence,
                               sentences=sentences, **explain_kwargs)
    return DescribeResult(exps, list(image_ids), np.asarray(confidence, dtype=np.float64),
                          np.asarray(performance, dtype=np.float64), list(sentences), encoder_identity,
                          sentence_set, list(failures), image_paths, dict(extra or {}))


def assignments_table(result):
    """DataFrame (image, split, cluster, confidence, performance); cluster is -1 for neutral images."""
    import pandas as pd

    exp = next(iter(result.explanations.values()))
    n = len(result.image_ids)
    split = np.array(["neutral"] * n, dtype=object)
    cluster = np.full(n, -1, dtype=np.int64)
    for j, c in enumerate(exp.easy_clusters):
        split[c.indices] = "easy"
        cluster[c.indices] = j
    for i, c in enumerate(exp.hard_clusters):
        split[c.indices] = "hard"
        cluster[c.indices] = i
    return pd.DataFrame({"image": result.image_ids, "split": split, "cluster": cluster,
                         "confidence": result.confidence, "performance": result.performance})


def write_outputs(result, out_dir):
    """Write ``explanation.json``, ``assignments.parquet`` and ``report.md`` into ``out_dir``."""
    from ..reports.text import render_markdown

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    payload = {
        "lbee_version": __version__,
        "encoder": result.encoder,
        "sentence_set": result.sentence_set,
        "sentences": result.sentences,
        "images": result.image_ids,
        "skipped_images": [{"path": p, "reason": r} for p, r in result.failures],
        "params": next(iter(result.explanations.values())).params,
        "methods": {m: {k: v for k, v in e.to_dict().items() if k != "sentences"}
                    for m, e in result.explanations.items()},
        **result.extra,
    }
    atomic_write_bytes(out / "explanation.json", json.dumps(payload, indent=1).encode())
    table = assignments_table(result)
    import io

    buf = io.BytesIO()
    table.to_parquet(buf, index=False)
    atomic_write_bytes(out / "assignments.parquet", buf.getvalue())
    atomic_write_bytes(out / "report.md", render_markdown(result).encode())
    return out


def load_explanations(path):
    """Read an ``explanation.json``: (dict of method -> Explanation, the whole payload)."""
    path = Path(path)
    try:
        payload = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"Cannot read explanation file {str(path)!r}: {exc}") from None
    if "methods" not in payload:
        raise ValueError(f"{str(path)!r} is not an lbee explanation.json (no 'methods' key).")
    sentences = payload.get("sentences")
    exps = {m: Explanation.from_dict({**d, "sentences": sentences}) for m, d in payload["methods"].items()}
    return exps, payload


def write_per_class_outputs(result, out_dir, *, image_ids, sentences, sentence_set):
    """Write ``per_class.json`` (every class's explanations), ``per_class_metrics.csv``, ``per_class_summary.csv``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    payload = {
        "lbee_version": __version__,
        "sentence_set": sentence_set,
        "sentences": list(sentences),
        "images": list(image_ids),
        "class_names": result.class_names,
        "skipped": {str(c): why for c, why in result.skipped.items()},
        "classes": {str(c): {m: {k: v for k, v in e.to_dict().items() if k != "sentences"} for m, e in exps.items()}
                    for c, exps in result.explanations.items()},
    }
    atomic_write_bytes(out / "per_class.json", json.dumps(payload).encode())
    atomic_write_bytes(out / "per_class_metrics.csv", result.metrics.to_csv(index=False).encode())
    atomic_write_bytes(out / "per_class_summary.csv", result.summary().to_csv(index=False).encode())
    return out
