"""``lbee describe``: hard clusters of a dataset and the sentences that describe them."""

from __future__ import annotations

from pathlib import Path

import click

from ..run.limits import MAX_IMAGE_SIZE, MAX_NUM_CLASSES, MAX_NUM_WORKERS
from ..run.settings_cli import as_cli_message, settings_from_options, settings_options
from ._arguments import name_options
from ._base import (
    ExistingPath,
    LbeeError,
    NotUsageError,
    batch_size_option,
    check_encoder_spec,
    check_writable_folder,
    cli,
    fail,
    require_extra,
)


@cli.command()
@click.argument("images", required=False, type=ExistingPath())
@click.option(
    "--sentence-set",
    "--sentences",
    "sentence_set",
    default="conditions",
    show_default=True,
    help="A built-in sentence set name, a sentence file, or a grammar (.grammar.yaml, its sentences generated).",
)
@click.option(
    "--predictions",
    type=ExistingPath(),
    help="CSV/parquet with an image id column and 'confidence' or 'prob_<class>' columns, "
    "optional 'label' / 'pred'. Segmentation: a folder of per-image <name>.npy (K, H, W) "
    "logits/probabilities or (H, W) label maps.",
)
@click.option(
    "--masks",
    type=ExistingPath(file_okay=False),
    help="Segmentation: folder of ground-truth label maps <name>.png|.npy.",
)
@click.option("--model", "model_spec", help="TorchScript file, torchvision:<arch>, timm:<arch> or module:factory.")
@click.option("--weights", type=ExistingPath(dir_okay=False), help="State dict for --model.")
@click.option(
    "--num-classes",
    type=click.IntRange(1, MAX_NUM_CLASSES),
    default=None,
    help="Classes of a torchvision/timm --model.",
)
@click.option(
    "--image-size",
    type=click.IntRange(1, MAX_IMAGE_SIZE),
    default=224,
    show_default=True,
    help="Input size for --model.",
)
@click.option(
    "--encoder",
    default="open_clip",
    show_default=True,
    help="Encoder spec: open_clip[:MODEL[@TAG|@CHECKPOINT]], open_clip:hf-hub:ORG/REPO, spotcheck.",
)
@click.option("--logits", is_flag=True, help="The prob_<class> columns of --predictions hold logits (softmax them).")
@click.option(
    "--image-embeddings",
    type=ExistingPath(),
    help="Precomputed (n, d) .npy image embeddings, or the folder `lbee embed` wrote (its embeddings.npy); "
    "memory-mapped, read in blocks (rows in IMAGES order, or in --predictions order without IMAGES).",
)
@click.option(
    "--sentence-embeddings",
    type=ExistingPath(dir_okay=False),
    help="Precomputed (N, d) .npy sentence embeddings (rows in --sentences order).",
)
@settings_options(
    "task",
    "split_by",
    "ignore_index",
    "confidence_from",
    "methods",
    "slicers",
    "clusters",
    "easy_clusters",
    "k",
    "tau",
    "a",
    "ward",
    "join",
    "confirm",
)
@click.option(
    "--sensitivity",
    type=ExistingPath(),
    help="A `lbee sensitivity` output folder: how much each image's prediction leans on the background, for "
    "--split-by irfs / saliency.",
)
@click.option("--per-class", is_flag=True, help="Analyse each class separately (needs labels).")
@click.option(
    "--class-split",
    type=click.Choice(["errors", "probability"]),
    default="errors",
    show_default=True,
    help="Per class: 'errors': hard = the class's wrong predictions (false positives and false negatives), easy "
    "= its right ones; 'probability': split by the class's predicted probability, as --a splits the confidence.",
)
@click.option(
    "--relevance",
    type=ExistingPath(dir_okay=False),
    help="Which sentences are true of which images (as for `lbee evaluate`): the run is scored (AHR, ACR, TPR, JI) "
    "and the report's image browser marks where each group's sentence holds; with --per-class, every class.",
)
@click.option(
    "--jobs",
    type=click.IntRange(-1, MAX_NUM_WORKERS),
    default=1,
    show_default=True,
    callback=lambda ctx, param, value: _jobs(value),
    help="Per class: worker processes (-1 = all cores).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="Output folder (a folder that holds a run is refused unless --overwrite).",
)
@name_options
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace the run already in --out, whole (its old files do not stay beside the new ones).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable JSON summary instead of text.")
@click.option(
    "--html",
    "html",
    is_flag=True,
    help="Also write report.html into --out: the same page as `lbee report` (no YAML needed).",
)
@click.option("--strict", is_flag=True, help="Stop on an unreadable image or a row naming no image, not skip it.")
@batch_size_option(64, "Images of the encoder (or the model)")
@click.option(
    "--num-workers",
    type=click.IntRange(0, MAX_NUM_WORKERS),
    default=2,
    show_default=True,
    help="Image-decoding worker processes.",
)
@click.pass_context
def describe(
    ctx,
    images,
    sentence_set,
    predictions,
    masks,
    model_spec,
    weights,
    num_classes,
    image_size,
    encoder,
    logits,
    image_embeddings,
    sentence_embeddings,
    sensitivity,
    per_class,
    class_split,
    relevance,
    jobs,
    out,
    dataset_name,
    model_name,
    overwrite,
    as_json,
    html,
    strict,
    batch_size,
    num_workers,
    **knobs,
):
    """Find hard clusters of IMAGES (a folder or a manifest) and describe them with sentences."""
    from ..run.inputs import load_inputs
    from ..run.pipeline import run_model
    from ..run.preflight import preflight
    from ..run.specs import DatasetSpec, ModelSpec

    obj = ctx.obj
    try:
        settings = settings_from_options(knobs, per_class=class_split if per_class else None)
    except ValueError as exc:
        raise click.UsageError(as_cli_message(exc)) from None
    task = settings.task
    if predictions is None and model_spec is None:
        raise click.UsageError("Give the model's outputs: --predictions FILE or --model SPEC.")
    if task == "classification" and predictions and Path(predictions).is_dir():
        raise click.BadParameter(
            f"{predictions!r} is a folder; classification expects a CSV/parquet file "
            "(a folder of per-image outputs is for --task segmentation).",
            param_hint="--predictions",
        )
    if task == "segmentation" and predictions and not Path(predictions).is_dir():
        raise click.BadParameter(
            f"{predictions!r} is a file; segmentation expects a folder of per-image .npy outputs.",
            param_hint="--predictions",
        )
    if task == "classification" and masks:
        raise click.UsageError("--masks is for --task segmentation (object masks go to `lbee sensitivity`).")
    if settings.split_by in ("irfs", "saliency") and not sensitivity:
        raise click.UsageError(
            f"--split-by {settings.split_by} takes φ from a region-sensitivity run: add "
            "--sensitivity DIR (the --out folder of `lbee sensitivity`)."
        )
    if per_class and task == "segmentation":
        raise click.UsageError("--per-class is for classification.")
    if jobs != 1 and not per_class:
        raise click.UsageError("--jobs belongs to --per-class.")
    if image_embeddings:
        if task == "segmentation":
            raise click.UsageError(
                "--task segmentation reads IMAGES (to match predictions and masks by name); "
                "--image-embeddings is for classification."
            )
        if not sentence_embeddings:
            raise click.UsageError("--image-embeddings needs --sentence-embeddings too.")
        if images is None and not predictions:
            raise click.UsageError("--image-embeddings needs --predictions (rows in the same order).")
    elif images is None:
        raise click.UsageError("Give IMAGES (a folder or manifest) or --image-embeddings.")
    if html and not out:
        raise click.UsageError("--html writes report.html into the output folder: add --out FOLDER.")
    if html:
        require_extra("html", needed_for="--html")
    if not image_embeddings:
        check_encoder_spec(encoder)  # a typo in --encoder fails now, not after loading torch
    _warn_unused(
        ctx,
        image_embeddings=image_embeddings,
        model_spec=model_spec,
        images=images,
        segmentation=task == "segmentation",
    )
    # what this command reads: never deleted by replacing a run in --out, even with --overwrite
    _inputs = [predictions, image_embeddings, sentence_embeddings, relevance, sentence_set, manifest_or_none(images)]
    if out:
        from ..run.outputs import check_out_folder

        check_writable_folder(out, "--out")  # before any embedding, not after
        try:
            check_out_folder(out, overwrite=overwrite, inputs=_inputs)
        except ValueError as exc:
            raise NotUsageError(str(exc)) from None
    from ..io.cache import cache_folder

    cache_folder(ctx.obj["cache_dir"])  # another user's cache folder: refused before the work, not after (32v)
    model = ModelSpec(
        name=model_name or (Path(predictions).stem if predictions else str(model_spec)),
        predictions=Path(predictions) if predictions else None,
        model=model_spec,
        weights=Path(weights) if weights else None,
        num_classes=num_classes,
        image_size=image_size,
    )
    if predictions:
        model.model = None
    ds = DatasetSpec(
        name=dataset_name or (Path(images).stem if images else "precomputed"),
        images=Path(images) if images else None,
        image_embeddings=Path(image_embeddings) if image_embeddings else None,
        sentence_embeddings=Path(sentence_embeddings) if sentence_embeddings else None,
        masks=Path(masks) if masks else None,
        models=[model],
        settings=settings,
        encoder=encoder,
        sentence_set=sentence_set,
        relevance={"ground_truth": Path(relevance)} if relevance else None,
        batch_size=batch_size,
        num_workers=num_workers,
        strict=strict,
        logits=logits,
        sensitivity=Path(sensitivity) if sensitivity else None,
    )
    try:
        preflight(ds)  # tables, manifest and sentence set first: a bad label fails before any embedding
        early = None
        if not image_embeddings:
            check_encoder_spec(encoder, weights=True)  # missing CLIP weights: said before torch is imported
            from ..run.identity import spec_banner
            from ..run.text import frame_banner

            early = spec_banner(encoder, images)
            if early is not None:  # before minutes of embedding, once: the results do not repeat it
                click.secho(frame_banner(early), fg="red", bold=True, err=True)
        inputs = load_inputs(ds, cache_dir=obj["cache_dir"], device=obj["device"], progress=obj["progress"])
        run = run_model(ds, model, inputs, device=obj["device"], progress=obj["progress"], n_jobs=jobs)
    except click.ClickException:
        raise
    except (ValueError, TypeError, FileNotFoundError, RuntimeError, ImportError) as exc:
        fail(ValueError(as_cli_message(exc)) if type(exc) is ValueError else exc)  # a knob named by its flag
    from ..reports.run_folder import metrics_rows, write_run_files

    metrics = metrics_rows(run, ds, model)
    folders = []
    if out:
        from ..reports.thumbnails import ThumbnailCache
        from ..run.outputs import staged_run_folder

        try:  # the whole run is written beside --out, then moved in: never a half-written or mixed folder
            with staged_run_folder(out, overwrite=overwrite, inputs=_inputs) as stage:
                thumbs = ThumbnailCache(ctx.obj["cache_dir"]) if html else None
                written = write_run_files(run, ds, model, stage, html=html, thumbs=thumbs, metrics=metrics)
                folders = [Path(out) / Path(f).relative_to(stage) for f in written]
        except OSError as exc:
            raise LbeeError(f"Cannot write the outputs into {out!r}: {exc.strerror or exc}.") from None
    if as_json:
        import json

        from ..run.text import summary_dict

        if run.per_class is not None:
            summary = {
                "per_class": run.per_class.summary().to_dict("records"),
                "skipped": {str(c): why for c, why in run.per_class.skipped.items()},
                "out": out,
            }
        else:
            summary = summary_dict(run.main, out, metrics)
        click.echo(json.dumps(summary, indent=1, default=float))
        return
    banner = None
    if run.per_class is not None:
        from ._per_class_text import print_per_class

        print_per_class(run, settings)
    else:
        from ..run.text import line_width, run_header, terminal_blocks

        result = run.main
        p = next(iter(result.explanations.values())).params
        banner, header = run_header(run)
        if banner and early is None:  # a banner said before the embedding is not said again
            click.secho(banner, fg="red", bold=True)
        click.echo(header)
        import textwrap

        if ctx.get_parameter_source("sentence_set") is click.core.ParameterSource.DEFAULT:  # trial 32: microscopy
            said = (  # images described in words of weather and seasons, unsaid
                f"Sentences: lbee's built-in '{sentence_set}' set ({len(result.sentences)} capture conditions: "
                "weather, lighting, season, image quality, viewpoint, place). Your domain's words go in --sentences "
                "(a file of sentences, or a grammar: docs/guide/grammars.md)."
            )
            click.echo(textwrap.fill(said, line_width()))

        from ..run.text import first_method, groups_line, order_line

        n_groups = len(result.explanations[settings.methods[0]].hard_clusters)
        width = line_width()
        in_groups = sum(len(c.indices) for c in result.explanations[settings.methods[0]].hard_clusters)
        from ..reports.other_images import unassigned_holding

        held = int(unassigned_holding(result.explanations, run.relevance).sum())
        click.echo(textwrap.fill(groups_line(p, n_groups, settings, in_groups, held), width))
        click.echo(textwrap.fill(order_line(result.extra.get("confirmation"), result.performance), width))
        read_first = first_method(result.explanations, others := bool(obj.get("verbose")))[1]  # the rest with -v
        click.echo(("" if read_first is None else textwrap.fill(read_first, width)) + "\n")
        click.echo(terminal_blocks(result, others=others))
        if metrics:
            click.echo(f"\nScored against --relevance (o = {settings.o:g}):")
            click.echo(f"  {'method':<9} {'AHR':>6} {'ACR':>6} {'TPR':>6} {'JI':>6}")
            main = metrics[0]["slicer"]  # the other slicers' rows are in metrics.csv
            for r in (r for r in metrics if r["slicer"] == main):
                click.echo(f"  {r['method']:<9} " + " ".join(f"{r[k]:>6.3f}" for k in ("AHR", "ACR", "TPR", "JI")))
            from ..run.text import FEW_IMAGES, metric_legend

            few = [len(c.indices) for c in next(iter(result.explanations.values())).hard_clusters]
            click.echo(metric_legend([r["method"] for r in metrics], [n for n in few if n < FEW_IMAGES]))
        if result.failures:
            click.echo(f"\n{len(result.failures)} image(s) skipped (listed in the report).", err=True)
    if out:
        files = ", ".join(sorted(f.name for f in Path(folders[0]).iterdir() if f.is_file()))  # what is there
        click.echo(
            f"\nWrote {files} into {folders[0]}"
            + (f" (and {len(folders) - 1} more slicer folder(s))" if len(folders) > 1 else "")
        )
        if run.per_class is None:  # what to do with a failure once it is found
            import textwrap

            from ..run.text import line_width

            page = "report.html (each group's images, and its members as CSV)" if html else "report.md"
            # a report titled by the files ("images · preds"): a thirty-seventh user found --name in the docs only
            titled = "" if dataset_name or model_name else "; --name and --model-name title the report"
            click.echo(
                textwrap.fill(
                    f"Next: read {page}; images.parquet lists every image with its group, for your own tools; "
                    f"`lbee export spotlight {folders[0]}` browses them in Spotlight; --per-class splits each "
                    f"class's errors apart{titled}.",
                    line_width(),
                )
            )
        else:
            page = "report.html (a page per class)" if html else "per_class_summary.csv and per_class_metrics.csv"
            click.echo(f"Next: read {page}.")  # no report.md per class (a twenty-second user was sent to one)
    else:
        click.echo("\nNothing was saved (give --out FOLDER to keep the results).", err=True)
    if early is not None or banner:  # said last too: a sixteenth user read the confirmed statements as real
        from ..run.meaningless import REMEMBER, REMEMBER_GIVEN_GAMMA

        click.secho(REMEMBER_GIVEN_GAMMA if relevance else REMEMBER, fg="red", err=True)


def _warn_unused(ctx, *, image_embeddings, model_spec, images, segmentation=False):
    """One warning naming the options the user gave that this run does not use (they were ignored in silence)."""
    from click.core import ParameterSource

    unused = {}
    precomputed = "the embeddings are precomputed (--image-embeddings)"
    if image_embeddings:  # nothing is embedded
        unused["encoder"] = precomputed
        if images is None:
            unused["strict"] = precomputed + " and no image is read"
        if model_spec is None:  # nor is any image read by a model
            unused["batch_size"] = unused["num_workers"] = precomputed + " and no --model runs"
    if model_spec is None:  # (segmentation label maps are scored over --num-classes)
        for name in ("weights", "image_size") if segmentation else ("weights", "num_classes", "image_size"):
            unused[name] = "no --model runs (the outputs come from --predictions)"
    given = [
        (f"--{n.replace('_', '-')}", why)
        for n, why in unused.items()
        if ctx.get_parameter_source(n) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
    ]
    if given:
        said = "; ".join(f"{opt} ({why})" for opt, why in given)
        click.echo(f"Warning: not used by this run: {said}.", err=True)


def _jobs(value):
    if value == 0:
        raise click.BadParameter("0 workers run nothing; expected 1 or more, or -1 for all cores.")
    return value


def manifest_or_none(images):
    """``images`` when it names a manifest file (an input a run folder could hold), else None."""
    return images if images and Path(images).is_file() else None
