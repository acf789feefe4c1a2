"""``lbee export``: a stored run in another tool (``lbee export spotlight RUN_DIR``)."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from ._base import ExistingPath, LbeeError, check_writable_folder, cli


@cli.group()
def export():
    """Open a run's images in another tool."""


@export.command("spotlight")
@click.argument("run_dir", type=ExistingPath(file_okay=False))
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="The parquet file to write [default: RUN_DIR/spotlight.parquet].",
)
@click.option("--overwrite", is_flag=True, help="Replace the parquet file if it exists.")
@click.option(
    "--images",
    type=ExistingPath(file_okay=False),
    default=None,
    help="The folder relative image paths are read from [default: RUN_DIR]; for a copy fetched from lbee serve, "
    "your copy of the server's data root.",
)
@click.option(
    "--without-images",
    is_flag=True,
    help="Write the table even when no image file is found (Spotlight then shows no pictures).",
)
@click.option(
    "--open",
    "open_",
    is_flag=True,
    help="Start Renumics Spotlight on it now, in this Python (Spotlight needs pandas < 3: a venv of its own).",
)
def spotlight(run_dir, out, overwrite, images, without_images, open_):
    """A run in Renumics Spotlight: one row per image with its hypothesis, sentence, hard / easy and confidence.

    RUN_DIR is the output folder of `lbee describe --out`, `lbee demo` or one model of `lbee report`. Writes a
    parquet file (image path, image id, hypothesis, sentence, finding and its statement: the strongest confirmed
    statement that holds for the image, split, confidence, performance, label, prediction, holds) and prints the
    `spotlight` command that opens it.
    """
    from ..reports.spotlight import export_spotlight, open_in_spotlight, spotlight_command

    if open_:
        import importlib.util

        if importlib.util.find_spec("renumics") is None:  # its pandas < 3 pin cannot join lbee's venv
            raise LbeeError(
                "--open: Renumics Spotlight is not installed here, and it pins pandas < 3, so it goes in a venv of "
                "its own: python -m venv .venv-spotlight && .venv-spotlight/bin/pip install renumics-spotlight; "
                "then run the command this prints with .venv-spotlight/bin/spotlight (without --open)."
            )
    from ..io.staging import check_no_replace
    from ..reports.spotlight import SPOTLIGHT_FILE

    target = Path(out) if out is not None else Path(run_dir) / SPOTLIGHT_FILE
    run_files = [Path(run_dir) / name for name in ("explanation.json", "assignments.parquet", "images.parquet")]
    # the run it reads is never replaced; --out is named only when the user gave it
    check_no_replace([target], overwrite=overwrite, inputs=run_files, option="--out" if out is not None else None)
    # made now, checked and pinned: written at the end into this folder, or nowhere (sweep 32p); a folder left to be
    # made at the end was made a link by another user meanwhile (sweep 32x B1)
    check_writable_folder(target.parent, "--out's folder" if out is not None else "the run's folder")
    try:
        path, embeddings = export_spotlight(
            run_dir,
            target,
            cache_dir=click.get_current_context().obj["cache_dir"],
            images=images,
            without_images=without_images,
        )
    except ValueError as exc:  # the run's files disagree, or are not lbee's: one line, no debugging hint
        raise LbeeError(str(exc)) from None
    except OSError as exc:
        raise LbeeError(f"Cannot write {out or run_dir!r}: {exc.strerror or exc}.") from None
    import pyarrow.parquet as pq

    command = spotlight_command(path, columns=pq.read_schema(path).names)
    missing = pq.read_table(path, columns=["image"]).column("image").null_count
    n = pq.read_metadata(path).num_rows
    if missing:  # say how many pictures Spotlight will lack, and where they were looked for (a twentieth user)
        click.echo(
            f"{missing} of the {n} images' files were not found (relative paths read from {images or run_dir}); "
            "for a copy fetched from lbee serve, give --images with your copy of the server's data root."
        )
    click.echo(f"Wrote {path} ({embeddings}). Open it in Spotlight with:\n  {shlex.join(command)}")
    if open_:
        open_in_spotlight(path)
