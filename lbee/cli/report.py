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
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="With --check: read each entry as `lbee serve --root ROOT` reads a job (paths relative to ROOT, and inside "
    "it), to check an entry before `lbee submit`.",
)
@click.option("--keep-going", is_flag=True, help="Run the valid entries even when others have problems.")
@click.option("--schema", is_flag=True, help="Print the config's JSON Schema (for editors) and exit.")
@click.pass_context
def report(ctx, config, out, overwrite, check, root, keep_going, schema):
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
    if root is not None and not check:
        raise click.UsageError("--root goes with --check (a report reads its paths from its config's folder).")
    try:
        if check:
            if root is not None:  # as the service will read it (trial 30: five false "does not exist")
                from ..service.entry_check import entry_file_problems

                (problems, n), where = entry_file_problems(config, root), f"{config} (under --root {root})"
            else:
                cfg = load_report_config(config)
                problems, n, where = config_problems(cfg), len(cfg.datasets), cfg.path
            from ..extras import MissingExtraError
            from ..extras import require_extra as extra_there

            try:  # what the report itself needs, as "nothing runs before they pass" promises (trial 22)
                extra_there("html", needed_for="lbee report")
            except MissingExtraError as exc:
                problems.append(str(exc))
            if problems:
                hint = ""
                if root is None and any("does not exist" in x or "not a file" in x for x in problems):
                    hint = "\n(A job entry for `lbee serve`? Add --root DIR, the server's, to read its paths there)"
                raise ConfigError(f"{len(problems)} problem(s) in {where}:\n  " + "\n  ".join(problems) + hint)
            click.echo(f"{where}: {n} dataset(s), no problem found.")
            if root is None:  # and what the run will assume, which it warns about when it runs
                from ..run.preflight import assumptions

                said = [line for ds in cfg.datasets for line in assumptions(ds)]
                if said:
                    click.echo("The run will assume (each said again when it runs):\n  " + "\n  ".join(said))
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
    if result.index is None:  # every run failed: the index, and each run, are the previous report's (32af N1)
        click.echo("\nNo run succeeded, so the report already there (its index and every run) is left as it was.")
    else:
        click.echo(f"\n{len(result.reports)} report(s); index: {result.index}")
    for r in result.reports:
        click.echo(f"  {r['dataset']} / {r['model']}: {r['folder']}/report.html")
    if result.failures:
        click.echo(f"\n{len(result.failures)} failed:", err=True)
        for name, msg in result.failures:
            click.echo(f"  {name}: {msg}", err=True)
        ctx.exit(1)
