"""The ``lbee`` command line. Commands parse options and call library functions.

Heavy imports (torch, faiss, open_clip) happen inside command bodies so that
``lbee --help`` stays fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ._version import __version__

METHOD_CHOICES = ["tops", "setdiff", "pdiff", "fpdiff", "domino", "all"]


class LbeeError(click.ClickException):
    """A user-facing error: message, exit code 1, no traceback."""


def _fail(exc):
    raise LbeeError(str(exc)) from exc


@click.group(context_settings={"auto_envvar_prefix": "LBEE", "help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="lbee")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None,
              help="Embedding cache folder [env LBEE_CACHE_DIR; default ~/.cache/lbee].")
@click.option("--device", default=None, help="torch device, e.g. cpu or cuda:0 [default: cuda if available].")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@click.pass_context
def cli(ctx, cache_dir, device, quiet):
    """lbee: find, and describe in plain language, where a vision model fails."""
    ctx.ensure_object(dict)
    ctx.obj.update(cache_dir=cache_dir, device=device, progress=not quiet)


# ---------------------------------------------------------------- sentences
@cli.group()
def sentences():
    """Built-in sentence sets."""


@sentences.command("list")
def sentences_list():
    """List the built-in sentence sets."""
    from .sentences import list_sentence_sets, load_sentence_set

    for name in list_sentence_sets():
        s = load_sentence_set(name)
        first = s.header.splitlines()[0] if s.header else ""
        click.echo(f"{name:<14} {len(s):>5}  {first}")


@sentences.command("show")
@click.argument("name")
def sentences_show(name):
    """Print the sentences of a set (a built-in name or a file)."""
    from .sentences import load_sentence_set

    try:
        s = load_sentence_set(name)
    except ValueError as exc:
        _fail(exc)
    for line in s.header.splitlines():
        click.echo(f"# {line}")
    for sent in s.sentences:
        click.echo(sent)


# ---------------------------------------------------------------- describe
def _methods(method):
    from .selection import METHODS

    if "all" in method or not method:
        return list(METHODS)
    return list(dict.fromkeys(method))


def _load_npy(path, name):
    import numpy as np

    try:
        return np.load(path)
    except (OSError, ValueError) as exc:
        raise LbeeError(f"Cannot read {name} {path!r}: {exc}") from None


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
    from .sentences import load_sentence_set

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
    from .report import terminal_table

    click.echo(terminal_table(result))
    if result.failures:
        click.echo(f"\n{len(result.failures)} image(s) skipped (listed in the report).", err=True)
    if out:
        from .pipeline import write_outputs

        write_outputs(result, out)
        click.echo(f"\nWrote {out}/explanation.json, assignments.parquet, report.md")


def _describe_precomputed(image_embeddings, sentence_embeddings, predictions, kind, sents, set_name, methods,
                          clusters, easy_clusters, k, tau, a, pc, ward="exact"):
    from .confidence import class_names_from_table, scores_from_table
    from .images import read_table
    from .pipeline import describe

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

    from .confidence import class_names_from_table, scores_from_probabilities, scores_from_table
    from .embedding import embed_images, embed_sentences
    from .encoders import create_encoder
    from .images import discover_images, read_table
    from .pipeline import align_scores, describe

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
        from .classifier import default_transform, load_classifier, predict_probabilities

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
    from .per_class import explain_per_class

    if scores.labels is None:
        raise LbeeError("--per-class needs true labels: a 'label' column in --predictions or the manifest.")
    if scores.preds is None and scores.probs is None:
        raise LbeeError("--per-class needs predicted classes: 'pred' or 'prob_<class>' columns in --predictions.")
    rel = None
    if pc["relevance"]:
        from .relevance import load_relevance

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
        from .pipeline import write_per_class_outputs

        write_per_class_outputs(res, pc["out"], image_ids=ids, sentences=sents, sentence_set=set_name)
        click.echo(f"\nWrote {pc['out']}/per_class.json, per_class_metrics.csv, per_class_summary.csv")
    return res


def _segmentation_scores(obj, ids, paths, predictions, model_spec, weights, seg):
    """φ (by ``--split-by``) and ω (mIoU with masks, else −entropy) for a segmentation model."""
    from .segmentation import match_files, predict_segmentation, scores_from_folders
    from .segmentation import MASK_SUFFIXES

    if predictions:
        scores = scores_from_folders(ids, predictions, seg["masks"], ignore_index=seg["ignore_index"])
    else:
        from .classifier import load_classifier

        masks = match_files(seg["masks"], ids, MASK_SUFFIXES, "mask") if seg["masks"] else None
        model = load_classifier(model_spec, weights)
        scores = predict_segmentation(model, paths, masks=masks, device=obj["device"],
                                      ignore_index=seg["ignore_index"], progress=obj["progress"])
    return scores.confidence(seg["split_by"]), scores.performance("miou")


# ---------------------------------------------------------------- evaluate
@cli.command()
@click.argument("explanation", type=click.Path(exists=True))
@click.option("--relevance", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Γ: .npy (n, N), or CSV/parquet (image, sentence, relevant) or wide.")
@click.option("--performance", type=click.Path(exists=True, dir_okay=False), default=None,
              help="ω: .npy (n,) or a table with 'performance' [default: assignments.parquet beside the json].")
@click.option("--o", "o_values", type=float, multiple=True, default=[0.2], show_default=True,
              help="Severity o (β = o·std ω); repeat for several.")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write metrics here (.json or .csv).")
def evaluate(explanation, relevance, performance, o_values, out):
    """Score an explanation.json (AHR / ACR / TPR / JI per method)."""
    import numpy as np
    import pandas as pd

    from .evaluation import evaluate as evaluate_fn
    from .images import read_table
    from .pipeline import load_explanations
    from .relevance import load_relevance

    path = Path(explanation)
    if path.is_dir():
        path = path / "explanation.json"
    try:
        exps, payload = load_explanations(path)
        ids, sents = payload["images"], payload["sentences"]
        rel = load_relevance(relevance, ids, sents)
        if performance is None:
            assign = path.parent / "assignments.parquet"
            if not assign.exists():
                raise LbeeError("No --performance given and no assignments.parquet beside the explanation.")
            omega = pd.read_parquet(assign)["performance"].to_numpy(dtype=float)
        elif performance.endswith(".npy"):
            omega = np.load(performance)
        else:
            omega = read_table(performance)["performance"].to_numpy(dtype=float)
        rows = []
        for o in o_values:
            for m, e in exps.items():
                rows.append({"method": m, "o": o, **evaluate_fn(e, rel, omega, o=o)})
    except click.ClickException:
        raise
    except (ValueError, TypeError, KeyError, OSError) as exc:
        _fail(exc)
    table = pd.DataFrame(rows)
    click.echo(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    target = Path(out) if out else path.parent / "metrics.json"
    if target.suffix == ".csv":
        table.to_csv(target, index=False)
    else:
        target.write_text(json.dumps(rows, indent=1))
    click.echo(f"\nWrote {target}")


# ---------------------------------------------------------------- report
@cli.command()
@click.argument("config", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Output folder [default: the config's 'output', else lbee_out/report].")
@click.pass_context
def report(ctx, config, out):
    """Batch HTML reports: every dataset × model × method (and slicer) of CONFIG (YAML).

    Each dataset gets report.html, explanation.json and metrics.csv/json; the
    output folder gets index.html. A failing dataset does not stop the others;
    failures are listed at the end and the exit code is 1.
    """
    from .batch_report import run_report
    from .report_config import ConfigError

    obj = ctx.obj
    try:
        result = run_report(config, output=out, cache_dir=obj["cache_dir"], device=obj["device"],
                            progress=obj["progress"], log=_log)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"\n{len(result.reports)} report(s); index: {result.index}")
    for r in result.reports:
        click.echo(f"  {r['dataset']} / {r['model']}: {r['folder']}/report.html")
    if result.failures:
        click.echo(f"\n{len(result.failures)} failed:", err=True)
        for name, msg in result.failures:
            click.echo(f"  {name}: {msg}", err=True)
        ctx.exit(1)


# ---------------------------------------------------------------- sweep
def _number_list(kind):
    def parse(ctx, param, value):
        if value is None:
            return None
        if value.strip() == "":
            return []
        out = []
        for part in value.split(","):
            try:
                out.append(kind(part.strip()))
            except ValueError:
                raise click.BadParameter(f"{part.strip()!r} is not a{'n integer' if kind is int else ' number'}; "
                                         "expected a comma-separated list such as 1,3,5.") from None
        return out
    return parse


@cli.command()
@click.option("--image-embeddings", required=True, type=click.Path(exists=True, dir_okay=False),
              help="(n, d) .npy image embeddings.")
@click.option("--sentence-embeddings", required=True, type=click.Path(exists=True, dir_okay=False),
              help="(N, d) .npy sentence embeddings.")
@click.option("--sentences", "sentence_set", default="conditions", show_default=True,
              help="Sentence set (for its size and the output).")
@click.option("--predictions", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Table with φ ('confidence' or 'prob_<class>') and ω ('performance', or label/pred), rows in "
                   "embedding order.")
@click.option("--relevance", required=True, type=click.Path(exists=True, dir_okay=False), help="Γ (n, N).")
@click.option("--K", "k_values", callback=_number_list(int), default="1,2,3,5,10", show_default=True,
              help="Sentences per cluster to try ('' skips).")
@click.option("--C", "c_values", callback=_number_list(int), default="1,5,10,15,20,30", show_default=True,
              help="Cluster counts to try ('' skips).")
@click.option("--o", "o_values", callback=_number_list(float), default="0,0.1,0.2,0.3,0.5,0.75,1", show_default=True,
              help="Severities to try ('' skips).")
@click.option("--method", multiple=True, type=click.Choice(METHOD_CHOICES), default=["all"], show_default=True)
@click.option("--confidence", "confidence_kind", type=click.Choice(["entropy", "max", "true_class"]),
              default="entropy", show_default=True)
@click.option("--tau", type=float, default=0.25, show_default=True)
@click.option("--out", type=click.Path(file_okay=False), default="lbee_out/sweep", show_default=True)
def sweep(image_embeddings, sentence_embeddings, sentence_set, predictions, relevance, k_values, c_values, o_values,
          method, confidence_kind, tau, out):
    """Vary K, C and o: a table and plots of ACR / AHR / TPR / JI (the paper's Figures 6 and 10)."""
    from .confidence import scores_from_table
    from .images import read_table
    from .relevance import load_relevance
    from .sentences import load_sentence_set
    from .sweep import plot_sweep, sensitivity_sweep

    try:
        sents = list(load_sentence_set(sentence_set).sentences)
        img = _load_npy(image_embeddings, "--image-embeddings")
        sen = _load_npy(sentence_embeddings, "--sentence-embeddings")
        ids, scores = scores_from_table(read_table(predictions), kind=confidence_kind)
        rel = load_relevance(relevance, ids, sents)
        table = sensitivity_sweep(img, sen, relevance=rel, performance=scores.performance,
                                  confidence=scores.confidence, K=k_values, C=c_values, o=o_values,
                                  methods=_methods(method), tau=tau)
    except click.ClickException:
        raise
    except (ValueError, TypeError, OSError) as exc:
        _fail(exc)
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    table.to_csv(target / "sweep.csv", index=False)
    plot_sweep(table, target / "sweep.png")
    click.echo(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    click.echo(f"\nWrote {target}/sweep.csv and sweep.png")


# ---------------------------------------------------------------- SpotCheck world
def _log(msg):
    click.echo(msg, err=True)


@cli.command()
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the experimental configuration.")
@click.option("--out", type=click.Path(file_okay=False), default="lbee_out/demo", show_default=True)
@click.option("--clusters", type=click.IntRange(min=1), default=15, show_default=True)
@click.option("-k", "k", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--a", "a", type=click.FloatRange(min=0), default=0.2, show_default=True)
@click.pass_context
def demo(ctx, seed, out, clusters, k, a):
    """Run lbee end to end on a fresh SpotCheck world (offline, CPU, about a minute)."""
    import time

    from .encoders import create_encoder
    from .pipeline import write_outputs
    from .report import render_markdown, terminal_table
    from .spotcheck import make_ec
    from .spotcheck._analysis import analyze_ec

    t0 = time.perf_counter()
    click.echo(f"Generating a SpotCheck world (seed {seed}) and training its square classifier ...")
    ec = make_ec(seed, log=_log)
    v = ec.verification
    click.echo(f"  model accuracy outside the blindspots {v['accuracy_outside']:.2f}, inside "
               + ", ".join(f"{x:.2f}" for x in v["accuracy_inside"]) + " (validation)")
    click.echo("\nTrue blindspots (where the model was taught to fail):")
    for i, d in enumerate(ec.describe_blindspots()):
        click.echo(f"  [{i}] {d}")
    enc = create_encoder("spotcheck", device=ctx.obj["device"])
    analysis = analyze_ec(ec, enc, n_clusters=clusters, k=k, a=a)
    result = analysis.result
    p = next(iter(result.explanations.values())).params
    click.echo(f"\nTest set: {p['n_images']} images, {p['n_hard']} hard, {p['n_easy']} easy; "
               f"{len(result.explanations['tops'].hard_clusters)} hard clusters.\n")
    click.echo("Top sentence of each hard cluster, per method:")
    click.echo(terminal_table(result, width=34))
    click.echo("\nMetrics with exact relevance (o = 0.2):")
    click.echo(f"  {'method':<8} {'AHR':>6} {'ACR':>6} {'TPR':>6} {'JI':>6}  described")
    for m, s in analysis.scores.items():
        click.echo(f"  {m:<8} {s['AHR']:>6.3f} {s['ACR']:>6.3f} {s['TPR']:>6.3f} {s['JI']:>6.3f}  "
                   f"{analysis.description_accuracy[m]:.2f}")
    click.echo(f"\nHard clusters as blindspot hypotheses: DR = {analysis.dr:.2f}, FDR = {analysis.fdr:.2f}")
    ec_dir = Path(out) / "ec"
    ec.save(ec_dir)
    result.image_ids = [f"ec/images/test/{i:05d}.png" for i in range(len(result.image_ids))]
    write_outputs(result, out)
    (Path(out) / "report.md").write_text(render_markdown(result, metrics=analysis.scores))
    from .html_report import render_report
    from .spotcheck._analysis import report_run
    from .thumbnails import ThumbnailCache

    _write_demo_inputs(Path(out) / "inputs", analysis)
    html = render_report(report_run(ec, analysis, dataset=f"SpotCheck world {seed}"),
                         thumbs=ThumbnailCache(ctx.obj["cache_dir"]))
    (Path(out) / "report.html").write_text(html, encoding="utf-8")
    click.echo(f"\nWrote {out}/report.html, explanation.json, assignments.parquet, report.md, the analysis inputs "
               f"in {out}/inputs and the EC in {ec_dir} ({time.perf_counter() - t0:.0f} s).")
    i = f"{out}/inputs"
    click.echo(f"Sensitivity to K, C and o: lbee sweep --image-embeddings {i}/image_embeddings.npy "
               f"--sentence-embeddings {i}/sentence_embeddings.npy --sentences {i}/sentences.txt "
               f"--predictions {i}/predictions.csv --relevance {i}/relevance.npy --tau {p['tau']:.6g} "
               f"--out {out}/sweep")


def _write_demo_inputs(folder, analysis):
    """The demo's embeddings, scores, sentences and Γ, ready for `lbee sweep` / `lbee describe` / `evaluate`."""
    import numpy as np
    import pandas as pd

    folder.mkdir(parents=True, exist_ok=True)
    r = analysis.result
    np.save(folder / "image_embeddings.npy", np.asarray(analysis.embeddings, dtype=np.float32))
    np.save(folder / "sentence_embeddings.npy", np.asarray(analysis.sentence_embeddings, dtype=np.float32))
    np.save(folder / "relevance.npy", analysis.relevance)
    (folder / "sentences.txt").write_text("# SpotCheck sentences (lbee demo)\n" + "\n".join(r.sentences) + "\n")
    pd.DataFrame({"image": r.image_ids, "confidence": r.confidence, "performance": r.performance}).to_csv(
        folder / "predictions.csv", index=False)


@cli.group()
def spotcheck():
    """The SpotCheck synthetic world: generate ECs, run the benchmark."""


@spotcheck.command("generate")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", type=click.Path(file_okay=False), required=True)
@click.option("--blindspots", "n_blindspots", type=click.IntRange(1, 3), default=None,
              help="Number of blindspots [default: 1-3 at random].")
@click.option("--rollable", "n_rollable", type=int, default=None, help="Rollable attributes [default: 6-8].")
@click.option("--arch", type=click.Choice(["cnn", "resnet18"]), default="cnn", show_default=True)
def spotcheck_generate(seed, out, n_blindspots, n_rollable, arch):
    """Generate one EC (dataset, blindspots, images, verified model) into OUT."""
    from .spotcheck import UnsatisfiableError, make_ec

    try:
        ec = make_ec(seed, n_blindspots=n_blindspots, n_rollable=n_rollable, arch=arch, log=_log)
    except (UnsatisfiableError, RuntimeError) as exc:
        _fail(exc)
    ec.save(out)
    for i, d in enumerate(ec.describe_blindspots()):
        click.echo(f"blindspot {i}: {d}")
    click.echo(f"Wrote {out}")


@spotcheck.command("bench")
@click.option("--n-ecs", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--first-seed", type=int, default=0, show_default=True)
@click.option("--out", type=click.Path(file_okay=False), default="lbee_out/bench", show_default=True)
@click.pass_context
def spotcheck_bench(ctx, n_ecs, first_seed, out):
    """Run N ECs and write bench.csv / bench.md (resumes from ECs already done)."""
    from tqdm.auto import tqdm

    from .encoders import create_encoder
    from .spotcheck._bench import run_benchmark, summarize, write_tables

    enc = create_encoder("spotcheck", device=ctx.obj["device"])
    progress = (lambda it: tqdm(it, desc="ECs", unit="EC")) if ctx.obj["progress"] else None
    records = run_benchmark(n_ecs, out, encoder=enc, first_seed=first_seed, progress=progress, log=_log)
    if not records:
        raise LbeeError("No EC could be generated.")
    click.echo(write_tables(summarize(records), out))
    click.echo(f"Wrote {out}/bench.csv and bench.md ({len(records)} ECs)")


@cli.command("compare-pak")
@click.argument("explanation", type=click.Path(exists=True))
@click.option("--embeddings", required=True, type=click.Path(exists=True, dir_okay=False),
              help="(n, d) .npy embeddings of the evaluation set.")
@click.option("--partitions", required=True, type=click.Path(exists=True, dir_okay=False),
              help="(n, t) boolean .npy ground-truth partitions of the evaluation set.")
@click.option("-k", "k", type=click.IntRange(min=1), default=10, show_default=True)
def compare_pak(explanation, embeddings, partitions, k):
    """P@K of another set assigned to an explanation's easy ∪ hard prototypes (LBEE appendix B protocol)."""
    import numpy as np

    from .metrics import prototype_precision_at_k
    from .pipeline import load_explanations

    path = Path(explanation)
    if path.is_dir():
        path = path / "explanation.json"
    try:
        exps, _ = load_explanations(path)
        exp = next(iter(exps.values()))
        value = prototype_precision_at_k(exp, np.load(embeddings), np.load(partitions), k=k)
    except (ValueError, TypeError, OSError) as exc:
        _fail(exc)
    click.echo(f"P@{k} = {value:.3f}")


# ---------------------------------------------------------------- VQA pseudo ground truth
@cli.group(invoke_without_command=True)
@click.option("--images", type=click.Path(exists=True), help="A folder (recursive) or a manifest with 'path'.")
@click.option("--sentences", "sentence_set", default="conditions", show_default=True,
              help="A built-in sentence set name or a sentence file.")
@click.option("--backend", default="llava+blip", show_default=True,
              help="Backends joined by '+': llava, blip, ofa, metadata.")
@click.option("--combine", "how", type=click.Choice(["and", "or", "majority"]), default="and", show_default=True)
@click.option("--out", type=click.Path(dir_okay=False), default="relevance.parquet", show_default=True)
@click.option("--questions", "questions_file", type=click.Path(exists=True, dir_okay=False),
              help="Override file: 'sentence<TAB>question' lines.")
@click.option("--llava-model", default="llava-hf/llava-1.5-7b-hf", show_default=True, help="Hub name or folder.")
@click.option("--blip-model", default="Salesforce/blip-vqa-base", show_default=True, help="Hub name or folder.")
@click.option("--metadata", type=click.Path(exists=True, dir_okay=False),
              help="Long-form table (image, sentence, relevant) for the 'metadata' backend.")
@click.option("--scoring", type=click.Choice(["logits", "generate"]), default="logits", show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=8, show_default=True)
@click.pass_context
def vqa(ctx, images, sentence_set, backend, how, out, questions_file, llava_model, blip_model, metadata, scoring,
        batch_size):
    """Pseudo ground-truth relevance Γ from VQA models asked yes/no questions (LBEE app. C.3)."""
    if ctx.invoked_subcommand is not None:
        return
    if images is None:
        raise click.UsageError("Give --images (a folder or manifest), or a subcommand such as 'agreement'.")
    from vqa import VQAError, compute_relevance, create_backend, parse_backend_spec, questions_for, \
        write_relevance
    from vqa.questions import builtin_overrides

    from .images import discover_images, read_table
    from .sentences import load_sentence_set

    obj = ctx.obj
    try:
        sset = load_sentence_set(sentence_set)
        overrides = builtin_overrides(sset.name) or {}
        if questions_file:
            from vqa.questions import read_overrides

            overrides.update(read_overrides(questions_file))
        questions, missing = questions_for(sset.sentences, overrides)
        if missing:
            listing = "\n  ".join(missing[:20])
            raise LbeeError(f"{len(missing)} sentence(s) have no question; add them to a --questions file:\n  "
                            f"{listing}")
        imgs = discover_images(images)
        backends = {}
        for name in parse_backend_spec(backend):
            if name == "llava":
                backends[name] = create_backend("llava", model=llava_model, device=obj["device"], scoring=scoring)
            elif name == "blip":
                backends[name] = create_backend("blip", model=blip_model, device=obj["device"], scoring=scoring)
            elif name == "metadata":
                if not metadata:
                    raise LbeeError("The 'metadata' backend needs --metadata TABLE (image, sentence, relevant).")
                backends[name] = create_backend("metadata", table=read_table(metadata))
            else:
                backends[name] = create_backend(name, device=obj["device"])
        result = compute_relevance(imgs.paths, list(sset.sentences), backends, questions=questions,
                                   image_ids=imgs.ids, combine=how, cache_dir=obj["cache_dir"],
                                   batch_size=batch_size, progress=obj["progress"])
    except click.ClickException:
        raise
    except (ValueError, TypeError, FileNotFoundError, VQAError) as exc:
        _fail(exc)
    write_relevance(result, out)
    n, m = result.relevance.shape
    click.echo(f"{n} images x {m} sentences; relevant pairs: {int(result.relevance.sum())} ({how} of "
               f"{', '.join(backends)})")
    for name, k in result.invalid.items():
        if k:
            click.echo(f"  {name}: {k} answer(s) were neither yes nor no (counted as no)")
    for p, r in result.failures:
        click.echo(f"  skipped {p}: {r}", err=True)
    click.echo(f"Wrote {out}")


@vqa.command("agreement")
@click.option("--pseudo", required=True, type=click.Path(exists=True, dir_okay=False),
              help="The table written by 'lbee vqa'.")
@click.option("--truth", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Ground-truth Γ: long-form table (image, sentence, relevant).")
def vqa_agreement(pseudo, truth):
    """Compare pseudo Γ with ground truth: accuracy, TP, TN, FP, FN per backend and combination (Table 4)."""
    import pandas as pd

    from vqa import agreement_table

    from .images import read_table

    try:
        table = read_table(pseudo)
        gt = read_table(truth)
        backends = [c[:-2] for c in table.columns if c.endswith("_p")]
        if not backends:
            raise LbeeError(f"{pseudo!r} has no '<backend>_p' columns; is it an 'lbee vqa' output?")
        key = gt.set_index(["image", "sentence"])["relevant"].astype(bool)
        idx = pd.MultiIndex.from_frame(table[["image", "sentence"]].astype({"image": str}))
        key.index = key.index.set_levels(key.index.levels[0].astype(str), level=0)
        t = key.reindex(idx, fill_value=False).to_numpy()
        rows = agreement_table({b: table[b].to_numpy(dtype=bool) for b in backends}, t)
    except click.ClickException:
        raise
    except (ValueError, KeyError, OSError) as exc:
        _fail(exc)
    click.echo(f"{'':<22}{'Accuracy':>9}{'TP':>7}{'TN':>7}{'FP':>7}{'FN':>7}")
    for r in rows:
        click.echo(f"{r['name']:<22}" + "".join(f"{r[k]:>{9 if k == 'accuracy' else 7}.3f}"
                                            for k in ("accuracy", "TP", "TN", "FP", "FN")))


def main():  # pragma: no cover
    cli(obj={})


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
