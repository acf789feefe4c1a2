"""``lbee submit``: a job to a ``lbee serve``, its progress as it runs, and its results."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ._base import ExistingPath, LbeeError, check_writable_folder, cli


@cli.command()
@click.argument("entry", type=ExistingPath(dir_okay=False))
@click.option(
    "--url", envvar="LBEE_URL", default=None, help="The server [env LBEE_URL; default http://127.0.0.1:8000]."
)
@click.option("--token", envvar="LBEE_TOKEN", default=None, help="An API token of submit scope [env LBEE_TOKEN].")
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="Write the finished job's report.html, explanation.json, images.parquet and metrics.json here.",
)
@click.option("--model", default=None, help="Whose results --out receives, when the entry has several models.")
@click.option("--overwrite", is_flag=True, help="Replace result files already in --out.")
@click.option("--wait/--no-wait", default=True, show_default=True, help="Follow the job until it ends.")
@click.option("--timeout", type=click.FloatRange(min=1), default=None, help="Stop following after this many seconds.")
def submit(entry, url, token, out, model, overwrite, wait, timeout):
    """Submit ENTRY (one dataset entry of a `lbee report` config, YAML or JSON) to `lbee serve` as a job.

    Prints the job's phase and progress (embedding, describing, ...) until it ends, then fetches its results
    into --out. Paths in the entry are relative to the server's --root; the encoder is the entry's `encoder:`.
    """
    from ..service.client import Client, JobFailed, ServiceError, progress_lines

    try:
        client = Client(url, token)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--url") from None
    if out:  # before the job runs: refused now, not after minutes of work
        from ..io.staging import check_no_replace, recover_leftovers
        from ..service.client import RESULT_FILES, read_entry

        check_writable_folder(out, "--out")  # a FIFO or a dangling link was refused only after the job ran
        recover_leftovers(out)  # a killed fetch's stage is settled first, even when the command is refused (sweep 32g)
        check_no_replace([Path(out) / name for name in RESULT_FILES], overwrite=overwrite)
        models = [m.get("name") for m in read_entry(entry).get("models") or () if isinstance(m, dict)]
        if model is None and len(models) > 1:  # the server would answer with the first model's files alone
            raise LbeeError(
                f"--out: {entry!r} has {len(models)} models ({', '.join(map(str, models))}); pass --model NAME to "
                "say whose results --out receives."
            )
        if model is not None and models and model not in models:  # not after the job has run
            raise LbeeError(f"--model {model!r}: {entry!r} has the models {', '.join(map(str, models))}.")
    from ..run.identity import RANDOM_WEIGHTS_BANNER, is_random_spec
    from ..service.client import read_entry

    try:
        encoder = read_entry(entry).get("encoder")
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="ENTRY") from None
    try:
        job = client.submit(entry)
        click.echo(
            f"job {job['id']} {'(an identical job, already queued or running) ' if job.get('reused') else ''}"
            f"{job['status']}: {client.url}/v1/jobs/{job['id']}"
        )
        if job.get("earlier"):
            click.echo(
                f"  the same entry ran before as job {job['earlier']}: it runs again (its files may have changed); "
                f"that job's results stay at {client.url}/v1/jobs/{job['earlier']}"
            )
        if isinstance(encoder, str) and is_random_spec(encoder):  # once the job is accepted, before it runs
            click.secho(RANDOM_WEIGHTS_BANNER.format(encoder=encoder.rsplit("@", 1)[0]), fg="yellow", err=True)
        if not wait:
            return
        t0, seen = time.monotonic(), set()
        job = client.wait(
            job["id"], timeout=timeout, on_progress=lambda j: click.echo("\n".join(progress_lines(j, seen, t0)))
        )
        for run in job.get("runs") or ():  # where to read it: the report page of each of the job's runs
            if not isinstance(run, dict):
                continue
            name = str(run.get("dataset", "?")) + (f" / {run['model']}" if run.get("model") else "")
            link = (run.get("links") or {}).get("report") if isinstance(run.get("links"), dict) else None
            if isinstance(link, str):
                click.echo(f"report of {name}: {client.url}{link}")
            _echo_findings(client, job["id"], run.get("model"), name)
        if out:
            for path in client.fetch(job["id"], out, model, overwrite=overwrite):
                click.echo(f"Wrote {path}")
    except JobFailed as exc:
        raise LbeeError(str(exc)) from None
    except (ServiceError, TimeoutError) as exc:
        raise LbeeError(str(exc)) from None


def _leads(explanation):
    """Each hard group's first sentence from the describer read first, in the run's order (texts; [] if none)."""
    from ..run.text import first_method

    methods = explanation.get("methods") if isinstance(explanation, dict) else None
    texts = explanation.get("sentences") if isinstance(explanation, dict) else None
    if not isinstance(methods, dict) or not methods or not isinstance(texts, list):
        return []
    lead = methods.get(first_method(methods)[0]) or {}
    said = []
    for chosen in lead.get("hard_sentences") or ():
        if isinstance(chosen, list) and chosen and isinstance(chosen[0], int) and 0 <= chosen[0] < len(texts):
            said.append(str(texts[chosen[0]]).replace("\n", " "))
    return said


#: Confirmed statements `lbee submit` prints per run (the report and `Client.confirmed` have them all).
FINDINGS_SHOWN = 3


def _echo_findings(client, job_id, model, name):
    """A run's strongest confirmed statements, after its report's link (a twenty-first user saw no finding)."""
    from ..run.untested import untested_reason
    from ..service.client import ServiceError, printable
    from ..service.reading import confirmed_statements

    try:
        explanation = client.explanation(job_id, model)
        listed = [s for s in confirmed_statements(explanation) if s.get("adds_failure")]
    except (ServiceError, ValueError) as exc:  # the job's report is there; its findings are not readable now
        click.echo(f"  (its confirmed statements could not be read: {exc})")
        return
    untested = untested_reason(explanation.get("confirmation"))
    if untested is not None:  # "none confirmed" read as "tested, and none held" (trial 25)
        click.echo(f"  {name}: no statement was tested on held-out images ({printable(untested)}); its leads:")
        leads = _leads(explanation)  # what it found, untested (trial 26: only the report had them)
        for text in leads[:FINDINGS_SHOWN]:
            click.echo(f'    "{printable(text)}"')
        if len(leads) > FINDINGS_SHOWN:
            click.echo(f"    and {len(leads) - FINDINGS_SHOWN} more (the report)")
        return
    if not listed:
        click.echo(f"  {name}: no statement confirmed on held-out images (the report lists the leads)")
        return
    from ..run.confirm_text import holds_words
    from ..run.identity import means_nothing
    from ..run.meaningless import meaningless_caveat

    but = f"; but {meaningless_caveat(listed)}" if means_nothing(explanation.get("encoder")) else ""
    click.echo(f"  {name}, confirmed on held-out images, strongest first{but}:")
    for s in listed[:FINDINGS_SHOWN]:
        text = printable(str(s["text"])).replace("\n", " ")  # a server's text reaches no terminal raw (sweep 32d)
        click.echo(
            f'    "{text}": {holds_words(s)}error rate {s["error_rate_in"]:.2f} against {s["error_rate_out"]:.2f}'
        )
    if len(listed) > FINDINGS_SHOWN:
        click.echo(f"    and {len(listed) - FINDINGS_SHOWN} more (the report, or Client.confirmed)")
