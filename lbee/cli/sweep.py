"""``lbee sweep``: sensitivity to K, C and o (LBEE Fig. 6 / 10)."""

from __future__ import annotations

from pathlib import Path

import click

from ..analyses.sweep import C_GRID, K_GRID, O_GRID
from ..run.settings_cli import as_cli_message, settings_from_options, settings_options
from ._base import ExistingPath, check_encoder_spec, check_writable_folder, cli, fail


def _number_list(grid):
    """A grid option's parser: values of the knob's range (lbee.run.limits.SWEEP_RANGES), at most MAX_SWEEP_POINTS."""
    from .._validation import parse_number
    from ..run.limits import MAX_SWEEP_POINTS, SWEEP_RANGES

    kind, low, high = SWEEP_RANGES[grid]

    def parse(ctx, param, value):
        if value is None:
            return None
        if value.strip() == "":
            return []
        out = []
        for part in value.split(","):
            try:
                out.append(parse_number(part, kind))
            except ValueError:
                raise click.BadParameter(
                    f"{part.strip()!r} is not a{'n integer' if kind is int else ' number'}; "
                    "expected a comma-separated list such as 1,3,5."
                ) from None
            if not low <= out[-1] <= high:  # also refuses nan
                raise click.BadParameter(f"{part.strip()!r} is outside [{low}, {high}].")
        if len(out) > MAX_SWEEP_POINTS:
            raise click.BadParameter(f"{len(out)} values; a grid has at most {MAX_SWEEP_POINTS}.")
        return out

    return parse


@cli.command()
@click.argument("images", required=False, type=ExistingPath())
@click.option(
    "--encoder",
    default="open_clip",
    show_default=True,
    help="Encoder spec for IMAGES (as `lbee describe`): open_clip[:MODEL[@TAG]], spotcheck.",
)
@click.option(
    "--image-embeddings",
    type=ExistingPath(dir_okay=False),
    help="(n, d) .npy image embeddings (rows in --predictions order), instead of IMAGES.",
)
@click.option(
    "--sentence-embeddings",
    type=ExistingPath(dir_okay=False),
    help="(N, d) .npy sentence embeddings [default: the encoder embeds --sentences].",
)
@click.option(
    "--sentence-set",
    "--sentences",
    "sentence_set",
    default="conditions",
    show_default=True,
    help="Sentence set (for its size and the output).",
)
@click.option(
    "--predictions",
    required=True,
    type=ExistingPath(dir_okay=False),
    help="Table with the model's confidence ('confidence' or 'prob_<class>' columns) and per-image performance "
    "('performance', or label / pred), rows in embedding order.",
)
@click.option(
    "--relevance",
    required=True,
    type=ExistingPath(dir_okay=False),
    help="Which sentences are true of which images (relevance Γ, as for `lbee evaluate`).",
)
@click.option("--logits", is_flag=True, help="The prob_<class> columns of --predictions hold logits (softmax them).")
@click.option(
    "--k-grid",
    callback=_number_list("K"),
    default=",".join(map(str, K_GRID)),
    show_default=True,
    help="Sentences per cluster to try ('' skips).",
)
@click.option(
    "--clusters-grid",
    callback=_number_list("C"),
    default=",".join(map(str, C_GRID)),
    show_default=True,
    help="Cluster counts to try ('' skips).",
)
@click.option(
    "--o-grid",
    callback=_number_list("o"),
    default=",".join(f"{v:g}" for v in O_GRID),
    show_default=True,
    help="Severities to try ('' skips).",
)
@settings_options("methods", "confidence_from", "k", "clusters", "tau", "a", "o", "ward")
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default="lbee_out/sweep",
    show_default=True,
    help="Folder for sweep.csv and sweep.png (refused when it holds them, unless --overwrite).",
)
@click.option("--overwrite", is_flag=True, help="Replace the sweep.csv and sweep.png already in --out.")
@click.pass_context
def sweep(
    ctx,
    images,
    encoder,
    image_embeddings,
    sentence_embeddings,
    sentence_set,
    predictions,
    relevance,
    logits,
    k_grid,
    clusters_grid,
    o_grid,
    out,
    overwrite,
    **knobs,
):
    """Vary the sentences per group (K), the number of groups (C) and the severity (o) one at a time.

    Writes a table and plots of the four scores of `lbee evaluate` (ACR / AHR / TPR / JI), as the LBEE
    paper's Figures 6 and 10.

    Starts from IMAGES and --encoder, like `lbee describe`, or from precomputed
    --image-embeddings and --sentence-embeddings (the similarity threshold τ then
    defaults from their provenance, see `lbee embed`). -k, --clusters and --o are the values held
    fixed while another one varies.
    """
    from ..analyses.sweep import plot_sweep, sensitivity_sweep
    from ..io.staging import OutputExistsError, check_no_replace, staged_entries
    from ..run.inputs import load_inputs
    from ..run.preflight import preflight
    from ..run.scores import model_scores
    from ..run.specs import DatasetSpec, ModelSpec

    try:
        settings = settings_from_options(knobs)
    except ValueError as exc:
        raise click.UsageError(as_cli_message(exc)) from None
    if images is None and not (image_embeddings and sentence_embeddings):
        raise click.UsageError("Give IMAGES (with --encoder), or --image-embeddings and --sentence-embeddings.")
    if images is not None and image_embeddings:
        raise click.UsageError("Give IMAGES or --image-embeddings, not both.")
    if images is not None:
        check_encoder_spec(encoder, weights=True)
    check_writable_folder(out, "--out")
    try:  # before any embedding or describe
        given = (images, image_embeddings, sentence_embeddings, sentence_set, predictions, relevance)
        inputs = [p for p in given if isinstance(p, str) and Path(p).is_file()]  # never replaced, even --overwrite
        check_no_replace([Path(out) / "sweep.csv", Path(out) / "sweep.png"], overwrite=overwrite, inputs=inputs)
    except OutputExistsError as exc:
        fail(exc)
    obj = ctx.obj or {}
    ds = DatasetSpec(
        name="sweep",
        images=Path(images) if images else None,
        encoder=encoder,
        image_embeddings=Path(image_embeddings) if image_embeddings else None,
        sentence_embeddings=Path(sentence_embeddings) if sentence_embeddings else None,
        sentence_set=sentence_set,
        models=[ModelSpec(name=Path(predictions).stem, predictions=Path(predictions))],
        relevance={"ground_truth": Path(relevance)},
        settings=settings,
        logits=logits,
    )
    try:
        preflight(ds)  # tables, sentence set and provenance before any embedding
        inputs = load_inputs(
            ds, cache_dir=obj.get("cache_dir"), device=obj.get("device"), progress=obj.get("progress", False)
        )
        scores = model_scores(ds, ds.models[0], inputs)
        table = sensitivity_sweep(
            inputs.embeddings,
            inputs.sentence_embeddings,
            relevance=inputs.relevance,
            performance=scores.performance,
            confidence=scores.confidence,
            K=k_grid,
            C=clusters_grid,
            o=o_grid,
            methods=list(settings.methods),
            k=settings.k,
            n_clusters=settings.n_clusters,
            tau=settings.resolved_tau(inputs.encoder_tau),
            a=settings.a,
            o_default=settings.o,
            ward=settings.ward,
        )
        with staged_entries(Path(out), replaces=("sweep.csv", "sweep.png")) as stage:  # the pair replaced whole
            table.to_csv(stage / "sweep.csv", index=False)
            plot_sweep(table, stage / "sweep.png")
    except click.ClickException:
        raise
    except (ValueError, TypeError, OSError) as exc:
        fail(exc)
    click.echo(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    click.echo(f"\nWrote {Path(out)}/sweep.csv and sweep.png")
