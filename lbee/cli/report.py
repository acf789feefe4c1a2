"""``lbee report CONFIG``: batch HTML reports."""

from __future__ import annotations


import click

from ._base import _log, cli


@cli.command()
@click.argument("config", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Output folder [default: the config's 'output', else lbee_out/report].")
@click.pass_context
def report(ctx, config, out):
    """Batch HTML reports: every dataset × model × method (and slicer) of CONFIG (YAML).

    Each dataset gets report.html, explanation.json and metrics.csv/json; the
    output folder gets index.html. A failing dataset does not stop the others;
    failures are listed at the end and the exit code is 1.
    """
    from ..reports.batch import run_report
    from ..reports.config import ConfigError

    obj = ctx.obj
    try:
        result = run_report(config, output=out, cache_dir=obj["cache_dir"], device=obj["device"],
                            progress=obj["progress"], log=_log)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"\n{len(result.reports)} report(s); index: {result.index}")
    for r in result.reports:
        click.echo(f"  {r['dataset']} / {r['model']}: {r['folder']}/report.html")
    if result.failures:
        click.echo(f"\n{len(result.failures)} failed:", err=True)
        for name, msg in result.failures:
            click.echo(f"  {name}: {msg}", err=True)
        ctx.exit(1)
