"""``lbee describe --per-class`` in the terminal."""

from __future__ import annotations

import click


def print_per_class(run, settings):
    """A per-class run in the terminal: means over classes, each class's most harmful group, skipped classes."""
    res = run.per_class
    names = run.scores.class_names
    c = (
        f"C = {settings.n_clusters}"
        if settings.images_per_group_per_class is None
        else f"C = {settings.n_clusters}, or one per 10 hard images for a class of fewer"
    )
    click.echo(
        f"Per-class analysis of {len(res.explanations)} classes ({settings.per_class} split, {c}); means over classes:"
    )
    click.echo(res.summary().to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    _print_worst_groups(res, run.scores.performance, names)
    import textwrap

    from ..run.confirm_text import per_class_limits
    from ..run.text import line_width

    said = per_class_limits(grammar=run.inputs.sentence_conditions is not None)
    click.echo("\n" + textwrap.fill(said, line_width(), break_on_hyphens=False))
    if res.skipped:
        click.echo(f"\n{len(res.skipped)} class(es) skipped:", err=True)
        for c, why in list(res.skipped.items())[:20]:
            name = f" ({names[c]})" if names and c < len(names) else ""
            click.echo(f"  class {c}{name}: {why}", err=True)


#: Classes whose worst group the terminal prints (the most hard images first); every class is in per_class.json.
CLASSES_PRINTED = 20


def _print_worst_groups(res, performance, names):
    """Per class (the most hard images first), its most harmful group and that group's sentences."""
    import textwrap

    import numpy as np

    from ..run.text import group_order, line_width

    omega = np.asarray(performance, dtype=float)
    rows = res.metrics.drop_duplicates("class").sort_values(["n_hard", "class"], ascending=[False, True])
    shown = rows.head(CLASSES_PRINTED)
    from ..run.text import first_method

    method = first_method(res.explanations[int(shown.iloc[0]["class"])])[0] if len(shown) else None
    click.echo(f"\nEach class's most harmful group (error rate × size) and its sentences by {method!r}:")
    for r in shown.to_dict("records"):
        c = int(r["class"])
        exp = res.explanations[c][method]
        name = names[c] if names and c < len(names) else str(c)
        head = f"  class {name}: {r['n_hard']} hard of the {r['n_images']} images labelled or predicted {name}"
        if not exp.hard_clusters:
            click.echo(textwrap.fill(head, line_width(), subsequent_indent="      "))
            continue
        g = exp.hard_clusters[group_order(exp.hard_clusters, omega)[0]]
        said = "; ".join(
            exp.sentence_texts[j] if exp.sentence_texts is not None else f"sentence {j}" for j in g.sentences
        )
        rate = 1.0 - float(omega[np.asarray(g.indices)].mean())
        size = len(g.indices)
        line = f"{head}; group of {size} image{'s' if size != 1 else ''}, error rate {rate:.2f}: {said}"
        click.echo(textwrap.fill(line, line_width(), subsequent_indent="      ", break_on_hyphens=False))
    if len(rows) > len(shown):
        click.echo(f"  ... and {len(rows) - len(shown)} more classes (per_class.json holds every one)")
