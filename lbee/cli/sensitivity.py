"""``lbee sensitivity``: foreground vs background noise (RFS, iRFS) and saliency alignment (RIVAL10 §5)."""

from __future__ import annotations

from pathlib import Path

import click

from ..run.limits import MAX_IMAGE_SIZE, MAX_NUM_CLASSES, MAX_TRIALS
from ..run.scores import model_batch_size
from ._base import SEED, ExistingPath, LbeeError, batch_size_option, check_writable_folder, cli, fail, log


def _sigmas(value):
    from .._validation import parse_number
    from ..analyses.sensitivity import check_sigmas

    parts = str(value).split(",")
    if any(not s.strip() for s in parts):  # '30,,60' or a trailing comma: a number was left out
        raise click.BadParameter(
            f"expected comma-separated numbers, none left empty; received {value!r}.", param_hint="--sigmas"
        )
    try:
        return check_sigmas([parse_number(s) for s in parts])
    except ValueError as exc:  # the library's rule, its words with the option's name
        said = str(exc).replace("`sigmas` must be", "expected").replace("`sigmas`", "it")
        raise click.BadParameter(said, param_hint="--sigmas") from None


def _from_manifest(images, masks):
    import numpy as np

    from ..analyses.sensitivity_inputs import find_masks
    from ..io.images import discover_images, read_table

    listing = discover_images(images)
    if listing.labels is None:
        raise LbeeError(
            f"{images!r}: labels come from a manifest (CSV / parquet) with a 'label' column, such as "
            "the manifest.csv written by `lbee rival10 export`; a plain folder has none."
        )
    labels = np.asarray(listing.labels)
    if labels.dtype.kind not in "iu" and not (labels.dtype.kind == "f" and np.all(labels == np.round(labels))):
        raise LbeeError(
            f"Manifest {images!r}: column 'label' must hold integer class indices; received "
            f"values such as {labels[:3].tolist()}."
        )
    labels = labels.astype(int)
    if labels.min() < 0:
        raise LbeeError(f"Manifest {images!r}: column 'label' holds {labels.min()}; expected indices >= 0.")
    class_names = None
    table = read_table(images)
    if "class" in table.columns:
        names = {}
        for y, c in zip(labels, table["class"].astype(str)):
            if names.setdefault(int(y), c) != c:
                raise LbeeError(f"Manifest {images!r}: label {y} is named both {names[int(y)]!r} and {c!r}.")
        class_names = [names.get(i, str(i)) for i in range(max(names) + 1)]
    if masks is None:
        raise LbeeError(
            "--masks DIR is required with IMAGES (object masks <image stem>.png, e.g. the masks/ "
            "folder of `lbee rival10 export`)."
        )
    return listing.paths, find_masks(listing.paths, masks), labels, [Path(p).name for p in listing.paths], class_names


def _from_ec(ec_dir):
    import numpy as np

    from ..analyses.sensitivity_inputs import spotcheck_masks_from_pixels
    from ..spotcheck import ExperimentalConfiguration

    ec = ExperimentalConfiguration.load(ec_dir)
    images = ec.images["test"]
    mask_dir = Path(ec_dir) / "masks" / "test"
    if mask_dir.is_dir():
        from ..io.images import open_image

        def mask(i):  # through the checked reader, at its render's size (a 144 M-pixel mask linked 2,000 times)
            with open_image(mask_dir / f"{i:05d}.png") as m:
                h, w = np.asarray(images[i]).shape[:2]
                if m.size != (w, h):
                    raise ValueError(f"mask {mask_dir / f'{i:05d}.png'} is {m.size}; expected its render's ({w}, {h}).")
                return np.asarray(m.convert("L")) >= 128

        masks = [mask(i) for i in range(len(images))]
        log(f"Object masks from {mask_dir}.")
    else:
        masks = list(spotcheck_masks_from_pixels(images, ec.attributes["test"]))
        log("Object masks recovered from the renders' pixels (the EC folder has no masks/test/).")
    ids = [f"images/test/{i:05d}.png" for i in range(len(images))]
    return list(images), masks, ec.true_labels("test"), ids, ["no square", "square"], ec


@cli.command()
@click.argument("images", required=False, type=ExistingPath())
@click.option(
    "--masks",
    type=ExistingPath(file_okay=False),
    default=None,
    help="Folder of object masks <image stem>.png (white = object).",
)
@click.option(
    "--model",
    "model_spec",
    default=None,
    help="TorchScript file, torchvision:<arch>, timm:<arch> or package.module:factory "
    "[default with --ec: the world's classifier].",
)
@click.option("--weights", type=ExistingPath(dir_okay=False), default=None, help="State-dict file.")
@click.option("--num-classes", type=click.IntRange(2, MAX_NUM_CLASSES), default=None, help="Output classes of --model.")
@click.option(
    "--ec",
    "ec_dir",
    type=ExistingPath(file_okay=False),
    default=None,
    help="A saved SpotCheck world (its test split, masks and classifier) instead of IMAGES.",
)
@click.option(
    "--sigmas",
    default="30,60,90,120,150,180,210",
    show_default=True,
    help="Noise levels σ on the 0-255 pixel scale (std σ/255 on [0, 1] images); 1 to 32 different values.",
)
@click.option(
    "--trials",
    type=click.IntRange(1, MAX_TRIALS),
    default=10,
    show_default=True,
    help="Noise draws per image and σ.",
)
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of the noise trials.")
@click.option(
    "--preprocess",
    type=click.Choice(["imagenet", "spotcheck"]),
    default=None,
    help="Geometry and normalisation [default: imagenet; spotcheck with --ec].",
)
@click.option("--image-size", type=click.IntRange(8, MAX_IMAGE_SIZE), default=None, help="Model input side [224 / 64].")
@batch_size_option(64, "Images of the classifier")
@click.option(
    "--saliency",
    is_flag=True,
    help="Also how well the model's GradCAM saliency overlaps the object masks -> saliency.csv.",
)
@click.option("--layer", default=None, help="GradCAM layer name [default: the last Conv2d].")
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Least-aligned images to print with --saliency.",
)
@click.option("--no-plots", is_flag=True, help="Skip rfs.png / irfs.png.")
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder for sensitivity.csv, summary.json and the plots.",
)
@click.option("--overwrite", is_flag=True, help="Replace the outputs already in --out.")
@click.pass_context
def sensitivity(
    ctx,
    images,
    masks,
    model_spec,
    weights,
    num_classes,
    ec_dir,
    sigmas,
    trials,
    seed,
    preprocess,
    image_size,
    batch_size,
    saliency,
    layer,
    top,
    no_plots,
    out,
    overwrite,
):
    """How much a classifier's accuracy drops under noise on the object versus on the background (RFS / iRFS).

    The relative foreground sensitivity of the RIVAL10 paper: a model that loses more to background noise
    than to object noise leans on the background.

    IMAGES is a manifest (CSV / parquet with path and label, optional class),
    e.g. the manifest.csv of `lbee rival10 export`. Writes sensitivity.csv (per
    image and σ), summary.json (RFS per σ and class, general robustness,
    gray-background accuracy), rfs.png, irfs.png and, with --saliency,
    saliency.csv. Per-image results are cached (keyed by model, image, mask
    and settings), so an interrupted run resumes where it stopped.
    """
    from ..analyses.sensitivity import Preprocess, region_sensitivity, write_outputs
    from ..io.cache import default_cache_dir

    sig = _sigmas(sigmas)
    if (images is None) == (ec_dir is None):
        raise LbeeError("Give either IMAGES (a manifest, with --masks and --model) or --ec DIR, not both.")
    if model_spec is not None:
        from ..run.models import check_model_spec

        try:
            check_model_spec(model_spec)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--model") from None
    from ..analyses.sensitivity_outputs import OUTPUT_ENTRIES
    from ..io.staging import OutputExistsError, check_no_replace, staged_entries

    check_writable_folder(out, "--out")  # before minutes of noise trials, not after
    try:  # the manifest, masks, weights and EC read are never replaced, even with --overwrite
        check_no_replace(
            [Path(out) / e for e in OUTPUT_ENTRIES], overwrite=overwrite, inputs=[images, masks, weights, ec_dir]
        )
    except OutputExistsError as exc:
        fail(exc)
    progress = ctx.obj.get("progress", True)
    try:
        if ec_dir is not None:
            paths, mask_list, labels, ids, class_names, ec = _from_ec(ec_dir)
            preprocess = preprocess or "spotcheck"
            model = ec.model
        else:
            paths, mask_list, labels, ids, class_names = _from_manifest(images, masks)
            preprocess = preprocess or "imagenet"
            model = None
        if model_spec is not None:
            from ..run.models import load_model

            model = load_model(model_spec, weights, num_classes=num_classes)
        elif model is None:
            raise LbeeError("--model is required with IMAGES.")
        pre = Preprocess.preset(preprocess, image_size)
        cache = Path(ctx.obj["cache_dir"]) if ctx.obj.get("cache_dir") else default_cache_dir()
        result = region_sensitivity(
            model,
            paths,
            mask_list,
            labels,
            sigmas=sig,
            trials=trials,
            seed=seed,
            preprocess=pre,
            ids=ids,
            class_names=class_names,
            batch_size=model_batch_size(batch_size, image_size),  # bounded by its pixels, as describe's model
            device=ctx.obj.get("device"),
            cache_dir=cache,
            progress=progress,
        )
        sal = None
        if saliency:
            from ..analyses.saliency import saliency_alignment

            sal = saliency_alignment(
                model,
                paths,
                mask_list,
                labels,
                layer=layer,
                preprocess=pre,
                ids=ids,
                class_names=class_names,
                batch_size=max(1, model_batch_size(batch_size, image_size) // 2),
                device=ctx.obj.get("device"),
                progress=progress,
            )
        # every output of the run moved in together: a kill never leaves this run's table beside the last one's plots
        with staged_entries(Path(out), replaces=OUTPUT_ENTRIES) as stage:
            names = [p.name for p in write_outputs(result, stage, plots=not no_plots)]
            if sal is not None:
                sal.to_csv(stage / "saliency.csv", index=False)
                names.append("saliency.csv")
        written = [Path(out) / name for name in names]
    except click.ClickException:
        raise
    except (ValueError, TypeError, KeyError, OSError, RuntimeError) as exc:
        fail(exc)
    s = result.summary
    click.echo(
        f"{s['n_images']} images, {len(sig)} noise levels x {trials} trials "
        f"({result.n_computed} computed, {s['n_images'] - result.n_computed} from the cache)"
    )
    click.echo(f"clean accuracy {s['accuracy_clean']:.3f}, background grayed {s['accuracy_gray_background']:.3f}")
    click.echo(f"  {'sigma':>6} {'a_fg':>6} {'a_bg':>6} {'abar':>6} {'RFS':>7}")
    for b in s["per_sigma"]:
        r = "   n/a" if b["rfs"] is None else f"{b['rfs']:+.3f}"
        click.echo(f"  {b['sigma']:>6g} {b['a_fg']:>6.3f} {b['a_bg']:>6.3f} {b['abar']:>6.3f} {r:>7}")
    mean = "n/a (undefined at every σ)" if s["rfs_mean"] is None else f"{s['rfs_mean']:+.3f}"
    click.echo(f"RFS averaged over σ: {mean}")
    if sal is not None:
        click.echo(f"\nmean GradCAM/mask IoU {sal['iou'].mean():.3f} (layer {sal['layer'].iloc[0]}); least aligned:")
        for _, row in sal.head(top).iterrows():
            click.echo(f"  {row['iou']:.3f}  {row['image']}  ({row['class']})")
    click.echo("Wrote " + ", ".join(str(p) for p in written))
