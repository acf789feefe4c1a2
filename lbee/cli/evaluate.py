"""``lbee evaluate``: AHR / ACR / TPR / JI of an explanation.json."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ._base import LbeeError, _fail, cli


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

    from ..core.evaluation import evaluate as evaluate_fn
    from ..io.images import read_table
    from ..run.pipeline import load_explanations
    from ..io.relevance import load_relevance

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
