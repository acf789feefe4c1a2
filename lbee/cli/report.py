"""``lbee report CONFIG``: batch HTML reports."""

from __future__ import annotations

import click

from ._base import ExistingPath, NotUsageError, cli, log, require_extra


@cli.command()
@click.argument("config", required=False, type=ExistingPath(dir_okay=False))
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="Output folder [default: the config's 'output', else lbee_out/report].",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace the report already in the output folder (its index and run folders, together).",
)
@click.option("--check", is_flag=True, help="Only validate every dataset entry (keys, types, paths) and exit.")
@click.option("--keep-going", is_flag=True, help="Run the valid entries even when others have problems.")
@click.option("--schema", is_flag=True, help="Print the config's JSON Schema (for editors) and exit.")
@click.pass_context
def report(ctx, config, out, overwrite, check, keep_going, schema):
    """Batch HTML reports: every dataset × model × method (and slicer) of CONFIG (YAML).

    Each dataset gets report.html, explanation.json and metrics.csv/json; the
    output folder gets index.html. An output folder that holds a report is
    refused unless --overwrite; the report is then replaced whole (the index and
    every run folder together: a kill leaves the old report or the new). Every
    entry is validated first: problems are all listed and nothing runs (exit 2)
    unless --keep-going. A dataset that fails while running does not stop the
    others; failures are listed at the end and the exit code is 1.
    """
    from ..reports.batch import config_problems, run_report
    from ..reports.config import ConfigError, load_report_config

    obj = ctx.obj
    if schema:
        import json

        from ..reports.config import config_schema

        click.echo(json.dumps(config_schema(), indent=1))
        return
    if config is None:
        raise click.UsageError("Give CONFIG (a YAML file), or --schema.")
    try:
        if check:
            cfg = load_report_config(config)
            problems = config_problems(cfg)
            from ..extras import MissingExtraError
            from ..extras import require_extra as extra_there

            try:  # what the report itself needs, as "nothing runs before they pass" promises (trial 22)
                extra_there("html", needed_for="lbee report")
            except MissingExtraError as exc:
                problems.append(str(exc))
            if problems:
                raise ConfigError(f"{len(problems)} problem(s) in {cfg.path}:\n  " + "\n  ".join(problems))
            click.echo(f"{config}: {len(cfg.datasets)} dataset(s), no problem found.")
            return
        require_extra("html", needed_for="lbee report")  # every report is an HTML page
        result = run_report(
            config,
            output=out,
            cache_dir=obj["cache_dir"],
            device=obj["device"],
            progress=obj["progress"],
            log=log,
            keep_going=keep_going,
            overwrite=overwrite,
        )
    except ConfigError as exc:  # the command line was right, the YAML was not
        raise NotUsageError(str(exc)) from None
    click.echo(f"\n{len(result.reports)} report(s); index: {result.index}")
    for r in result.reports:
        click.echo(f"  {r['dataset']} / {r['model']}: {r['folder']}/report.html")
    if result.failures:
        click.echo(f"\n{len(result.failures)} failed:", err=True)
        for name, msg in result.failures:
            click.echo(f"  {name}: {msg}", err=True)
        ctx.exit(1)
