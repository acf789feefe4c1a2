"""``lbee describe``: hard clusters of a dataset and the sentences that describe them."""

from __future__ import annotations

from pathlib import Path

import click

from ._base import METHOD_CHOICES, LbeeError, _fail, _load_npy, _methods, cli




@cli.command()
@click.argument("images", required=False, type=click.Path(exists=True))
@click.option("--sentences", "sentence_set", default="conditions", show_default=True,
              help="A built-in sentence set name or a sentence file.")
@click.option("--task", type=click.Choice(["classification", "segmentation"]), default="classification",
              show_default=True, help="What the model does; segmentation scores per-pixel outputs.")
@click.option("--predictions", type=click.Path(exists=True),
              help="CSV/parquet with an image id column and 'confidence' or 'prob_<class>' columns, "
                   "optional 'label' / 'pred'. Segmentation: a folder of per-image <name>.npy (K, H, W) "
                   "logits/probabilities or (H, W) label maps.")
@click.option("--masks", type=click.Path(exists=True, file_okay=False),
              help="Segmentation: folder of ground-truth label maps <name>.png|.npy.")
@click.option("--split-by", type=click.Choice(["entropy", "pixel_accuracy", "miou"]), default="entropy",
              show_default=True, help="Segmentation: φ for the easy/hard split (the paper's Fig. 4 comparison).")
@click.option("--ignore-index", type=int, default=255, show_default=True,
              help="Segmentation: mask value excluded from pixel accuracy and mIoU.")
@click.option("--model", "model_spec", help="TorchScript file, torchvision:<arch>, timm:<arch> or module:factory.")
@click.option("--weights", type=click.Path(exists=True, dir_okay=False), help="State dict for --model.")
@click.option("--num-classes", type=int, default=None, help="Classes of a torchvision/timm --model.")
@click.option("--image-size", type=int, default=224, show_default=True, help="Input size for --model.")
@click.option("--confidence", "confidence_kind", type=click.Choice(["entropy", "max", "true_class"]),
              default="entropy", show_default=True, help="How φ is derived from class probabilities.")
@click.option("--encoder", default="open_clip", show_default=True,
              help="Encoder spec: open_clip[:MODEL[@TAG|@CHECKPOINT]], open_clip:hf-hub:ORG/REPO, spotcheck.")
@click.option("--image-embeddings", type=click.Path(exists=True, dir_okay=False),
              help="Precomputed (n, d) .npy image embeddings (rows in --predictions order).")
@click.option("--sentence-embeddings", type=click.Path(exists=True, dir_okay=False),
              help="Precomputed (N, d) .npy sentence embeddings (rows in --sentences order).")
@click.option("--method", multiple=True, type=click.Choice(METHOD_CHOICES), default=["all"], show_default=True,
              help="Describer(s); repeat the option or use 'all'.")
@click.option("--clusters", type=click.IntRange(min=1), default=None,
              help="Hard clusters C^h [default: 15, or 5 with --per-class].")
@click.option("--ward", type=click.Choice(["exact", "knn"]), default="exact", show_default=True,
              help="Exact Ward, or an approximate one on a 15-nearest-neighbour graph for very large splits.")
@click.option("--per-class", is_flag=True, help="Analyse each class separately (needs labels).")
@click.option("--class-split", type=click.Choice(["errors", "probability"]), default="errors", show_default=True,
              help="Per class: hard = false positives ∪ false negatives, easy = true positives (ImageNet), or a "
                   "split of the class probability at μ ± aσ (NICO++).")
@click.option("--relevance", type=click.Path(exists=True, dir_okay=False),
              help="Per class: Γ (as for `lbee evaluate`) to score every class.")
@click.option("--jobs", type=int, default=1, show_default=True, help="Per class: threads (-1 = all cores).")
@click.option("--easy-clusters", type=click.IntRange(min=1), default=None, help="Easy clusters C^e [default: C^h].")
@click.option("-k", "k", type=click.IntRange(min=1), default=3, show_default=True, help="Sentences per cluster.")
@click.option("--tau", type=float, default=None, help="SetDiff/FPDiff threshold [default: the encoder's].")
@click.option("--a", "a", type=click.FloatRange(min=0), default=0.2, show_default=True, help="Split margin.")
@click.option("--out", type=click.Path(file_okay=False), default=None, help="Output folder.")
@click.option("--strict", is_flag=True, help="Fail on the first unreadable image instead of skipping it.")
@click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True)
@click.option("--num-workers", type=click.IntRange(min=0), default=2, show_default=True,
              help="Image-decoding worker processes.")
@click.pass_context
def describe(ctx, images, sentence_set, task, predictions, masks, split_by, ignore_index, model_spec, weights,
             num_classes, image_size, confidence_kind, encoder, image_embeddings, sentence_embeddings, method,
             clusters, ward, per_class, class_split, relevance, jobs, easy_clusters, k, tau, a, out, strict,
             batch_size, num_workers):
    """Find hard clusters of IMAGES (a folder or a manifest) and describe them with sentences."""
    from ..io.sentences import load_sentence_set

    obj = ctx.obj
    try:
        sset = load_sentence_set(sentence_set)
    except (ValueError, TypeError) as exc:
        _fail(exc)
    sents = list(sset.sentences)
    if predictions is None and model_spec is None:
        raise click.UsageError("Give the model's outputs: --predictions FILE or --model SPEC.")
    if task == "classification" and predictions and Path(predictions).is_dir():
        raise click.BadParameter(f"{predictions!r} is a folder; classification expects a CSV/parquet file "
                                 "(a folder of per-image outputs is for --task segmentation).",
                                 param_hint="--predictions")
    if task == "segmentation" and predictions and not Path(predictions).is_dir():
        raise click.BadParameter(f"{predictions!r} is a file; segmentation expects a folder of per-image .npy "
                                 "outputs.", param_hint="--predictions")
    if task == "classification" and (masks or split_by != "entropy"):
        raise click.UsageError("--masks and --split-by are for --task segmentation.")
    seg = dict(task=task, masks=masks, split_by=split_by, ignore_index=ignore_index)
    if per_class and task == "segmentation":
        raise click.UsageError("--per-class is for classification.")
    if (relevance or jobs != 1) and not per_class:
        raise click.UsageError("--relevance and --jobs belong to --per-class (use `lbee evaluate` otherwise).")
    if clusters is None:
        clusters = 5 if per_class else 15
    if ward != "exact" and per_class:
        raise click.UsageError("--ward knn is for whole-dataset runs; per-class splits are small.")
    pc = dict(split=class_split, relevance=relevance, jobs=jobs, out=out) if per_class else None
    try:
        if image_embeddings:
            if task == "segmentation":
                raise click.UsageError("--task segmentation reads IMAGES (to match predictions and masks by "
                                       "name); --image-embeddings is for classification.")
            result = _describe_precomputed(image_embeddings, sentence_embeddings, predictions, confidence_kind,
                                           sents, sset.name, _methods(method), clusters, easy_clusters, k, tau, a, pc,
                                           ward)
        else:
            if images is None:
                raise click.UsageError("Give IMAGES (a folder or manifest) or --image-embeddings.")
            result = _describe_images(obj, images, sents, sset.name, predictions, model_spec, weights, num_classes,
                                      image_size, confidence_kind, encoder, sentence_embeddings, _methods(method),
                                      clusters, easy_clusters, k, tau, a, strict, batch_size, num_workers, seg, pc,
                                      ward)
    except click.ClickException:
        raise
    except (ValueError, TypeError, FileNotFoundError, RuntimeError, ImportError) as exc:
        _fail(exc)
    if per_class:
        return
    from ..reports.text import terminal_table

    click.echo(terminal_table(result))
    if result.failures:
        click.echo(f"\n{len(result.failures)} image(s) skipped (listed in the report).", err=True)
    if out:
        from ..run.pipeline import write_outputs

        write_outputs(result, out)
        click.echo(f"\nWrote {out}/explanation.json, assignments.parquet, report.md")


def _describe_precomputed(image_embeddings, sentence_embeddings, predictions, kind, sents, set_name, methods,
                          clusters, easy_clusters, k, tau, a, pc, ward="exact"):
    from ..scoring.confidence import class_names_from_table, scores_from_table
    from ..io.images import read_table
    from ..run.pipeline import describe

    if not sentence_embeddings:
        raise click.UsageError("--image-embeddings needs --sentence-embeddings too.")
    if not predictions:
        raise click.UsageError("--image-embeddings needs --predictions (rows in the same order).")
    img = _load_npy(image_embeddings, "--image-embeddings")
    sen = _load_npy(sentence_embeddings, "--sentence-embeddings")
    if sen.ndim != 2 or sen.shape[0] != len(sents):
        raise LbeeError(f"--sentence-embeddings has shape {sen.shape}; expected ({len(sents)}, d) for the "
                        f"{len(sents)} sentences of {set_name!r}.")
    table = read_table(predictions)
    ids, scores = scores_from_table(table, kind=kind)
    if img.ndim != 2 or img.shape[0] != len(ids):
        raise LbeeError(f"--image-embeddings has shape {img.shape}; expected ({len(ids)}, d), one row per "
                        "predictions row.")
    if pc:
        return _per_class(img, sen, scores, ids, sents, set_name, methods, clusters, easy_clusters, k,
                          0.25 if tau is None else tau, a, pc, class_names_from_table(table))
    return describe(img, sen, confidence=scores.confidence, performance=scores.performance, sentences=sents,
                    image_ids=ids, methods=methods, encoder_identity={"encoder": "precomputed",
                                                                      "image_embeddings": str(image_embeddings)},
                    sentence_set=set_name, n_clusters=clusters, n_easy_clusters=easy_clusters, k=k,
                    tau=0.25 if tau is None else tau, a=a, ward=ward)


def _describe_images(obj, images, sents, set_name, predictions, model_spec, weights, num_classes, image_size,
                     kind, encoder_spec, sentence_embeddings, methods, clusters, easy_clusters, k, tau, a, strict,
                     batch_size, num_workers, seg, pc, ward="exact"):
    import numpy as np

    from ..scoring.confidence import class_names_from_table, scores_from_probabilities, scores_from_table
    from ..encoders.embedding import embed_images, embed_sentences
    from ..encoders import create_encoder
    from ..io.images import discover_images, read_table
    from ..run.pipeline import align_scores, describe

    imgs = discover_images(images)
    enc = create_encoder(encoder_spec, device=obj["device"])
    emb = embed_images(enc, imgs.paths, cache_dir=obj["cache_dir"], batch_size=batch_size, num_workers=num_workers,
                       progress=obj["progress"], strict=strict)
    ok = emb.ok
    ids = [i for i, good in zip(imgs.ids, ok) if good]
    paths = [p for p, good in zip(imgs.paths, ok) if good]
    extra = {}
    if seg["task"] == "segmentation":
        phi, omega = _segmentation_scores(obj, ids, paths, predictions, model_spec, weights, seg)
        extra = {"task": "segmentation", "split_by": seg["split_by"],
                 "performance_metric": "miou" if seg["masks"] else "entropy"}
    elif predictions:
        table = read_table(predictions)
        table_ids, scores = scores_from_table(table, kind=kind)
        rows = align_scores(ids, paths, table_ids)
        scores = scores.subset(rows)
        phi, omega = scores.confidence, scores.performance
    else:
        from ..scoring.classifier import default_transform, load_classifier, predict_probabilities

        model = load_classifier(model_spec, weights, num_classes=num_classes)
        probs, ran = predict_probabilities(model, paths, transform=default_transform(image_size),
                                           batch_size=batch_size, num_workers=num_workers, device=obj["device"],
                                           progress=obj["progress"])
        if not ran.all():
            raise LbeeError(f"The model could not read {int((~ran).sum())} image(s) the encoder read.")
        labels = None
        if imgs.labels is not None:
            labels = np.asarray(imgs.labels)[ok]
        scores = scores_from_probabilities(probs, kind=kind, labels=labels)
        phi, omega = scores.confidence, scores.performance
    if sentence_embeddings:
        sen = _load_npy(sentence_embeddings, "--sentence-embeddings")
    else:
        sen = embed_sentences(enc, sents, cache_dir=obj["cache_dir"])
    if pc:
        return _per_class(emb.embeddings, sen, scores, ids, sents, set_name, methods, clusters, easy_clusters, k,
                          enc.default_tau if tau is None else tau, a, pc,
                          class_names_from_table(table) if predictions else None, progress=obj["progress"])
    return describe(emb.embeddings, sen, confidence=phi, performance=omega, sentences=sents, image_ids=ids,
                    image_paths=paths, methods=methods, encoder_identity=enc.identity(), sentence_set=set_name,
                    failures=emb.failures, n_clusters=clusters, n_easy_clusters=easy_clusters, k=k,
                    tau=enc.default_tau if tau is None else tau, a=a, extra=extra, ward=ward)


def _per_class(img, sen, scores, ids, sents, set_name, methods, clusters, easy_clusters, k, tau, a, pc, class_names,
               progress=False):
    """``describe --per-class``: explain each class, print the averages, write the per-class files."""
    from ..analyses.per_class import explain_per_class

    if scores.labels is None:
        raise LbeeError("--per-class needs true labels: a 'label' column in --predictions or the manifest.")
    if scores.preds is None and scores.probs is None:
        raise LbeeError("--per-class needs predicted classes: 'pred' or 'prob_<class>' columns in --predictions.")
    rel = None
    if pc["relevance"]:
        from ..io.relevance import load_relevance

        rel = load_relevance(pc["relevance"], ids, sents)
    res = explain_per_class(img, sen, labels=scores.labels, preds=scores.preds, probs=scores.probs,
                            split=pc["split"], methods=methods, n_clusters=clusters, n_easy_clusters=easy_clusters,
                            k=k, tau=tau, a=a, relevance=rel, sentences=sents, class_names=class_names,
                            n_jobs=pc["jobs"], progress=progress)
    summary = res.summary()
    click.echo(f"Per-class analysis of {len(res.explanations)} classes ({pc['split']} split, C = {clusters}); "
               "means over classes:")
    click.echo(summary.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    if res.skipped:
        click.echo(f"\n{len(res.skipped)} class(es) skipped:", err=True)
        for c, why in list(res.skipped.items())[:20]:
            name = f" ({class_names[c]})" if class_names and c < len(class_names) else ""
            click.echo(f"  class {c}{name}: {why}", err=True)
    if pc["out"]:
        from ..run.pipeline import write_per_class_outputs

        write_per_class_outputs(res, pc["out"], image_ids=ids, sentences=sents, sentence_set=set_name)
        click.echo(f"\nWrote {pc['out']}/per_class.json, per_class_metrics.csv, per_class_summary.csv")
    return res


def _segmentation_scores(obj, ids, paths, predictions, model_spec, weights, seg):
    """φ (by ``--split-by``) and ω (mIoU with masks, else −entropy) for a segmentation model."""
    from ..scoring.segmentation import match_files, predict_segmentation, scores_from_folders
    from ..scoring.segmentation import MASK_SUFFIXES

    if predictions:
        scores = scores_from_folders(ids, predictions, seg["masks"], ignore_index=seg["ignore_index"])
    else:
        from ..scoring.classifier import load_classifier

        masks = match_files(seg["masks"], ids, MASK_SUFFIXES, "mask") if seg["masks"] else None
        model = load_classifier(model_spec, weights)
        scores = predict_segmentation(model, paths, masks=masks, device=obj["device"],
                                      ignore_index=seg["ignore_index"], progress=obj["progress"])
    return scores.confidence(seg["split_by"]), scores.performance("miou")
