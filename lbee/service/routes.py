"""The REST API of ``lbee serve`` (``/v1/...`` and ``/metrics``), added to the app by `add_api_routes`."""

from __future__ import annotations

from fastapi import HTTPException, Path, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse
from sqlalchemy import select

from .._validation import check_name_text, shown
from .settings import MAX_ENTRY_BYTES, MAX_ID, MAX_NESTING
from .views import compare_runs, job_dict, run_dict, stored_findings

RunId = Path(ge=1, le=MAX_ID, description="A run id (from /v1/runs).")


def add_api_routes(app, ctx):
    """Add the ``/v1`` endpoints and ``/metrics`` to ``app``.

    They are closures over ``ctx`` (a `Context`).
    """
    from . import jobs as jobs_mod
    from .db import JOB_STATES, Job, Run
    from .explain import ARRAY_FIELDS, check_depth, parse_json

    db, settings, read, submit = ctx.db, ctx.settings, ctx.read, ctx.submit

    def _run_of_job(job_id, model):
        job, runs = ctx.job(job_id)
        if job.status in ("failed", "cancelled"):
            raise HTTPException(409, f"job {job_id} {job.status}: {job.error}")
        if job.status != "done":
            raise HTTPException(409, f"job {job_id} is {job.status}; no result yet.")
        if model is None:
            return runs[0]
        for r in runs:
            if r.model == model:
                return r
        raise HTTPException(
            404, f"job {job_id} has no model {shown(model)}; it has {', '.join(r.model for r in runs)}."
        )

    # ---- synchronous explanation
    @app.post("/v1/explain", tags=["explain"])
    async def explain(request: Request, token=submit):
        """Explanations of embeddings already in hand (no dataset, no model), answered by a worker process.

        JSON body: ``image_embeddings`` (n × d), ``sentence_embeddings`` (N × d), ``confidence`` (n) or
        ``hard`` / ``easy`` (n booleans), optional ``sentences`` (N strings) and ``settings`` (``a``,
        ``clusters``, ``easy_clusters``, ``k``, ``tau``, ``methods``, ``ward``). Or ``multipart/form-data``
        with the arrays as ``.npy`` files of the same names, ``sentences`` one per line and ``settings`` as
        JSON. Returns ``{"explanations": {method: Explanation.to_dict()}, "settings": ...}``. Requests over
        the server's limits (images, sentences, dimensions, clusters, exact-Ward split) get 413 / 422 naming
        the limit; when every explain process is busy and the queue is full, 503.
        """
        if request.headers.get("content-type", "").startswith("multipart/form-data"):
            form = await request.form(
                max_files=len(ARRAY_FIELDS), max_fields=8, max_part_size=settings.max_upload_bytes
            )
            fields = [(k, await v.read() if hasattr(v, "read") else v) for k, v in form.multi_items()]
            await form.close()
            status, body = await ctx.explain_pool.run("form", fields)
        else:
            status, body = await ctx.explain_pool.run("json", await ctx.body(request, settings.max_upload_bytes))
        headers = {"Retry-After": "5"} if status == 503 else None
        return Response(body, status_code=status, media_type="application/json", headers=headers)

    # ---- jobs
    @app.post("/v1/jobs", status_code=202, tags=["jobs"])
    async def submit_job(request: Request, token=submit):
        """Queue one dataset entry of a ``lbee report`` config (JSON, or YAML with a yaml content type).

        Paths are relative to the server's data root; encoders come from the server's allow-list. An
        identical entry that is queued or running is returned (``reused: true``); a finished one runs again
        as a new job, in new folders (stored runs are never rewritten), from the caches, and ``earlier`` names the
        latest such job.
        """
        raw = await ctx.body(request, MAX_ENTRY_BYTES)
        if "yaml" in request.headers.get("content-type", ""):
            entry = await run_in_threadpool(_yaml, raw)
        else:
            entry = parse_json(raw, "the body")
        job_id, reused = await run_in_threadpool(jobs_mod.submit, db, settings, entry, token=token.name)
        job, runs = ctx.job(job_id)
        # a finished identical entry runs again (its files may have changed): said, with the job it repeats
        earlier = None if reused else await run_in_threadpool(db.earlier_identical, job_id)
        return {**job_dict(job, runs), "reused": reused, "earlier": earlier, "url": f"/v1/jobs/{job_id}"}

    def _yaml(raw):
        import yaml

        from ..reports.yaml_reader import YAMLLimitError, load_yaml

        try:
            # bounded before anything is built: nesting (MAX_NESTING) and alias expansion (an alias bomb); the
            # text aliases add at most MAX_ENTRY_BYTES, so a stored entry stays within twice the body limit
            entry = load_yaml(
                raw.decode("utf-8"), source="the body", max_depth=MAX_NESTING, max_alias_chars=MAX_ENTRY_BYTES
            )
        except YAMLLimitError:
            raise
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise ValueError(f"the body is not valid YAML: {exc}") from None
        check_depth(entry, "the body")
        return entry

    @app.post("/v1/jobs/{job_id}/cancel", status_code=202, tags=["jobs"])
    def cancel_job(job_id: str, token=submit):
        """Cancel a job.

        A queued one at once (``cancelled``); a running one within about a second, in any phase
        (``cancel_requested: true`` until its worker sees it). 409 for a job that has ended.
        """
        ctx.job(job_id)  # 404 for an id that names no job (checked before the database sees it)
        try:
            jobs_mod.cancel(db, job_id)
        except KeyError:
            raise HTTPException(404, f"no job {job_id!r}") from None
        except ValueError as exc:
            raise HTTPException(409, str(exc)) from None
        return job_dict(*ctx.job(job_id))

    @app.get("/v1/jobs", tags=["jobs"])
    def list_jobs(status: str | None = None, limit: int = Query(100, ge=1, le=1000), token=read):
        """The latest jobs, newest first (``status`` filters: queued, running, done, failed, cancelled).

        Each without its log, entry and runs (an empty list here read as "no run"): ``GET /v1/jobs/{id}`` has them.
        """
        if status is not None and status not in JOB_STATES:  # checked before the database sees it
            shown = status if len(status) <= 40 else status[:40] + "…"
            raise ValueError(f"query `status` is {shown!r}; expected one of {', '.join(JOB_STATES)}.")
        with db.session() as s:
            q = select(Job).order_by(Job.created.desc()).limit(limit)
            if status:
                q = q.where(Job.status == status)
            return [{k: v for k, v in job_dict(j).items() if k not in ("log", "entry", "runs")} for j in s.scalars(q)]

    @app.get("/v1/jobs/{job_id}", tags=["jobs"])
    def get_job(job_id: str, token=read):
        """Status, progress (last step and log), errors and, when done, its runs and links."""
        return job_dict(*ctx.job(job_id))

    @app.get("/v1/jobs/{job_id}/explanation", tags=["jobs"])
    def job_explanation(job_id: str, model: str | None = None, token=read):
        """``explanation.json`` of the job's run (``model=`` picks one when the entry has several).

        409 when the stored file was edited since the run wrote it (the loader's checks: its digest, its blocks).
        """
        from .._validation import loads_each_key_once
        from ..run.stored import explanations_of
        from .paths import redact_paths
        from .served_files import served_explanation

        run = _run_of_job(job_id, model)
        path, raw = ctx.checked_bytes(run, "explanation.json")  # the bytes checked are the bytes served (32x B3)
        try:  # served as the group pages read it: an edited file is refused, not handed to a client as genuine
            explanations_of(loads_each_key_once(raw.decode("utf-8")), path)
            body = served_explanation(path, settings, raw)  # recording its image table as served
        except (ValueError, RecursionError) as exc:  # (nested thousands deep)
            detail = redact_paths(f"run {run.id}'s explanation cannot be served: {exc}", settings)
            raise HTTPException(409, detail) from None
        return Response(body, media_type="application/json")

    @app.get("/v1/jobs/{job_id}/metrics", tags=["jobs"])
    def job_metrics(job_id: str, model: str | None = None, token=read):
        """Metric rows (slicer, method, ACR, AHR, TPR, JI, ...): empty without relevance."""
        return run_dict(_run_of_job(job_id, model))

    @app.get("/v1/jobs/{job_id}/images", tags=["jobs"])
    def job_images(job_id: str, model: str | None = None, token=read):
        """``images.parquet`` of the job's run: one row per image (split, group, confidence, label, prediction).

        What ``lbee export spotlight`` reads from a fetched copy. Its ``path`` column is each image's path inside
        the service's data root, as the job named it (never a server path; empty for an image outside it). 409 when
        the stored table disagrees with the run's ``explanation.json``
        (`lbee.reports.stored_table.stored_images_table`).
        """
        from ..reports.stored_table import IMAGES_TABLE
        from .paths import redact_paths
        from .served_files import parquet_bytes, served_images_table

        run = _run_of_job(job_id, model)
        path = ctx.path(run, IMAGES_TABLE)  # 404 when the run has none
        try:  # as the browse pages read it: a table another run wrote, or edited, is not handed out as this one's
            table = served_images_table(path.parent, settings)
        except ValueError as exc:
            detail = redact_paths(f"run {run.id}'s image table cannot be served: {exc}", settings)
            raise HTTPException(409, detail) from None
        return Response(parquet_bytes(table), media_type="application/vnd.apache.parquet")

    @app.get("/v1/jobs/{job_id}/report", response_class=HTMLResponse, tags=["jobs"])
    def job_report(job_id: str, model: str | None = None, token=read):
        """The self-contained HTML report."""
        return ctx.file(_run_of_job(job_id, model), "report.html", "text/html; charset=utf-8")

    # ---- runs and comparisons
    @app.get("/v1/runs", tags=["runs"])
    def list_runs(
        dataset: str | None = None, model: str | None = None, limit: int = Query(200, ge=1, le=5000), token=read
    ):
        """Stored runs with their metrics, newest first; filter by dataset and / or model."""
        for key, value in (("dataset", dataset), ("model", model)):
            if value is not None:  # before the database: PostgreSQL refuses a NUL with an error of its own
                check_name_text(value, f"query {key}")
        with db.session() as s:
            q = select(Run).order_by(Run.id.desc()).limit(limit)
            if dataset is not None:
                q = q.where(Run.dataset == dataset)
            if model is not None:
                q = q.where(Run.model == model)
            return [_with_findings(r) for r in s.scalars(q)]

    @app.get("/v1/runs/{run_id}", tags=["runs"])
    def get_run(run_id: int = RunId, token=read):
        return _with_findings(ctx.run(run_id))

    def _with_findings(run):
        """A run's row and what it found: its strongest confirmed statements, or why none (the run list's column).

        ``files_intact`` says whether its folder still holds its own files: listed either way, with the metrics
        recorded when it ran, but its files are served and compared only while they are (sweep 32ab N9).
        """
        from .paths import own_files

        intact = bool(own_files(settings.output, run))
        findings = stored_findings(settings.output, run.folder) if intact else None
        return {**run_dict(run), "files_intact": intact, "findings": findings}

    @app.get("/v1/runs/{run_id}/report", response_class=HTMLResponse, tags=["runs"])
    def run_report_page(run_id: int = RunId, token=read):
        return ctx.file(ctx.run(run_id), "report.html", "text/html; charset=utf-8")

    @app.get("/v1/compare", tags=["runs"])
    def compare(a: int = Query(ge=1, le=MAX_ID), b: int = Query(ge=1, le=MAX_ID), token=read):
        """Run ``b`` against run ``a``: metric deltas (b − a) and, per method, the sentences gained and lost."""
        ra, rb = ctx.run(a), ctx.run(b)
        ctx.check_own(ra), ctx.check_own(rb)  # another run's files put in a folder: 409, never compared (32v B4)
        return compare_runs(settings.output, ra, rb)

    @app.get("/metrics", tags=["service"])
    def metrics(token=read):
        """Prometheus text format: jobs by status, queue length, job durations, runs, busy explain processes."""
        from .metrics import render

        body, content_type = render(ctx)
        return Response(body, media_type=content_type)
