"""JSON views of the service's rows (jobs, runs, comparisons): no web framework needed."""

from __future__ import annotations

import functools
import json
import math
import os

METRICS = ("ACR", "AHR", "TPR", "JI")


def clean(value):
    """JSON-safe: NaN / inf become None (strict JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def _iso(dt):
    return None if dt is None else dt.isoformat(timespec="seconds") + "Z"


def run_dict(run):
    return {
        "id": run.id,
        "job": run.job_id,
        "dataset": run.dataset,
        "model": run.model,
        "created": _iso(run.created),
        "n_images": run.n_images,
        "n_hard": run.n_hard,
        "seconds": run.seconds,
        "metrics": clean(run.rows),
        "links": {"report": f"/v1/runs/{run.id}/report", "job": f"/v1/jobs/{run.job_id}"},
    }


def own_findings(output, run):
    """`stored_findings` of ``run``, or None when its folder no longer holds its own files (sweep 32v B5)."""
    from .paths import own_files

    return stored_findings(output, run.folder) if own_files(output, run) else None


def stored_findings(output, folder):
    """A stored run's findings (`lbee.reports.findings_cell.findings_of`): its strongest statements, or why none.

    Read from the run's ``explanation.json`` (through `lbee.service.paths.run_file`: never a file linked out of the
    run's folder), once per version of the file; None when it is missing or not a run's. The run list showed
    metrics alone, and every report had to be opened to see what fails (trial 25).
    """
    from .paths import run_file

    path = run_file(output, folder, "explanation.json")
    if path is None:
        return None
    try:
        st = path.stat()
    except OSError:
        return None
    found = _findings(str(path), st.st_mtime_ns, st.st_size, _versions(path.parent))
    return None if found is None else {**found, "statements": list(found["statements"])}


def _versions(folder):
    """(time, size) of the run's files the findings are checked against: a change to one reads them again."""
    from ..reports.stored_table import IMAGES_TABLE

    out = []
    for name in (IMAGES_TABLE, "assignments.parquet"):
        try:
            st = os.lstat(folder / name)
            out.append((st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            out.append(None)
    return tuple(out)


#: The run list reads the findings of an ``explanation.json`` of at most this many bytes (a larger run's are in its
#: report): a 500 MB file took the server to 2.25 GB (sweep 32s).
MAX_FINDINGS_FILE_BYTES = 64 << 20


@functools.lru_cache(maxsize=2048)
def _findings(path, mtime_ns, size, beside=()):
    """`stored_findings` of one version of a file (the key: its path, time and size, and those of ``beside``).

    Read through the descriptor checked, never waiting on a FIFO put in its place (sweep 32s N4: five server threads
    blocked for good), only when it is a regular file of at most `MAX_FINDINGS_FILE_BYTES`, and shown only when the
    file passes the checks its run's ``/explanation`` applies (sweep 32s and 32t B5: an edited file's findings, its
    digest removed or recomputed, were listed while the run's explanation answered 409).
    """
    from .._files import read_bytes_file
    from .._validation import loads_each_key_once
    from ..reports.findings_cell import findings_of
    from ..run.stored import explanations_of

    try:
        text = read_bytes_file(path, "Explanation file", limit=MAX_FINDINGS_FILE_BYTES).decode("utf-8")
        payload = loads_each_key_once(text)
        explanations_of(payload, "the run's explanation.json")  # as its /explanation checks it (sweep 32t B5)
        if beside:  # and against the files beside it, as /explanation serves it: another run's whole, valid
            from ..reports.stored_table import stored_images_table  # explanation.json was listed (sweep 32u B5)

            stored_images_table(os.path.dirname(path))
        return findings_of(payload)
    except (OSError, ValueError, RecursionError, TypeError, AttributeError, KeyError, IndexError):
        return None


def job_dict(job, runs=()):
    base = f"/v1/jobs/{job.id}"
    out = {
        "id": job.id,
        "name": job.name,
        "status": job.status,
        "progress": job.progress,
        "phase": job.phase or job.status,
        "fraction": job.fraction,
        "error": job.error,
        "failures": [{"run": label, "error": msg} for label, msg in json.loads(job.failures or "[]")],
        "attempts": job.attempts,
        "cancel_requested": bool(job.cancel_requested),
        "created": _iso(job.created),
        "started": _iso(job.started),
        "finished": _iso(job.finished),
        "entry": json.loads(job.entry),
        "log": [ln for ln in (job.log or "").splitlines() if ln][-50:],
        "runs": [run_dict(r) for r in runs],
    }
    if job.status == "done":
        out["links"] = {"report": f"{base}/report", "explanation": f"{base}/explanation", "metrics": f"{base}/metrics"}
    return out


def compare_runs(output, a, b):
    """Metric deltas (b − a) per slicer × method, and per method the sentences b gained and lost.

    Each run is read from its own folder (stored runs are never rewritten), so an older run keeps its numbers. The
    callers check first that each folder holds its run's own files (`lbee.service.paths.check_own_files`).
    """
    from ..run.pipeline import load_explanations

    rows_a = {(r["slicer"], r["method"]): r for r in a.rows}
    rows_b = {(r["slicer"], r["method"]): r for r in b.rows}
    metrics = []
    for key in list(rows_a) + [k for k in rows_b if k not in rows_a]:
        ra, rb = rows_a.get(key, {}), rows_b.get(key, {})
        for m in METRICS:
            va, vb = clean(ra.get(m)), clean(rb.get(m))
            metrics.append(
                {
                    "slicer": key[0],
                    "method": key[1],
                    "metric": m,
                    "a": va,
                    "b": vb,
                    "delta": None if va is None or vb is None else vb - va,
                }
            )

    def selected(run):
        from .paths import run_file

        path = run_file(output, run.folder, "explanation.json")  # never a file linked out of the run's folder
        if path is None:
            return {}
        exps, payload = load_explanations(path)
        texts = payload.get("sentences") or []
        return {m: [texts[i] if i < len(texts) else str(i) for i in e.selected] for m, e in exps.items()}

    sa, sb = selected(a), selected(b)
    sentences = {}
    for m in [m for m in sa if m in sb]:
        A, B = set(sa[m]), set(sb[m])
        sentences[m] = {
            "gained": [s for s in sb[m] if s not in A],
            "lost": [s for s in sa[m] if s not in B],
            "kept": [s for s in sb[m] if s in A],
        }
    return {"a": run_dict(a), "b": run_dict(b), "metrics": metrics, "sentences": sentences}
