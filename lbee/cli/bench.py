"""``lbee bench worlds``: every describer on synthetic worlds of any grammar (the describers' yardstick)."""

from __future__ import annotations

from pathlib import Path

import click

from ._base import cli

#: What ``lbee bench worlds --out`` writes.
OUTPUT_FILES = ("worlds.csv", "discovery.csv", "worlds.md")


def _levels(ctx, param, value):
    from .._validation import parse_number

    try:
        levels = tuple(parse_number(v) for v in value.split(","))
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected comma-separated AUCs such as 0.75,0.88,0.97.") from None
    if not levels or any(not 0.5 < q < 1 for q in levels):
        raise click.BadParameter(f"{value!r}: every level is a median atom ROC-AUC in (0.5, 1).")
    return levels


@cli.group()
def bench():
    """Benchmarks of the describers (the SpotCheck paper bench is `lbee spotcheck bench`)."""


@bench.command("worlds")
@click.argument("grammars", nargs=-1)
@click.option(
    "--levels",
    default="0.75,0.88,0.97",
    show_default=True,
    callback=_levels,
    help="Encoder qualities: median atom ROC-AUCs of the simulated encoder.",
)
@click.option(
    "--worlds",
    "n_worlds",
    type=click.IntRange(1, 1000),
    default=6,
    show_default=True,
    help="Worlds per family and level.",
)
@click.option(
    "--first-seed",
    type=click.IntRange(0, 2**31),
    default=0,
    show_default=True,
    help="Seed of the first world (held-out test worlds: 1000).",
)
@click.option("--n", "n", type=click.IntRange(500, 1_000_000), default=10_000, show_default=True, help="Images.")
@click.option("--failures", type=click.IntRange(1, 6), default=2, show_default=True, help="Planted per world.")
@click.option(
    "--clusters", type=click.IntRange(1, 100), default=15, show_default=True, help="Hard groups the clustering forms."
)
@click.option(
    "--out", type=click.Path(file_okay=False), default=None, help="Write worlds.csv, discovery.csv and worlds.md here."
)
@click.option("--overwrite", is_flag=True, help="Replace the files already in --out.")
@click.pass_context
def worlds(ctx, grammars, levels, n_worlds, first_seed, n, failures, clusters, out, overwrite):
    """Plant failures with confounders in worlds of GRAMMARS and score every describer on them.

    GRAMMARS are built-in names or .grammar.yaml files (default: street_scenes, object_photos, camera_traps).
    Per failure, the first sentence of the hypothesis that overlaps it most is scored by its literals
    (precision, recall, F1, exact match); per world, the discovery rate and false discovery rate (DR / FDR) at
    SpotCheck's 80 % / 80 % and at a loose 50 % / 25 %.
    See docs/worlds.md.
    """
    import warnings

    import pandas as pd
    from tqdm.auto import tqdm

    from ..bench.world_bench import FAMILIES, markdown_table, run_worlds, summarize_worlds
    from ..bench.worlds import check_world_grammar
    from ..io.staging import check_no_replace, staged_entries
    from ._base import check_writable_folder, fail

    families = tuple(grammars) or FAMILIES
    try:
        for g in families:
            check_world_grammar(g)  # every grammar readable, and of a bounded size, before any work
        if out is not None:
            check_writable_folder(out, "--out")
            check_no_replace([Path(out) / f for f in OUTPUT_FILES], overwrite=overwrite, inputs=grammars)
    except (ValueError, OSError) as exc:
        fail(exc)
    total = len(families) * len(levels) * n_worlds
    bar = tqdm(total=total, desc="worlds", unit="world", disable=not ctx.obj.get("progress", True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # arrays carry τ explicitly here; nothing for the user to act on
        runs = run_worlds(
            families,
            levels,
            n_worlds=n_worlds,
            first_seed=first_seed,
            n=n,
            n_failures=failures,
            n_clusters=clusters,
            progress=lambda run: bar.update(1),
        )
    bar.close()
    text = markdown_table(summarize_worlds(runs))
    click.echo(text)
    if out is not None:
        with staged_entries(Path(out), replaces=OUTPUT_FILES) as stage:  # the three files replaced together
            pd.DataFrame([r for run in runs for r in run.rows]).to_csv(stage / "worlds.csv", index=False)
            pd.DataFrame([r for run in runs for r in run.discovery]).to_csv(stage / "discovery.csv", index=False)
            (stage / "worlds.md").write_text(text + "\n", encoding="utf-8")
        click.echo(f"Wrote {out}/worlds.csv (one row per failure and describer) and worlds.md")
