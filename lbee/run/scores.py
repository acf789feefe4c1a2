"""One model's φ and ω over a dataset's images: from its predictions, its checkpoint, or the SpotCheck world's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .models import load_model
from .specs import Scores, probabilities_kind


def align_scores(image_ids, image_paths, table_ids, *, source="the predictions file", skipped=(), strict=False):
    """Row of the predictions table for each image (`lbee.io.matching.IdMatcher`'s rule).

    An id equal to the image's id or path matches; a shorter or longer one
    (a bare file name, an absolute path) only when it fits exactly one image
    of the run; otherwise ``ValueError`` names the colliding images. Images
    without a row raise; table rows that match no image are reported as a
    warning with their count and the first few ids, except the rows of
    ``skipped`` images (paths of unreadable images, already warned about once).
    With ``strict`` (``--strict``) such rows raise instead: a row whose image
    is missing is usually a data bug in an audit (trial 38).
    """
    from .._validation import shown as cut
    from ..io.matching import IdMatcher, match_table_rows, report_unmatched

    rows, unmatched = match_table_rows(table_ids, image_ids, image_paths, source=source)
    if unmatched and skipped:
        of_skipped = IdMatcher(list(skipped), source=source)

        def names_a_skipped_image(tid):
            try:
                return of_skipped.index(tid) is not None
            except ValueError:  # it names several skipped images, or one twice: skipped all the same
                return True

        unmatched = [tid for tid in unmatched if not names_a_skipped_image(tid)]
    missing = [iid for iid, r in zip(image_ids, rows) if r < 0]
    if missing:
        raise ValueError(
            f"{len(missing)} image(s) have no row in {source}, first: {', '.join(cut(m) for m in missing[:3])}; "
            "ids must match the manifest 'path' values, the paths relative to the folder, or file names."
            + _other_suffix(missing, unmatched)
            + (_other_files(unmatched) or _unmatched_ids(unmatched))
            + " To analyse only the images that have a row, list them in a manifest (a CSV with a 'path' column) "
            "and give it instead of the folder."
        )
    if strict and unmatched:
        raise ValueError(
            f"{source}: {len(unmatched)} of {len(table_ids)} row(s) match no image of the run, first: "
            f"{', '.join(cut(u) for u in unmatched[:3])}; --strict refuses them (without it they are ignored "
            "with a warning). Restore the images, or drop their rows."
        )
    report_unmatched(len(unmatched), len(table_ids), what="image of the run", source=source, examples=unmatched)
    return rows


def _unmatched_ids(unmatched):
    """The table's ids that name no image, when a few images lack a row: a typo'd id is one of each (trial 39)."""
    from .._validation import shown as cut

    if not unmatched or len(unmatched) > 20:
        return ""
    return f" Its rows whose ids match no image: {', '.join(cut(t) for t in unmatched[:3])}."


def _other_files(unmatched):
    """A hint when the table's ids are paths of other files that exist (another folder's images), or ''."""
    from .._validation import shown as cut
    from ..io.matching import exists_here

    there = next((t for t in unmatched[:1000] if exists_here(str(t))), None)
    if there is None:
        return ""
    return (
        f" Its ids are paths of other files, first: {cut(there)}: a path that exists names that file, not an "
        "image of this run with the same name (if these images are a copy of those, write the ids relative to the "
        "folder, or as file names)."
    )


def _other_suffix(missing, unmatched):
    """A hint when the table's ids are the images' with another file suffix ('a.jpg' for 'a.png'), or ''."""
    import posixpath

    # the ids as written: pathlib reads 'a//f.png' and 'a/f.png/' as 'a/f.png' (sweep 32bb N4: "'.png' where '.png'")
    stems = dict(posixpath.splitext(str(t)) for t in unmatched[:100_000])
    hits = [
        (suffix, stems[stem])
        for m in missing[:1000]
        if (stem := posixpath.splitext(str(m))[0]) in stems and stems[stem] != (suffix := posixpath.splitext(str(m))[1])
    ]
    if not hits or len(hits) < min(len(missing), 1000) // 2:
        return ""
    image_suffix, table_suffix = hits[0]
    theirs = f"end in {table_suffix!r}" if table_suffix else "have no file suffix"
    mine = f"end in {image_suffix!r}" if image_suffix else "have none"
    return f" The table's ids {theirs} where the images' {mine}: the same names otherwise."


def model_scores(ds, model, inputs, *, device=None, progress=False):
    """One model's φ (by ``settings.confidence_from``) and ω over the images of ``inputs``.

    Parameters
    ----------
    ds : DatasetSpec
    model : ModelSpec or None
        None: the SpotCheck world's own classifier.
    inputs : RunInputs

    Returns
    -------
    Scores
    """
    from ..scoring.confidence import class_names_from_table, scores_from_probabilities, scores_from_table

    st = ds.settings
    if st.task == "segmentation":
        return _segmentation_scores(ds, model, inputs, device, progress)
    kind = st.confidence_from
    names = None
    has_performance_column = False
    lookalike = None  # a column of the predictions that looks like labels, when they have none
    if model is None or (model.predictions is None and model.model is None):  # the SpotCheck world's classifier
        if inputs.spotcheck is None:
            raise ValueError(f"dataset {ds.name!r} needs the model's outputs: predictions or a model.")
        from ..spotcheck import predict

        probs, _ = predict(inputs.spotcheck.model, inputs.spotcheck.images["test"])
        scores = scores_from_probabilities(probs, kind=kind, labels=inputs.labels)
    elif model.predictions is not None:
        from ..io.images import read_table
        from ..io.label_lookalike import label_lookalike

        if Path(model.predictions).is_dir():
            raise ValueError(
                f"{str(model.predictions)!r} is a folder; classification expects a CSV/parquet "
                "predictions table (a folder of per-image outputs is for task segmentation)."
            )
        table = read_table(model.predictions)
        table_ids, scores = scores_from_table(table, kind=kind, probabilities=probabilities_kind(ds))
        has_performance_column = "performance" in table
        lookalike = label_lookalike(table)
        names = class_names_from_table(table)
        if inputs.image_paths is None:  # precomputed embeddings: rows are already in table order
            if len(table_ids) != len(inputs.image_ids):
                raise ValueError(
                    f"the predictions table has {len(table_ids)} rows; expected "
                    f"{len(inputs.image_ids)}, one per embedding row."
                )
        else:
            scores = scores.subset(
                align_scores(
                    inputs.image_ids,
                    inputs.image_paths,
                    table_ids,
                    source=f"predictions {str(model.predictions)!r}",
                    skipped=[path for path, _ in inputs.failures],
                    strict=ds.strict,
                )
            )
        if inputs.labels is not None:
            scores = with_manifest_labels(
                scores,
                inputs.labels,
                names,
                performance_column="performance" in table,
                source=f"the manifest {str(ds.images)!r}",
            )
    else:
        from ..scoring.classifier import default_transform, predict_probabilities

        if inputs.labels is not None and np.asarray(inputs.labels).dtype == object:
            raise ValueError(
                f"the manifest {str(ds.images)!r} gives class names as labels; a model's classes are "
                "output indices: give integer labels (or predictions with prob_<class> columns)."
            )
        net = load_model(model.model, model.weights, num_classes=model.num_classes)
        probs, ran = predict_probabilities(
            net,
            inputs.image_paths,
            transform=default_transform(model.image_size),
            batch_size=model_batch_size(ds.batch_size, model.image_size),
            num_workers=ds.num_workers,
            device=device,
            progress=progress,
        )
        if not ran.all():
            raise ValueError(f"the model could not read {int((~ran).sum())} image(s) the encoder read.")
        scores = scores_from_probabilities(probs, kind=kind, labels=inputs.labels)
    if scores.probs is not None and scores.labels is not None:
        unknown = np.unique(scores.labels[(scores.labels < 0) | (scores.labels >= scores.probs.shape[1])])
        if unknown.size:
            raise ValueError(
                f"labels contain class(es) {unknown[:5].tolist()} absent from the predictions "
                f"({scores.probs.shape[1]} classes)."
            )
    if has_performance_column:  # the table's own ω wins over anything derived (lbee.scoring.confidence)
        omega = "the predictions' performance column"
    elif scores.labels is not None and (scores.probs is not None or scores.preds is not None):
        omega = "correctness"
    else:  # lbee.scoring.confidence.scores_from_table: a confidence column without predicted classes is ω too
        omega = "−entropy (no labels)" if scores.probs is not None else "the confidence column (no predicted classes)"
    phi, phi_desc, extra = _label_aware_phi(scores, kind, lookalike)
    if st.split_by in ("irfs", "saliency"):
        from ..analyses.sensitivity_outputs import confidence_from_sensitivity

        if ds.sensitivity is None:
            raise ValueError(
                f"split_by {st.split_by!r} takes φ from a region-sensitivity run: give its folder "
                "(`lbee sensitivity ... --out DIR`) as sensitivity."
            )
        table = Path(ds.sensitivity)
        if table.is_dir():
            table = table / ("sensitivity.csv" if st.split_by == "irfs" else "saliency.csv")
        phi = confidence_from_sensitivity(table, inputs.image_ids, kind=st.split_by, image_paths=inputs.image_paths)
        phi_desc = (
            "iRFS averaged over σ (low: leans on the background)"
            if st.split_by == "irfs"
            else "GradCAM / object-mask IoU (low: evidence off the object)"
        )
        extra = {"split_criterion": f"Split by the {phi_desc}, as asked (--split-by {st.split_by})."}
    return Scores(phi, scores.performance, phi_desc, omega, scores, names, extra)


def _label_aware_phi(scores, kind, lookalike=None):
    """φ by ``kind`` once the labels are known (a manifest's come after the table), its words, and why.

    'auto' becomes the probability of the true class when there are labels and
    class probabilities (`lbee.scoring.confidence.resolve_confidence`); with no labels but a column
    ``lookalike`` that looks like them ('labels', 'true_label'), 'auto' is refused (ValueError).

    Returns
    -------
    (ndarray of shape (n,), str, dict)
        φ, what it is, and ``{"confidence_from": the kind used, "split_criterion": a sentence}``
        (recorded in explanation.json, shown by the CLI and the HTML page).
    """
    from ..io.label_lookalike import refuse_unlabelled_lookalike
    from ..scoring.confidence import (
        CONFIDENCE_WORDS,
        confidence_from_probabilities,
        resolve_confidence,
        split_criterion,
    )

    has_labels, has_probs = scores.labels is not None, scores.probs is not None
    refuse_unlabelled_lookalike(lookalike, kind, has_probs, has_labels)
    chosen = resolve_confidence(kind, has_labels)
    if has_probs and kind == "auto":
        scores.confidence = confidence_from_probabilities(scores.probs, chosen, scores.labels)
    criterion = split_criterion(kind, has_labels, confidence_column=not has_probs)
    words = CONFIDENCE_WORDS[chosen] if has_probs else "the predictions' confidence column"
    extra = {"confidence_from": chosen if has_probs else "column", "split_criterion": criterion}
    return scores.confidence, words, extra


def with_manifest_labels(scores, labels, class_names, *, performance_column=False, source="the manifest"):
    """The manifest's labels on a predictions table's scores (which had been read without them).

    Labels that are class names take their indices from the ``prob_<class>``
    columns; without those columns they are refused, naming the fix. When the
    table has its own ``label`` column it wins, with a warning if the two
    disagree. ω becomes correctness unless the table gives ``performance``.
    """
    from ..io.table_reader import logger
    from ..scoring.confidence import check_labels

    labels = np.asarray(labels)
    n_classes = None if scores.probs is None else scores.probs.shape[1]
    if labels.dtype == object:
        if not class_names:
            raise ValueError(
                f"{source}: 'label' holds class names (e.g. {labels[:3].tolist()}) but the predictions "
                "have no prob_<class> columns to give them indices; use integer labels, or "
                "prob_<class> columns."
            )
        lookup = {str(c): k for k, c in enumerate(class_names)}
        bad = sorted({str(v) for v in labels if str(v) not in lookup})
        if bad:
            raise ValueError(
                f"{source}: label(s) {bad[:5]} are not among the classes of the prob_<class> columns "
                f"({', '.join(class_names[:8])}{', ...' if len(class_names) > 8 else ''})."
            )
        labels = np.asarray([lookup[str(v)] for v in labels], dtype=np.int64)
    labels = check_labels(labels, len(scores.confidence), n_classes, name="manifest labels")
    if scores.labels is not None:
        differ = int(np.sum(scores.labels != labels))
        if differ:
            logger.warning(
                "%s and the predictions' 'label' column disagree on %d image(s); the predictions' labels are used.",
                source,
                differ,
            )
        return scores
    scores.labels = labels
    preds = scores.preds if scores.preds is not None else (None if scores.probs is None else scores.probs.argmax(1))
    if preds is not None and not performance_column:
        scores.preds = preds
        scores.performance = (preds == labels).astype(np.float64)
    return scores


def _segmentation_scores(ds, model, inputs, device, progress):
    """φ by ``split_by`` and ω = mIoU (with masks) for a segmentation model (predictions folder or module)."""
    from ..scoring.segmentation import MASK_SUFFIXES, match_files, predict_segmentation, scores_from_folders

    st = ds.settings
    if inputs.image_paths is None:
        raise ValueError(
            "task segmentation reads the images (to match predictions and masks by name); "
            "precomputed image embeddings without images are for classification."
        )
    if model is None:
        raise ValueError(f"dataset {ds.name!r}: segmentation needs a predictions folder or a model.")
    if model.predictions is not None:
        if not Path(model.predictions).is_dir():
            raise ValueError(
                f"segmentation predictions {str(model.predictions)!r} must be a folder of per-image .npy outputs."
            )
        scores = scores_from_folders(  # num_classes: what (H, W) label maps are scored over (the entry's, if given)
            inputs.image_ids, model.predictions, ds.masks, num_classes=model.num_classes, ignore_index=st.ignore_index
        )
    else:
        masks = match_files(ds.masks, inputs.image_ids, MASK_SUFFIXES, "mask") if ds.masks else None
        scores = predict_segmentation(
            load_model(model.model, model.weights),
            inputs.image_paths,
            masks=masks,
            device=device,
            ignore_index=st.ignore_index,
            progress=progress,
        )
    phi_desc = {"entropy": "−mean pixel entropy", "pixel_accuracy": "pixel accuracy", "miou": "mIoU"}
    extra = {"task": "segmentation", "split_by": st.split_by, "performance_metric": "miou" if ds.masks else "entropy"}
    return Scores(
        scores.confidence(st.split_by),
        scores.performance("miou"),
        phi_desc[st.split_by],
        "per-image mIoU" if ds.masks else "−mean pixel entropy (no masks)",
        None,
        None,
        extra,
    )


def model_batch_size(batch_size, image_size):
    """Images per model batch: ``batch_size``, fewer when their pixels would pass `MAX_BATCH_PIXELS`."""
    from .limits import MAX_BATCH_PIXELS

    side = int(image_size or 224)
    return max(1, min(int(batch_size), MAX_BATCH_PIXELS // (side * side)))
