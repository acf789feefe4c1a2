"""The FastAPI application of ``lbee serve``: :func:`create_app` builds it from :class:`ServiceSettings`.

Endpoints (OpenAPI at ``/docs``); every one but ``/health`` and the login page
needs a token, sent as ``Authorization: Bearer <token>`` (or, for the HTML
pages and other GET requests from a browser, the cookie set by ``/login``):

- ``POST /v1/explain`` (submit): embeddings in (JSON or ``.npy`` uploads), explanations out.
- ``POST /v1/jobs`` (submit): a ``lbee report`` dataset entry -> a job id.
- ``GET /v1/jobs``, ``GET /v1/jobs/{id}``, ``.../explanation``, ``.../metrics``, ``.../report`` (read).
- ``GET /v1/runs?dataset=&model=``, ``GET /v1/runs/{id}``, ``GET /v1/runs/{id}/report``,
  ``GET /v1/compare?a=&b=`` (read).
- ``GET /`` the list of runs and jobs, ``GET /compare?a=&b=`` (read).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
from pathlib import Path

# This module is imported only when the service is built (lbee.service.create_app), so FastAPI at the top is fine;
# FastAPI resolves the endpoints' annotations in these module globals.
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse
from jinja2 import Environment, PackageLoader, select_autoescape
from sqlalchemy import select

from .settings import MAX_ENTRY_BYTES, ServiceSettings

logger = logging.getLogger("lbee")
COOKIE = "lbee_token"
METRICS = ("ACR", "AHR", "TPR", "JI")


class _TooLarge(Exception):
    pass


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes is answered 413 (by Content-Length or as it streams)."""

    def __init__(self, app, limit):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await self._reject(send)
        seen, started = 0, False

        async def limited_receive():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge()
            return message

        async def tracking_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._reject(send)

    async def _reject(self, send):
        body = json.dumps({"detail": f"request body too large; the limit is {self.limit} bytes "
                                     "(lbee serve --max-upload-mb)."}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def clean(value):
    """JSON-safe: NaN / inf become None (strict JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def _iso(dt):
    return None if dt is None else dt.isoformat(timespec="seconds") + "Z"


def run_dict(run):
    return {"id": run.id, "job": run.job_id, "dataset": run.dataset, "model": run.model, "created": _iso(run.created),
            "n_images": run.n_images, "n_hard": run.n_hard, "seconds": run.seconds, "metrics": clean(run.rows),
            "links": {"report": f"/v1/runs/{run.id}/report", "job": f"/v1/jobs/{run.job_id}"}}


def job_dict(job, runs=()):
    base = f"/v1/jobs/{job.id}"
    out = {"id": job.id, "name": job.name, "status": job.status, "progress": job.progress, "error": job.error,
           "failures": [{"run": label, "error": msg} for label, msg in json.loads(job.failures or "[]")],
           "attempts": job.attempts, "created": _iso(job.created), "started": _iso(job.started),
           "finished": _iso(job.finished), "entry": json.loads(job.entry),
           "log": [ln for ln in (job.log or "").splitlines() if ln][-50:],
           "runs": [run_dict(r) for r in runs]}
    if job.status == "done":
        out["links"] = {"report": f"{base}/report", "explanation": f"{base}/explanation", "metrics": f"{base}/metrics"}
    return out


def compare_runs(output, a, b):
    """Metric deltas (b − a) per slicer × method, and per method the sentences b gained and lost."""
    from ..run.pipeline import load_explanations

    rows_a = {(r["slicer"], r["method"]): r for r in a.rows}
    rows_b = {(r["slicer"], r["method"]): r for r in b.rows}
    metrics = []
    for key in list(rows_a) + [k for k in rows_b if k not in rows_a]:
        ra, rb = rows_a.get(key, {}), rows_b.get(key, {})
        for m in METRICS:
            va, vb = clean(ra.get(m)), clean(rb.get(m))
            metrics.append({"slicer": key[0], "method": key[1], "metric": m, "a": va, "b": vb,
                            "delta": None if va is None or vb is None else vb - va})

    def selected(run):
        path = Path(output) / run.folder / "explanation.json"
        if not path.is_file():
            return {}
        exps, payload = load_explanations(path)
        texts = payload.get("sentences") or []
        return {m: [texts[i] if i < len(texts) else str(i) for i in e.selected] for m, e in exps.items()}

    sa, sb = selected(a), selected(b)
    sentences = {}
    for m in [m for m in sa if m in sb]:
        A, B = set(sa[m]), set(sb[m])
        sentences[m] = {"gained": [s for s in sb[m] if s not in A], "lost": [s for s in sa[m] if s not in B],
                        "kept": [s for s in sb[m] if s in A]}
    return {"a": run_dict(a), "b": run_dict(b), "metrics": metrics, "sentences": sentences}


def create_app(settings, *, start_workers=True):
    """The service as a FastAPI application.

    Parameters
    ----------
    settings : ServiceSettings
    start_workers : bool, default=True
        Start ``settings.workers`` job worker processes with the app (tests
        pass False and run jobs with :func:`lbee.service.jobs.run_next_job`).

    Returns
    -------
    fastapi.FastAPI
        ``app.state.db`` is the :class:`~lbee.service.db.Database`.
    """
    from .._version import __version__
    from . import jobs as jobs_mod
    from .auth import check_token
    from .db import Database, Job, Run

    if not isinstance(settings, ServiceSettings):
        raise TypeError(f"`settings` must be a ServiceSettings; received {type(settings).__name__}.")
    settings.output.mkdir(parents=True, exist_ok=True)
    db = Database(settings.db_url)
    templates = Environment(loader=PackageLoader("lbee.service", "templates"), autoescape=select_autoescape())

    @contextlib.asynccontextmanager
    async def lifespan(app):
        jobs_mod.recover(db, settings)
        runner = None
        if start_workers and settings.workers > 0:
            runner = jobs_mod.JobRunner(db, settings).start()
        app.state.runner = runner
        try:
            yield
        finally:
            if runner is not None:
                await run_in_threadpool(runner.stop)

    app = FastAPI(title="lbee", version=__version__, lifespan=lifespan,
                  description="Find, and describe in plain language, where a computer-vision model fails. "
                              "Every endpoint but /health needs `Authorization: Bearer <token>` "
                              "(`lbee serve token create NAME`).")
    app.state.db, app.state.settings = db, settings
    app.add_middleware(BodyLimit, limit=settings.max_upload_bytes)

    @app.exception_handler(ValueError)
    async def _value_error(request, exc):  # bad input anywhere below is the client's: 422 with the message
        return JSONResponse({"detail": str(exc)}, status_code=422)

    @app.middleware("http")
    async def _headers(request, call_next):
        response = await call_next(request)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        return response

    def _token_of(request):
        header = request.headers.get("authorization")
        if header:
            scheme, _, value = header.partition(" ")
            return value.strip() if scheme.lower() == "bearer" else None
        if request.method == "GET":  # browsers: the cookie of /login, never for requests that change anything
            return request.cookies.get(COOKIE)
        return None

    def need(scope):
        def dependency(request: Request):
            token = _token_of(request)
            if not token:
                raise HTTPException(401, "missing bearer token (Authorization: Bearer <token>; "
                                         "lbee serve token create NAME)", headers={"WWW-Authenticate": "Bearer"})
            row = check_token(db, token)
            if row is None:
                raise HTTPException(401, "invalid or revoked token", headers={"WWW-Authenticate": "Bearer"})
            if scope == "submit" and row.scope != "submit":
                raise HTTPException(403, f"token {row.name!r} is read-only; this needs a token with --scope submit")
            return row
        return dependency

    read, submit = Depends(need("read")), Depends(need("submit"))

    async def _body(request, limit):
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise HTTPException(413, f"request body too large; the limit is {limit} bytes.")
            chunks.append(chunk)
        return b"".join(chunks)

    def _job(job_id):
        with db.session() as s:
            job = s.get(Job, job_id)
            if job is None:
                raise HTTPException(404, f"no job {job_id!r}")
            runs = list(s.scalars(select(Run).where(Run.job_id == job_id).order_by(Run.id)))
        return job, runs

    def _run_of_job(job_id, model):
        job, runs = _job(job_id)
        if job.status == "failed":
            raise HTTPException(409, f"job {job_id} failed: {job.error}")
        if job.status != "done":
            raise HTTPException(409, f"job {job_id} is {job.status}; no result yet.")
        if model is None:
            return runs[0]
        for r in runs:
            if r.model == model:
                return r
        raise HTTPException(404, f"job {job_id} has no model {model!r}; it has {', '.join(r.model for r in runs)}.")

    def _file(run, name, media_type):
        path = (settings.output / run.folder / name).resolve()
        if not path.is_relative_to(settings.output) or not path.is_file():
            raise HTTPException(404, f"{name} of run {run.id} is missing from the output folder.")
        return FileResponse(path, media_type=media_type)

    def _get_run(run_id):
        with db.session() as s:
            run = s.get(Run, run_id)
        if run is None:
            raise HTTPException(404, f"no run {run_id}")
        return run

    # ---- health and login (no token)
    @app.get("/health", tags=["service"])
    def health():
        """Liveness: no token needed."""
        return {"status": "ok", "version": __version__}

    @app.get("/login", response_class=HTMLResponse, include_in_schema=False)
    def login_form(error: str | None = None):
        return templates.get_template("login.html").render(error=error)

    @app.post("/login", include_in_schema=False)
    async def login(request: Request):
        form = await request.form(max_files=0, max_fields=4)
        token = str(form.get("token") or "").strip()
        if check_token(db, token) is None:
            return RedirectResponse("/login?error=invalid+or+revoked+token", status_code=303)
        resp = RedirectResponse("/", status_code=303)
        resp.set_cookie(COOKIE, token, httponly=True, samesite="strict", secure=request.url.scheme == "https")
        return resp

    @app.get("/logout", include_in_schema=False)
    def logout():
        resp = RedirectResponse("/login", status_code=303)
        resp.delete_cookie(COOKIE)
        return resp

    # ---- synchronous explanation
    @app.post("/v1/explain", tags=["explain"])
    async def explain(request: Request, token=submit):
        """Explanations of embeddings already in hand (no dataset, no model), synchronously.

        JSON body: ``image_embeddings`` (n × d), ``sentence_embeddings`` (N × d), ``confidence`` (n) or
        ``hard`` / ``easy`` (n booleans), optional ``sentences`` (N strings) and ``settings`` (``a``,
        ``clusters``, ``easy_clusters``, ``k``, ``tau``, ``methods``, ``ward``). Or ``multipart/form-data``
        with the arrays as ``.npy`` files of the same names, ``sentences`` one per line and ``settings`` as
        JSON. Returns ``{"explanations": {method: Explanation.to_dict()}, "settings": ...}``.
        """
        from .explain import ARRAY_FIELDS, explain_request, load_npy_bytes

        ctype = request.headers.get("content-type", "")
        if ctype.startswith("multipart/form-data"):
            form = await request.form(max_files=len(ARRAY_FIELDS), max_fields=8,
                                      max_part_size=settings.max_upload_bytes)
            body = {}
            for key, value in form.multi_items():
                if hasattr(value, "read"):
                    if key not in ARRAY_FIELDS:
                        raise ValueError(f"unexpected file field {key!r}; files are {', '.join(ARRAY_FIELDS)}.")
                    body[key] = load_npy_bytes(await value.read(), key)
                elif key == "settings":
                    body[key] = _json(value, "settings")
                elif key == "sentences":
                    body[key] = _json(value, key) if value.lstrip().startswith("[") else \
                        [ln for ln in value.splitlines() if ln.strip()]
                elif key in ARRAY_FIELDS:
                    body[key] = _json(value, key)
                else:
                    body[key] = value
        else:
            raw = await _body(request, settings.max_upload_bytes)
            body = await run_in_threadpool(_json, raw, "the body")
        try:
            return JSONResponse(clean(await run_in_threadpool(explain_request, body)))
        except TypeError as exc:
            raise HTTPException(422, str(exc)) from None

    def _json(raw, what):
        try:
            return json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"{what} is not valid JSON: {exc}") from None

    # ---- jobs
    @app.post("/v1/jobs", status_code=202, tags=["jobs"])
    async def submit_job(request: Request, token=submit):
        """Queue one dataset entry of a ``lbee report`` config (JSON, or YAML with a yaml content type).

        Paths are relative to the server's data root. An identical entry that is
        queued or running is returned (``reused: true``); a finished one is run
        again in the same folder, from the caches.
        """
        raw = await _body(request, MAX_ENTRY_BYTES)
        if "yaml" in request.headers.get("content-type", ""):
            import yaml

            from ..reports.config import _loader

            try:
                entry = yaml.load(raw.decode("utf-8"), Loader=_loader())  # noqa: S506 - a SafeLoader subclass
            except (yaml.YAMLError, UnicodeDecodeError) as exc:
                raise ValueError(f"the body is not valid YAML: {exc}") from None
        else:
            entry = _json(raw, "the body")
        job_id, reused = await run_in_threadpool(jobs_mod.submit, db, settings, entry, token=token.name)
        job, runs = _job(job_id)
        return {**job_dict(job, runs), "reused": reused, "url": f"/v1/jobs/{job_id}"}

    @app.get("/v1/jobs", tags=["jobs"])
    def list_jobs(status: str | None = None, limit: int = Query(100, ge=1, le=1000), token=read):
        """The latest jobs, newest first (``status`` filters: queued, running, done, failed)."""
        with db.session() as s:
            q = select(Job).order_by(Job.created.desc()).limit(limit)
            if status:
                q = q.where(Job.status == status)
            return [{k: v for k, v in job_dict(j).items() if k not in ("log", "entry")} for j in s.scalars(q)]

    @app.get("/v1/jobs/{job_id}", tags=["jobs"])
    def get_job(job_id: str, token=read):
        """Status, progress (last step and log), errors and, when done, its runs and links."""
        return job_dict(*_job(job_id))

    @app.get("/v1/jobs/{job_id}/explanation", tags=["jobs"])
    def job_explanation(job_id: str, model: str | None = None, token=read):
        """``explanation.json`` of the job's run (``model=`` picks one when the entry has several)."""
        return _file(_run_of_job(job_id, model), "explanation.json", "application/json")

    @app.get("/v1/jobs/{job_id}/metrics", tags=["jobs"])
    def job_metrics(job_id: str, model: str | None = None, token=read):
        """Metric rows (slicer, method, ACR, AHR, TPR, JI, ...): empty without relevance."""
        return run_dict(_run_of_job(job_id, model))

    @app.get("/v1/jobs/{job_id}/report", response_class=HTMLResponse, tags=["jobs"])
    def job_report(job_id: str, model: str | None = None, token=read):
        """The self-contained HTML report."""
        return _file(_run_of_job(job_id, model), "report.html", "text/html; charset=utf-8")

    # ---- runs and comparisons
    @app.get("/v1/runs", tags=["runs"])
    def list_runs(dataset: str | None = None, model: str | None = None, limit: int = Query(200, ge=1, le=5000),
                  token=read):
        """Stored runs with their metrics, newest first; filter by dataset and / or model."""
        with db.session() as s:
            q = select(Run).order_by(Run.id.desc()).limit(limit)
            if dataset is not None:
                q = q.where(Run.dataset == dataset)
            if model is not None:
                q = q.where(Run.model == model)
            return [run_dict(r) for r in s.scalars(q)]

    @app.get("/v1/runs/{run_id}", tags=["runs"])
    def get_run(run_id: int, token=read):
        return run_dict(_get_run(run_id))

    @app.get("/v1/runs/{run_id}/report", response_class=HTMLResponse, tags=["runs"])
    def run_report_page(run_id: int, token=read):
        return _file(_get_run(run_id), "report.html", "text/html; charset=utf-8")

    @app.get("/v1/compare", tags=["runs"])
    def compare(a: int, b: int, token=read):
        """Run ``b`` against run ``a``: metric deltas (b − a) and, per method, the sentences gained and lost."""
        return compare_runs(settings.output, _get_run(a), _get_run(b))

    # ---- pages
    def _page_token(request):
        token = _token_of(request)
        return check_token(db, token) if token else None

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index(request: Request):
        who = _page_token(request)
        if who is None:
            return RedirectResponse("/login", status_code=303)
        with db.session() as s:
            runs = [run_dict(r) for r in s.scalars(select(Run).order_by(Run.id.desc()).limit(500))]
            jobs = [job_dict(j) for j in s.scalars(select(Job).order_by(Job.created.desc()).limit(200))]
        for r in runs:
            r["main"] = [row for row in r["metrics"] if row.get("slicer") == (r["metrics"][0]["slicer"])] \
                if r["metrics"] else []
        return templates.get_template("index.html").render(runs=runs, jobs=jobs, who=who.name, version=__version__,
                                                           metrics=METRICS, root=str(settings.root))

    @app.get("/compare", response_class=HTMLResponse, include_in_schema=False)
    def compare_page(request: Request, a: int, b: int):
        if _page_token(request) is None:
            return RedirectResponse("/login", status_code=303)
        return templates.get_template("compare.html").render(c=compare_runs(settings.output, _get_run(a),
                                                                            _get_run(b)), version=__version__)

    return app
