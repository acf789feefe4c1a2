"""Every image of a hypothesis, page by page: the rows the report's browser, ``lbee serve`` and Spotlight share.

A hard group is shown in the report as a strip of its least confident images;
this module gives the whole group: one row per member with its confidence φ,
performance ω, label and prediction (when known) and whether the group's top
sentence holds for it (from the relevance Γ, when known). The HTML report pages
through these rows in the browser (thumbnails inlined once per image, loaded
lazily); ``lbee serve`` pages through the same table of a stored run
(``images.parquet``, written beside ``report.html``), and ``lbee export
spotlight`` opens it in Renumics Spotlight.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..io.images import ImageFile
from .pairs import pair_text  # noqa: F401  (named from here too)

#: Images per page of a group's browser (the report's and ``lbee serve``'s).
BROWSE_PAGE_SIZE = 48
#: Orders a group's images can be browsed in (value: what the page calls it): least confident first (the clearest
#: failures), most confident first, or by image name.
BROWSE_SORTS = {
    "confidence": "confidence, lowest first",
    "-confidence": "confidence, highest first",
    "name": "image name",
    "label": "label, then confidence",
    "prediction": "prediction, then confidence",
}
#: Most thumbnails one report inlines for its browsers (each image once, 1 to 4 kB each), so the page stays a few
#: MB whatever the dataset: beyond, the rows are still listed, without a picture (``lbee serve`` and Spotlight show
#: every image from the stored files).
BROWSE_MAX_INLINE = 2000
#: Of the images in no group (`lbee.reports.other_images`), at most this many more thumbnails inlined.
BROWSE_OTHER_INLINE = 500
#: The per-image table written beside ``report.html``.
IMAGES_TABLE = "images.parquet"
#: Its columns, in order (``label`` / ``prediction`` empty without labels, ``holds`` empty without Γ).
IMAGE_COLUMNS = (
    "image",
    "path",
    "split",
    "group",
    "sentence",
    "holds",
    "confidence",
    "performance",
    "label",
    "prediction",
)
#: Its columns since sweep 32r and trial 26: ``image_sha256``, the digest of the bytes embedded (empty for
#: precomputed embeddings), and ``finding`` / ``finding_statement``, the strongest confirmed finding that holds for
#: the image (`lbee.reports.finding_images.image_findings`); a table without them (an older run's) is read as before.
TABLE_COLUMNS = (*IMAGE_COLUMNS, "image_sha256", "finding", "finding_statement")


def _name(class_names, c):
    c = int(c)
    return str(class_names[c]) if class_names is not None and 0 <= c < len(class_names) else str(c)


def member_rows(run, idx, sentence, short):
    """One dict per member of a group: its row in the report's browser.

    Parameters
    ----------
    run : lbee.reports.page.ReportRun
    idx : ndarray of int, shape (m,)
        The group's members (indices into the run's images).
    sentence : int or None
        The group's top sentence: ``holds`` is Γ[image, sentence] (None without Γ or sentence).
    short : list of str
        Short image names, one per image of the run.

    Returns
    -------
    list of dict
        ``i`` (image index), ``id``, ``name``, ``phi``, ``omega``, ``label``, ``pred``, ``holds`` and ``href``
        (the full image, or None); in the order of ``idx``.
    """
    has_cls = run.labels is not None
    rows = []
    for j in np.asarray(idx, dtype=np.int64).tolist():
        holds = None
        if run.relevance is not None and sentence is not None:
            holds = bool(run.relevance[j, sentence])
        rows.append(
            {
                "i": j,
                "id": str(run.image_ids[j]),
                "name": short[j],
                "phi": round(float(run.confidence[j]), 6),
                "omega": round(float(run.performance[j]), 6),
                "label": _name(run.class_names, run.labels[j]) if has_cls else None,
                "pred": _name(run.class_names, run.preds[j]) if has_cls and run.preds is not None else None,
                "holds": holds,
                "href": None if run.image_links is None else run.image_links[j],
            }
        )
    return rows


def _script_json(obj):
    """JSON to put inside ``<script type="application/json">``: no ``<`` can close the element early."""
    return json.dumps(obj, ensure_ascii=False).replace("<", "\\u003c")


#: The most sentences a group's browser offers to check its images against: the group's own (every describer's)
#: first, then any other sentence of the set that Γ says holds for one of its images, the most frequent first (an
#: eleventh user could not ask which of a failure's images hold a confounder the group's describers did not name).
BROWSE_MAX_CHOICES = 400
#: Of a group's rows, at most this many Γ flags in all (one character per image and choice): a large group is
#: offered fewer of the other sentences, so that a report stays a few MB.
BROWSE_MAX_FLAGS = 200_000
#: Of a whole page, at most this many offered sentences and flags: shared by its groups (1,000 groups offering 400
#: sentences each made a 444 MB page, sweep 23), never fewer than each group's own.
BROWSE_PAGE_CHOICES, BROWSE_PAGE_FLAGS = 10_000, 2_000_000


def browse_view(run, idx, sentence, anchor, short, choices=None, n_groups=1, own_label="the group’s sentences"):
    """What one group's browser needs: the rows as JSON, its element ids, the page size and sort orders.

    ``choices``: the group's sentences (indices, ``sentence`` first). With Γ, a reader can check the group's images
    against each of them and against every other sentence that holds for one of its images (the most frequent
    first, up to `BROWSE_MAX_CHOICES` and `BROWSE_MAX_FLAGS`, and a ``n_groups``-th of the page's
    `BROWSE_PAGE_CHOICES` and `BROWSE_PAGE_FLAGS`); each row then carries ``h``, a string of '0' / '1' per choice:
    Γ of the image for each. ``own_label`` names ``choices`` in the picker.
    """
    rows = member_rows(run, idx, sentence, short)
    listed = []
    if run.relevance is not None and sentence is not None and len(rows):
        gamma = np.asarray(run.relevance[np.asarray(idx, dtype=np.int64)], dtype=bool)  # (m, N)
        own = list(dict.fromkeys([sentence, *(choices or [])]))
        share = gamma.mean(axis=0)
        mine = set(own)
        others = [j for j in np.argsort(-share, kind="stable").tolist() if share[j] > 0 and j not in mine]
        n_groups = max(int(n_groups), 1)
        cap = min(
            BROWSE_MAX_CHOICES,
            BROWSE_PAGE_CHOICES // n_groups,
            min(BROWSE_MAX_FLAGS, BROWSE_PAGE_FLAGS // n_groups) // len(rows),
        )
        offered = (own + others)[: max(len(own), cap)]
        if len(offered) > 1:
            for row, h in zip(rows, gamma[:, offered].tolist()):
                row["h"] = "".join("1" if v else "0" for v in h)
            listed = [
                {"value": k, "text": run.sentences[j], "own": j in mine, "share": float(share[j])}
                for k, j in enumerate(offered)
            ]
    return {
        "choices": listed,
        "choice_groups": [
            {"label": label, "options": [c for c in listed if c["own"] == own]}
            for own, label in ((True, own_label), (False, "other sentences true of some of its images"))
            if any(c["own"] == own for c in listed)
        ],
        "id": f"browse-{anchor}",
        "n": len(rows),
        "json": _script_json(rows),
        "page_size": BROWSE_PAGE_SIZE,
        "sorts": BROWSE_SORTS,
        "sentence": None if sentence is None else run.sentences[sentence],
        "has_labels": run.labels is not None,
        "has_relevance": run.relevance is not None and sentence is not None,
    }


def browse_thumbs(run, sections, thumbs, limit=None, other_limit=None):
    """Thumbnails of the images the page's browsers list, each once: JSON ``{index: data URI}``.

    The groups' images group by group, in the order the page shows them, then the findings' ones
    (`lbee.reports.finding_images`), are taken up to ``limit`` (default
    `BROWSE_MAX_INLINE`); then the images of each section's other sets (`lbee.reports.other_images`), up to
    ``other_limit`` more (default `BROWSE_OTHER_INLINE`). A tile with no inlined thumbnail shows its image from its
    link when it has one.
    """
    caps = (  # then a finding's images (most of them are its groups' too)
        (("clusters", "findings"), BROWSE_MAX_INLINE if limit is None else limit),
        (("others",), BROWSE_OTHER_INLINE if other_limit is None else other_limit),
    )
    out = {}
    if run.thumbnail_sources is None or thumbs is None:
        return "{}"
    for parts, cap in caps:
        wanted = (
            j for sec in sections for part in parts for c in sec.get(part) or () if c for j in c.get("member_order", [])
        )
        taken = 0
        for j in wanted:
            if taken >= cap:
                break
            if j in out:
                continue
            uri = thumbs.data_uri(run.thumbnail_sources[j])
            if uri is not None:
                out[j] = uri
                taken += 1
    return _script_json(out)


def _lead(exps):
    """The explanation of the describer read first (`lbee.run.text.first_method`) among ``exps``."""
    from ..run.text import first_method

    return exps[first_method(exps)[0]]


def images_table(run, slicer=None):
    """One row per image of a report's run, the columns of `TABLE_COLUMNS`.

    Parameters
    ----------
    run : lbee.reports.page.ReportRun
    slicer : str, optional
        Whose groups; default the run's first slicer. ``group`` is the hard or easy cluster within its split
        (-1 for a neutral image), ``sentence`` the top sentence of the describer read first
        (`lbee.run.text.first_method`) for a hard image.

    Returns
    -------
    pandas.DataFrame
    """
    import pandas as pd

    from .finding_images import image_findings

    exps = run.explanations[slicer or next(iter(run.explanations))]
    first = _lead(exps)  # the describer the terminal says to read first: the page's sentence too
    n = len(run.image_ids)
    split, group = first.split_and_group(n)
    from .stored_table import with_held_out

    # the held-out images, named so: a fifteenth user could not tell them from the middling ones
    split = with_held_out(split, run.confirmations.get(slicer or next(iter(run.explanations))))
    sentence = np.full(n, None, dtype=object)
    holds = np.full(n, None, dtype=object)
    for c in first.hard_clusters:
        if not len(c.sentences):
            continue
        s = int(c.sentences[0])
        sentence[c.indices] = run.sentences[s]
        if run.relevance is not None:
            holds[c.indices] = np.asarray(run.relevance[c.indices, s], dtype=bool)
    # absolute: a run folder is read from anywhere (lbee export spotlight, lbee serve), not from where it was made;
    # an image read by the run (ImageFile) by the path it had then: its folder swapped since named another (sweep 32r)
    sources = run.thumbnail_sources or [None] * n
    paths = [
        p.path if isinstance(p, ImageFile) else str(Path(p).resolve()) if isinstance(p, (str, Path)) else None
        for p in sources
    ]
    has_cls = run.labels is not None
    return pd.DataFrame(
        {
            "image": [str(i) for i in run.image_ids],
            "path": paths,
            "split": split.astype(str),
            "group": group,
            "sentence": sentence,
            "holds": pd.array(holds.tolist(), dtype="boolean"),
            "confidence": np.asarray(run.confidence, dtype=np.float64),
            "performance": np.asarray(run.performance, dtype=np.float64),
            "label": [_name(run.class_names, v) for v in run.labels] if has_cls else [None] * n,
            "prediction": [_name(run.class_names, v) for v in run.preds]
            if has_cls and run.preds is not None
            else [None] * n,
            "image_sha256": [p.sha256 if isinstance(p, ImageFile) else None for p in sources],
            **image_findings(run.confirmations.get(slicer or next(iter(run.explanations))), n),
        },
        columns=list(TABLE_COLUMNS),
    )


def write_images_table(run, out_dir):
    """Write `IMAGES_TABLE` (`images_table`) into ``out_dir``; returns its path."""
    import io

    from ..io.cache import atomic_write_bytes
    from ..run.outputs import record_in_explanation, table_digest

    buf = io.BytesIO()
    table = images_table(run)
    table.to_parquet(buf, index=False)
    path = Path(out_dir) / IMAGES_TABLE
    atomic_write_bytes(path, buf.getvalue())
    # its digest in the run's explanation: an edited label, prediction or path is refused on reading (sweep 25)
    record_in_explanation(out_dir, "images_sha256", table_digest(table, TABLE_COLUMNS))
    return path
