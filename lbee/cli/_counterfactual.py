"""``lbee demo``'s counterfactual check: each hypothesis's statement tried on fresh renders of the world."""

from __future__ import annotations

import click


def echo_counterfactuals(ec, analysis, *, method="compose", random_state=0):
    """Print, per hypothesis of ``method``, the model's accuracy where its first sentence holds and per variant.

    Renders `lbee.bench.counterfactual.DEMO_COUNTERFACTUAL` images per statement and per variant, seeded
    by ``random_state`` (`lbee.bench.counterfactual.hypothesis_checks`).
    """
    from ..bench.counterfactual import DEMO_COUNTERFACTUAL, hypothesis_checks

    exp = analysis.result.explanations.get(method)
    if exp is None:
        return
    checks = hypothesis_checks(ec, analysis, method=method, n_images=DEMO_COUNTERFACTUAL, random_state=random_state)
    covers = {d["cluster"]: d["blindspot"] for d in analysis.description_details.get(method, []) if d.get("covered")}
    import textwrap

    from ..run.text import line_width

    click.echo(
        "\n"
        + textwrap.fill(
            f"Counterfactual check, the world's own ground truth: the model on {DEMO_COUNTERFACTUAL} fresh renders "
            f"where each hypothesis's '{method}' statement holds, and on {DEMO_COUNTERFACTUAL} where exactly one of "
            "its conditions is changed (low where it holds: the statement is the failure; high once a condition is "
            "changed: the failure needs that condition):",
            line_width(),
        )
    )
    from ..run.text import FEW_IMAGES, few_line

    few = {}
    for i, (c, check) in enumerate(zip(exp.hard_clusters, checks)):
        if len(c.indices) < FEW_IMAGES and i not in covers:
            few[i] = len(c.indices)
            continue
        of = f"; blindspot {covers[i]}" if i in covers else ""
        if check is None:
            click.echo(f"  hard group {i} ({len(c.indices)} images{of}): no statement over the world's attributes")
            continue
        click.echo(f'  hard group {i} ({len(c.indices)} images{of}): "{check.statement}"')
        for line in check.lines():
            click.echo(f"      {line}")
    if few:
        click.echo(few_line(few))
