"""Checks of a run's inputs that cost seconds, made before minutes of embedding."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..io.arrays import load_npy
from .models import check_model_spec
from .settings import SENSITIVITY_SPLITS
from .specs import probabilities_kind

#: Said by the preflight and, should a run get past it, by the per-class analysis itself.
PER_CLASS_NEEDS_LABELS = "`per_class` needs true labels: a 'label' column in the manifest or the predictions"


def _manifest_has_labels(images):
    """Whether ``images`` is a manifest file with a 'label' column (the other place labels come from)."""
    if images is None or not Path(images).is_file():
        return False
    from ..io.images import read_table

    return "label" in read_table(images).columns


def preflight(ds, models=None):
    """Check what can be checked without computing: model specs, sentence set, manifest, predictions, sensitivity.

    Runs before any embedding, so a bad label in a predictions table is reported
    in a second, not after minutes of work. Raises ``ValueError`` naming the file.

    Parameters
    ----------
    ds : DatasetSpec
    models : list of ModelSpec, optional
        The models whose predictions tables are read (default: all of ``ds``;
        ``[]`` checks the dataset alone).
    """
    from ..io.images import discover_images, read_table
    from ..io.label_lookalike import label_lookalike, refuse_unlabelled_lookalike
    from ..io.sentences import WORLD_SENTENCE_SET, load_sentence_set
    from ..scoring.confidence import scores_from_table

    for model in ds.models if models is None else models:
        if model is not None and model.model is not None:
            check_model_spec(model.model)  # a typo in a model spec fails now, not after the images are embedded
    sents = imgs = None
    if ds.spotcheck is None and ds.rival10 is None:
        sents = load_sentence_set(ds.sentence_set).sentences
    elif str(ds.sentence_set) not in (WORLD_SENTENCE_SET, "rival10"):  # a set of one's own for a world: read now
        load_sentence_set(ds.sentence_set)  # (a missing file passed --check, trial 30's sweep of it)
    if ds.images is not None:
        imgs = discover_images(ds.images)
    _preflight_arrays(ds, sents, imgs)
    if isinstance(ds.relevance, dict) and imgs is not None and sents is not None and ds.image_embeddings is None:
        from ..io.relevance import check_relevance_table

        # a bad cell of Γ was found after 2 minutes of embedding
        check_relevance_table(next(iter(ds.relevance.values())), imgs.ids, sents, imgs.paths)
    if ds.settings.task == "classification":
        for model in ds.models if models is None else models:
            if model is not None and model.predictions is not None and not Path(model.predictions).is_dir():
                table = read_table(model.predictions)
                labelled = labelled_elsewhere = _manifest_has_labels(ds.images)  # (φ changes once they come)
                # before the reader, whose warning on the same column would say it first (trial 35 read it twice)
                refuse_unlabelled_lookalike(
                    label_lookalike(table),
                    ds.settings.confidence_from,
                    any(isinstance(c, str) and c.startswith("prob_") for c in table.columns),
                    labelled,
                )
                table_ids, table_scores = scores_from_table(
                    table,
                    kind=ds.settings.confidence_from,
                    probabilities=probabilities_kind(ds),
                )
                labelled = labelled or table_scores.labels is not None
                if ds.settings.per_class and not labelled:
                    raise ValueError(f"{PER_CLASS_NEEDS_LABELS} ({str(model.predictions)!r} has no 'label' column)")
                source = f"predictions {str(model.predictions)!r}"
                if imgs is not None and ds.image_embeddings is None:  # every image needs its row, said now
                    _check_rows(imgs, table_ids, source, strict=ds.strict)
                if not (ds.settings.per_class or ds.settings.split_by in SENSITIVITY_SPLITS or labelled_elsewhere):
                    _check_split(table_scores, ds.settings, imgs, table_ids, source)
    if ds.settings.split_by in ("irfs", "saliency"):
        if ds.sensitivity is None:
            raise ValueError(f"split_by {ds.settings.split_by!r} needs a sensitivity run (`lbee sensitivity`).")
        if not Path(ds.sensitivity).exists():
            raise ValueError(f"sensitivity {str(ds.sensitivity)!r} does not exist.")


def _check_rows(imgs, table_ids, source, *, strict=False):
    """Refuse a table without a row for some readable image, as the run would after embedding (`align_scores`).

    An image that cannot be read needs no row: the run skips it with a warning.
    """
    from ..io.matching import match_table_rows
    from .scores import align_scores

    rows, _ = match_table_rows(table_ids, imgs.ids, imgs.paths, source=source)
    unread = {i for i in map(int, (rows < 0).nonzero()[0]) if not _readable(imgs.paths[i])}
    keep = [i for i in range(len(imgs.ids)) if i not in unread]
    align_scores([imgs.ids[i] for i in keep], [imgs.paths[i] for i in keep], table_ids, source=source, strict=strict)


def _check_split(scores, settings, imgs, table_ids, source):
    """The run's confidence split, from the predictions alone: an empty side is refused before any embedding.

    ``--a 5`` was refused only after every image had been embedded (trial 40). φ is the run's (the true class's
    probability with labels), over the rows of the images the run reads (all rows without images).
    """
    from ..core.split import resolve_split
    from ..io.matching import match_table_rows
    from .scores import _label_aware_phi

    phi, _, _ = _label_aware_phi(scores, settings.confidence_from)
    phi = np.asarray(phi, np.float64)
    if imgs is not None:
        rows, _ = match_table_rows(table_ids, imgs.ids, imgs.paths, source=source)
        phi = phi[rows[rows >= 0]]
    if len(phi) >= 2:
        resolve_split(len(phi), confidence=phi, a=settings.a)  # the run's own words for an empty side


def _readable(path):
    from ..io.images import check_image_file, open_image

    try:
        check_image_file(path)
        with open_image(path) as img:
            img.load()
        return True
    except Exception:  # any reason the run would skip it for
        return False


def _preflight_arrays(ds, sents, imgs):
    """Shapes of the precomputed ``.npy`` embeddings, from their headers (nothing is loaded)."""
    shapes = {}
    for field_, rows, what in (
        ("image_embeddings", None if imgs is None else len(imgs.ids), "image"),
        ("sentence_embeddings", None if sents is None else len(sents), "sentence"),
    ):
        path = getattr(ds, field_)
        if path is None or Path(path).suffix.lower() != ".npy" or not Path(path).is_file():
            continue  # other forms and missing files are reported by the loaders
        arr = load_npy(path, field_, mmap=True)
        if arr.ndim != 2 or arr.dtype.kind not in "fiu":
            raise ValueError(
                f"{field_} {str(path)!r} holds a {arr.ndim}-D {arr.dtype} array; expected a 2-D "
                f"real array (one row per {what})."
            )
        if rows is not None and arr.shape[0] != rows:
            of = (  # which sentences: the default set surprised a user who gave no --sentences (trial 15)
                f"of the sentence set {str(ds.sentence_set)!r} (--sentences, sentence_set: in a config)"
                if what == "sentence"
                else "of the dataset"
            )
            said = ""
            if what == "image":  # which images: the ids file beside the rows names them (trial 22's extra image)
                from ..io.row_ids import missing_images, unlisted_images

                found = unlisted_images(path, imgs.ids, field_)
                if found is not None and found[0]:
                    said = f"; not in {found[1]}: " + ", ".join(repr(i) for i in found[0])
                elif (found := missing_images(path, imgs.ids, field_)) is not None and found[0]:
                    listed = ", ".join(repr(i) for i in found[0])
                    said = f"; {found[1]} lists {listed}, not among the images (deleted, moved or renamed?)"
            raise ValueError(
                f"{field_} {str(path)!r} has shape {arr.shape}; expected ({rows}, d), one row per {what} {of}{said}."
            )
        shapes[field_] = arr.shape
    if len(shapes) == 2 and shapes["image_embeddings"][1] != shapes["sentence_embeddings"][1]:
        raise ValueError(
            f"image_embeddings has dimension {shapes['image_embeddings'][1]} but sentence_embeddings "
            f"{shapes['sentence_embeddings'][1]}; they must share one joint space."
        )
    from ..io.provenance import check_pair, read_provenance

    provs = {f: read_provenance(getattr(ds, f), f) for f in shapes}  # sidecars only: the digests are checked on load
    if "image_embeddings" in provs:  # refused by the run, so by the check too (sweep 32ap N1)
        from ..io.rollforward import refuse_interrupted
        from ..io.row_ids import refuse_missing_ids

        refuse_interrupted(ds.image_embeddings, "image_embeddings")
        refuse_missing_ids(ds.image_embeddings, "image_embeddings", (provs["image_embeddings"] or {}).get("ids_sha256"))
    check_pair(
        provs.get("image_embeddings"),
        provs.get("sentence_embeddings"),
        sentences=sents,
        image_name=f"image_embeddings {str(ds.image_embeddings)!r}",
        sentence_name=f"sentence_embeddings {str(ds.sentence_embeddings)!r}",
    )


def assumptions(ds):
    """What a run of ``ds`` will take for granted, and warn about when it does: a list of lines.

    ``lbee report --check`` says them before the run (trial 33: "no problem found", then the run warned that the
    embeddings' rows follow the predictions' order and that CLIP's τ was assumed for a simulated encoder's).
    The same rules as the run's: `lbee.run.inputs.provenance_tau` and `lbee.io.row_ids.check_row_ids`.
    """
    from ..core.selection import CLIP_TAU
    from ..io.provenance import check_pair, read_provenance
    from ..io.row_ids import ROW_IDS_NAME, ROW_IDS_SUFFIX, row_ids_path

    out = []
    fields = [f for f in ("image_embeddings", "sentence_embeddings") if getattr(ds, f) is not None]
    if ds.error or not fields:
        return out
    try:
        provs = {f: read_provenance(getattr(ds, f), f) for f in fields}
        declared = check_pair(provs.get("image_embeddings"), provs.get("sentence_embeddings"))
    except (ValueError, OSError):  # a problem of its own, said by the checks
        return out
    bare = tau_assumed_for(ds, provs, declared)
    if bare:
        out.append(
            f"dataset {ds.name!r}: {bare} carry no provenance record, so τ = {CLIP_TAU:g} (CLIP's) "
            "will be assumed; give tau: for another encoder."
        )
    path = ds.image_embeddings
    recorded = (provs.get("image_embeddings") or {}).get("ids_sha256")  # its ids file gone: refused, not assumed
    if path is not None and Path(path).suffix.lower() == ".npy" and recorded is None:
        try:
            ids = row_ids_path(path, "image_embeddings")
        except (ValueError, OSError):
            return out
        if ids is None:
            out.append(
                f"dataset {ds.name!r}: image_embeddings {Path(path).name!r} has no row ids beside it "
                f"({Path(path).stem + ROW_IDS_SUFFIX} or {ROW_IDS_NAME}), so its rows will be taken as the images "
                "in the order of the images or the predictions table; write the ids there and every row is checked."
            )
    return out


def tau_assumed_for(ds, provs, declared):
    """The embeddings for which CLIP's τ is assumed, as messages name them (``"image_embeddings 'x.npy'"``), or "".

    The one rule, for the run's warning (`lbee.run.inputs.provenance_tau`) and ``lbee report --check``: τ is
    assumed when no record declares one, some embeddings file has no record, and the settings give no τ.
    ``provs``: each embeddings field's record (None for a bare file).
    """
    fields = [f for f in ("image_embeddings", "sentence_embeddings") if getattr(ds, f) is not None]
    bare = [f"{f} {Path(getattr(ds, f)).name!r}" for f in fields if provs.get(f) is None]
    return " and ".join(bare) if declared is None and bare and ds.settings.tau is None else ""
