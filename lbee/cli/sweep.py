"""``lbee sweep``: sensitivity to K, C and o (LBEE Fig. 6 / 10)."""

from __future__ import annotations

from pathlib import Path

import click

from ._base import METHOD_CHOICES, _fail, _load_npy, _methods, cli


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
    from ..scoring.confidence import scores_from_table
    from ..io.images import read_table
    from ..io.relevance import load_relevance
    from ..io.sentences import load_sentence_set
    from ..analyses.sweep import plot_sweep, sensitivity_sweep

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
