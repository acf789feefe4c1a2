"""``lbee rival10``: the RIVAL10 dataset (real images, exact attribute relevance, object masks)."""

from __future__ import annotations

from pathlib import Path

import click

from ._base import ExistingPath, LbeeError, check_writable_folder, cli, fail, log


@cli.group()
def rival10():
    """RIVAL10, a public dataset of real images with 18 annotated attributes and object masks."""


@rival10.command("export")
@click.argument("root", type=ExistingPath(file_okay=False))
@click.option(
    "--split",
    type=click.Choice(["train", "test"]),
    default="test",
    show_default=True,
    help="The release's split to export.",
)
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder.")
@click.option(
    "--class-map",
    type=ExistingPath(dir_okay=False),
    default=None,
    help="wnid -> class mapping (JSON object or CSV with wnid,class) replacing the release's own class list.",
)
@click.option("--overwrite", is_flag=True, help="Replace an export already in --out.")
@click.pass_context
def rival10_export(ctx, root, split, out, class_map, overwrite):
    """Write manifest.csv, relevance.parquet, rival10.txt and masks/<stem>.png for a split of ROOT.

    ROOT holds train/ordinary/ and test/ordinary/ as released. The attribute
    .pkl files are read with a restricted unpickler (dicts, strings and bytes
    only); a file asking for anything else is refused and nothing in it runs.
    """
    from ..io.staging import OutputExistsError, check_no_replace, recover_leftovers
    from ..rival10 import EXPORT_ENTRIES, export_rival10

    if Path(out).resolve().is_relative_to(Path(root).resolve()):  # sweep 32: the export went into the release
        fail(OutputExistsError(f"--out: {out!r} lies in the release ROOT {root!r}; lbee never writes into it."))
    check_writable_folder(out, "--out")
    recover_leftovers(out)  # a killed export's swap is settled first, even when this one is refused (sweep 32r N3)
    try:  # before any image is read; ROOT and the class map are never replaced, even with --overwrite
        check_no_replace([Path(out) / e for e in EXPORT_ENTRIES], overwrite=overwrite, inputs=[root, class_map])
    except OutputExistsError as exc:
        fail(exc)
    try:
        info = export_rival10(root, out, split, class_map=class_map, progress=ctx.obj.get("progress", True))
    except click.ClickException:
        raise
    except (ValueError, TypeError, KeyError, OSError) as exc:
        fail(exc)
    if info["n_images"] == 0:  # pragma: no cover - load_rival10 refuses an empty split
        raise LbeeError("No image exported.")
    if info["mask_fallbacks"]:
        log(f"{info['mask_fallbacks']} image(s) had no 'entire-object' mask; used the merged mask instead.")
    click.echo(
        f"Exported {info['n_images']} images, {info['n_sentences']} sentences, {info['n_masks']} masks to {info['out']}"
    )
