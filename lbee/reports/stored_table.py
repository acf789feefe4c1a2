"""A stored run's per-image table read back, checked against the run's other files.

`lbee serve`'s group pages and ``lbee export spotlight`` read a run folder written earlier, maybe edited since:
the table must agree with ``explanation.json`` (the same images in the same order, each in its split and group,
its values those the run recorded) and with ``assignments.parquet`` (matched by image id).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .browse import IMAGE_COLUMNS, IMAGES_TABLE, TABLE_COLUMNS, _lead

#: The typed columns of `IMAGES_TABLE`: (column, numpy dtype kinds, what they hold).
COLUMN_KINDS = (
    ("group", "iu", "integers"),
    ("confidence", "iuf", "numbers"),
    ("performance", "iuf", "numbers"),
    ("holds", "b", "true / false / missing"),
)
#: The files of a run folder `stored_images_table` reads.
RUN_FILES = (IMAGES_TABLE, "explanation.json", "assignments.parquet")


def stored_images_table(run_dir):
    """The per-image table of a stored run folder.

    `IMAGES_TABLE` when the run wrote one (with its report); otherwise built from ``explanation.json``
    and ``assignments.parquet`` (``lbee describe`` without ``--html``: no labels, predictions or Γ).
    Either way the table must agree with ``explanation.json`` when the folder holds it: the same images in the
    same order, each in its split and group (an edited or another run's table is refused, naming the first
    differing row), and ``assignments.parquet`` is matched by image id, never by row position.

    Raises
    ------
    ValueError
        The folder holds neither, a file is not a regular file, or the files disagree.
    """
    import pandas as pd

    from ..run.outputs import check_assignments_digest

    run_dir = Path(run_dir)
    images_path, expl_path, assign_path = (
        run_dir / n for n in (IMAGES_TABLE, "explanation.json", "assignments.parquet")
    )
    for path in (images_path, expl_path, assign_path):
        if (path.exists() or path.is_symlink()) and not path.is_file():  # a FIFO would block, a folder is no table
            raise ValueError(f"{str(path)!r} is not a regular file; expected the file lbee wrote there.")
    if not expl_path.is_file() and not images_path.is_file():
        if (run_dir / "per_class.json").is_file():  # a per-class run: an image can be in two classes' groups
            raise ValueError(
                f"{str(run_dir)!r} holds a per-class run (per_class.json), which has no per-image table: an image "
                "can be in the groups of two classes. Export or browse a whole-dataset run (lbee describe without "
                "--per-class)."
            )
        raise ValueError(
            f"{str(run_dir)!r} holds neither {IMAGES_TABLE} nor explanation.json; expected the output folder of "
            "`lbee describe --out FOLDER`, `lbee report` or `lbee demo`."
        )
    truth = None
    if expl_path.is_file():
        from ..run.pipeline import load_explanations

        exps, payload = load_explanations(expl_path)
        first = _lead(exps)
        ids = [str(i) for i in payload.get("images") or []]
        split, group = first.split_and_group(len(ids))
        older_split = split.astype(str)  # before the held-out images were named so (a table written then)
        split = with_held_out(split, payload.get("confirmation")).astype(str)
        truth = (ids, split, group, first, payload.get("sentences") or [])
        older = next(iter(exps.values()))  # a table written before it followed the describer read first
    if images_path.is_file():
        table = _read_parquet(images_path, "Per-image table")
        missing = [c for c in IMAGE_COLUMNS if c not in table.columns]
        if missing:
            raise ValueError(
                f"{str(images_path)!r} has no column(s) {', '.join(missing)}; expected "
                f"{', '.join(IMAGE_COLUMNS)} (written by lbee with report.html)."
            )
        for column, kinds, what in COLUMN_KINDS:  # text in a number's column made the service's page a 500
            if table[column].dtype.kind not in kinds and not table[column].isna().all():
                raise ValueError(
                    f"{str(images_path)!r}: column {column!r} holds {table[column].dtype} values; expected {what} "
                    "(the table lbee wrote: an edit is refused)."
                )
        if truth is not None:
            ids, split, group, first, texts = truth
            rows = [(str(a), str(b), int(c)) for a, b, c in zip(table["image"], table["split"], table["group"])]
            if rows != list(zip(ids, older_split.tolist(), group.tolist())):
                _check_rows(images_path, "explanation.json", rows, list(zip(ids, split.tolist(), group.tolist())))
            loose = np.flatnonzero(~((split == "hard") & (group >= 0)) & table["sentence"].notna().to_numpy())
            if loose.size:  # only a hard group's images carry its sentence (sweep 27: a held-out row had one)
                raise ValueError(
                    f"{str(images_path)!r} row {loose[0] + 1}: a sentence for an image in no hard group; expected the "
                    "files of one run (edited, or from another run)."
                )
            said = _top_sentences(first, texts, len(ids))  # each hard image's group sentence, as the run chose it
            hard = np.flatnonzero((split == "hard") & (group >= 0))  # hard images in no hypothesis have no sentence
            written = table["sentence"].iloc[hard].tolist()
            if written != _top_sentences(older, texts, len(ids))[hard].tolist():
                _check_rows(images_path, "explanation.json", written, said[hard].tolist())
        if assign_path.is_file():  # φ and ω as the run wrote them
            assign = _read_assignments(assign_path)
            _check_rows(images_path, "assignments.parquet", table["image"].astype(str).tolist(), assign[0])
            for column, values in zip(("confidence", "performance"), assign[1:]):
                got = table[column].to_numpy(np.float64)
                if not np.allclose(got, values, equal_nan=True):
                    r = int(np.flatnonzero(~np.isclose(got, values, equal_nan=True))[0])
                    raise ValueError(
                        f"{str(images_path)!r} row {r + 1}: {column} {got[r]!r} where assignments.parquet has "
                        f"{values[r]!r}; expected the files of one run (edited, or from another run)."
                    )
            if truth is not None:  # φ and ω edited in both tables alike made a failure's page say error rate 0.00
                check_assignments_digest(payload, assign[3], assign_path)
                _check_values(assign_path, assign[1], assign[2], first, payload)
                _check_clusters(assign_path, assign[3], older_split, group)
        if truth is not None and payload.get("performance") == "correctness":  # ω is label == prediction
            both = table["label"].notna() & table["prediction"].notna()
            right = (table["label"].astype(str) == table["prediction"].astype(str)).to_numpy()
            off = np.flatnonzero(both.to_numpy() & (right != (table["performance"].to_numpy() == 1)))
            if off.size:
                raise ValueError(
                    f"{str(images_path)!r} row {off[0] + 1}: label, prediction and performance disagree (ω is the "
                    "prediction's correctness); expected the files of one run."
                )
        if truth is not None:  # after the checks that name a row
            check_images_digest(table, payload.get("images_sha256"), images_path)
        return table
    ids, split, group, first, texts = truth
    n = len(ids)
    sentence = _top_sentences(first, texts, n)
    conf = perf = np.full(n, np.nan)
    if assign_path.is_file():
        assigned, conf, perf, frame = _read_assignments(assign_path)
        _check_rows(assign_path, "explanation.json", assigned, ids)
        check_assignments_digest(payload, frame, assign_path)
        _check_values(assign_path, conf, perf, first, payload)
        _check_clusters(assign_path, frame, older_split, group)
    return pd.DataFrame(
        {
            "image": ids,
            "path": ids,
            "split": split.astype(str),
            "group": group,
            "sentence": sentence,
            "holds": pd.array([None] * n, dtype="boolean"),
            "confidence": conf,
            "performance": perf,
            "label": [None] * n,
            "prediction": [None] * n,
        },
        columns=list(IMAGE_COLUMNS),
    )


def check_images_digest(table, recorded, images_path):
    """Refuse an ``images.parquet`` whose values are not those its run ``recorded`` (``images_sha256``; None: none).

    Every reader of a stored run asks it: the service's pages, `lbee export spotlight`, `lbee evaluate`.
    """
    from ..run.outputs import table_digest

    if recorded is not None and recorded != table_digest(table, TABLE_COLUMNS):
        raise ValueError(
            f"{str(images_path)!r}: its values differ from the ones its run recorded (explanation.json's "
            "images_sha256): the file was edited or belongs to another run; put back the run's own, or remove it."
        )


def with_held_out(split, confirmation):
    """``split`` (hard / easy / neutral per image) with the run's held-out images named 'held-out'."""
    split = np.asarray(split, dtype=object).copy()
    held = (confirmation or {}).get("held_out") if isinstance(confirmation, dict) else None
    if held:
        split[np.asarray(held, dtype=np.int64)] = "held-out"
    return split


def _check_clusters(path, assign, split, group):
    """Refuse an ``assignments.parquet`` whose split or cluster is not the explanation's.

    Sweep 27 made a held-out image hard, cluster -1, and renewed the digest.
    """
    if {"split", "cluster"} <= set(assign.columns):
        rows = list(zip(assign["split"].astype(str), assign["cluster"].astype(int)))
        _check_rows(path, "explanation.json", rows, list(zip(split.tolist(), np.asarray(group).tolist())))


def _check_values(path, conf, perf, first, payload):
    """Refuse φ or ω that no run writes (not finite), or ω that contradicts the error rates the run recorded.

    A digest can be computed again by anyone who edits a file; what the run recorded of its groups cannot be
    changed without changing the explanation's own checks (sweep 26: φ and ω edited with every digest renewed).
    """
    for name, values in (("confidence", conf), ("performance", perf)):
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise ValueError(
                f"{str(path)!r} row {bad[0] + 1}: {name} {float(values[bad[0]])}; expected a finite number."
            )
    confirmation = payload.get("confirmation") or {}
    if confirmation.get("status") != "done" or confirmation.get("outcome") != "error rate":
        return
    statements = confirmation.get("statements") or []
    held = np.asarray(confirmation.get("held_out") or [], dtype=np.int64)
    if statements and held.size:  # the held-out failures every statement was tested against (sweep 27)
        said = statements[0].get("errors_in", 0) + statements[0].get("errors_out", 0)
        if int(np.sum(perf[held] == 0)) != said:
            raise ValueError(
                f"{str(path)!r}: its held-out images fail {int(np.sum(perf[held] == 0))} times by their ω, where the "
                f"run's statements were tested against {said} failures; expected the files of one run."
            )
    for j, st in enumerate(statements):  # a finding's held-out images fail as its test counted (sweep 32h)
        if "holds_for" in st and held.size:
            mine = np.intersect1d(np.asarray(st["holds_for"], dtype=np.int64), held)
            if int(np.sum(perf[mine] == 0)) != st.get("errors_in"):
                raise ValueError(
                    f"{str(path)!r}: the held-out images that confirmation.statements[{j}].holds_for lists fail "
                    f"{int(np.sum(perf[mine] == 0))} times by their ω, where its test counted {st.get('errors_in')}; "
                    "expected the files of one run (edited, or from another run)."
                )
    for i, (c, g) in enumerate(zip(first.hard_clusters, confirmation.get("groups") or ())):
        idx = np.asarray(c.indices, dtype=np.int64)
        rate = g.get("hypothesis_error_rate")
        if rate is not None and idx.size and abs(float(np.mean(perf[idx] == 0)) - rate) > 1e-3:
            raise ValueError(
                f"{str(path)!r}: hard group {i}'s images fail at {float(np.mean(perf[idx] == 0)):.4f} by its ω, where "
                f"the run recorded {rate}; expected the files of one run (edited, or from another run)."
            )


def _top_sentences(first, texts, n):
    """Per image, the first sentence of its hard group (None for the others), as `images_table` records it."""
    sentence = np.full(n, None, dtype=object)
    for c in first.hard_clusters:
        if len(c.sentences) and int(c.sentences[0]) < len(texts):
            sentence[c.indices] = texts[int(c.sentences[0])]
    return sentence


def _read_parquet(path, what):
    """A run folder's parquet table, read through the file checked when it was opened.

    Read by path, a FIFO swapped onto ``images.parquet`` after the check blocked the server's threads for good
    (sweep 32u B3). A file over its bound, or one that is no parquet, is one clean line (the run folder is the
    user's: sweep 24 found 2.8 GB in one).
    """
    import pandas as pd

    from .._files import pinned
    from ..io.table_header import refuse_parquet_bomb

    try:
        with pinned(path, what) as src:
            refuse_parquet_bomb(path, what, src=src)
            return pd.read_parquet(src)
    except Exception as exc:  # a damaged or foreign file: one clean line
        raise ValueError(f"Cannot read {str(path)!r}: {exc}") from None


def _read_assignments(path):
    """(image ids, φ, ω, the table) of a run's ``assignments.parquet``."""
    assign = _read_parquet(path, "Assignments table")
    missing = {"image", "confidence", "performance"} - set(assign.columns)
    if missing:
        raise ValueError(f"{str(path)!r} has no column(s) {', '.join(sorted(missing))}; expected the file lbee wrote.")
    ids = [str(i) for i in assign["image"]]
    return ids, assign["confidence"].to_numpy(np.float64), assign["performance"].to_numpy(np.float64), assign


def _check_rows(path, against, rows, expected):
    """Refuse ``path`` whose rows (image, or (image, split, group)) differ from ``against``'s, naming the first."""
    if len(rows) != len(expected):
        raise ValueError(
            f"{str(path)!r} holds {len(rows)} images and {against} {len(expected)}; expected the files of one run."
        )
    for i, (got, want) in enumerate(zip(rows, expected)):
        if got != want:
            raise ValueError(
                f"{str(path)!r} row {i + 1} is {got!r} where {against} has {want!r}; expected the files of one run "
                "(edited, or from another run)."
            )
