"""The FastAPI application of ``lbee serve``: `create_app` builds it from `ServiceSettings`.

Endpoints; every one but ``/health`` and the login page needs a token, sent as
``Authorization: Bearer <token>`` (or, for the HTML pages, the API description
and other GET requests from a browser, the cookie set by ``/login``):

- ``POST /v1/explain`` (submit): embeddings in (JSON or ``.npy`` uploads), explanations out.
- ``POST /v1/jobs`` (submit): a ``lbee report`` dataset entry -> a job id; ``POST /v1/jobs/{id}/cancel``.
- ``GET /v1/jobs``, ``GET /v1/jobs/{id}``, ``.../explanation``, ``.../metrics``, ``.../report`` (read).
- ``GET /v1/runs?dataset=&model=``, ``GET /v1/runs/{id}``, ``GET /v1/runs/{id}/report``,
  ``GET /v1/compare?a=&b=`` (read).
- ``GET /metrics`` (read): Prometheus text format.
- ``GET /`` the list of runs and jobs, ``GET /compare?a=&b=``, ``GET /docs`` and ``/openapi.json`` (read).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os

# This module is imported only when the service is built (lbee.service.create_app), so FastAPI at the top is fine;
# FastAPI resolves the endpoints' annotations in these module globals.
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from jinja2 import ChoiceLoader, Environment, PackageLoader
from sqlalchemy import select

from .settings import ServiceSettings

logger = logging.getLogger("lbee")
COOKIE = "lbee_token"


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
        body = json.dumps(
            {"detail": f"request body too large; the limit is {self.limit} bytes (lbee serve --max-upload-mb)."}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})


class Context:
    """What the route modules share: the database, settings, templates, auth dependencies and look-ups."""

    def __init__(self, db, settings, templates):
        from .auth import check_token

        self.db, self.settings, self.templates = db, settings, templates
        self.check_token = check_token
        self.read, self.submit = Depends(self.need("read")), Depends(self.need("submit"))
        self.runner = self.explain_pool = None

    def token_of(self, request):
        header = request.headers.get("authorization")
        if header:
            scheme, _, value = header.partition(" ")
            return value.strip() if scheme.lower() == "bearer" else None
        if request.method == "GET":  # browsers: the cookie of /login, never for requests that change anything
            return request.cookies.get(COOKIE)
        return None

    def need(self, scope):
        def dependency(request: Request):
            token = self.token_of(request)
            if not token:
                raise HTTPException(
                    401,
                    "missing bearer token (Authorization: Bearer <token>; lbee serve token create NAME)",
                    headers={"WWW-Authenticate": "Bearer"},
                )
            row = self.check_token(self.db, token)
            if row is None:
                raise HTTPException(401, "invalid or revoked token", headers={"WWW-Authenticate": "Bearer"})
            if scope == "submit" and row.scope != "submit":
                raise HTTPException(403, f"token {row.name!r} is read-only; this needs a token with --scope submit")
            return row

        return dependency

    def page_token(self, request):
        token = self.token_of(request)
        return self.check_token(self.db, token) if token else None

    async def body(self, request, limit):
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise HTTPException(413, f"request body too large; the limit is {limit} bytes.")
            chunks.append(chunk)
        return b"".join(chunks)

    def job(self, job_id):
        from .db import Job, Run

        if not _plausible_id(job_id):  # a NUL or a megabyte of id never reaches the database
            raise HTTPException(404, f"no job {job_id[:40]!r}")
        with self.db.session() as s:
            job = s.get(Job, job_id)
            if job is None:
                raise HTTPException(404, f"no job {job_id!r}")
            runs = list(s.scalars(select(Run).where(Run.job_id == job_id).order_by(Run.id)))
        return job, runs

    def run(self, run_id):
        from .db import Run

        with self.db.session() as s:
            run = s.get(Run, run_id)
        if run is None:
            raise HTTPException(404, f"no run {run_id}")
        return run

    def path(self, run, name):
        """The stored file ``name`` of ``run`` (404 when it has none)."""
        from .paths import run_file

        path = run_file(self.settings.output, run.folder, name)  # never a file linked out of the run's folder
        if path is None:
            raise HTTPException(404, f"{name} of run {run.id} is missing from the output folder.")
        self.check_own(run)
        return path

    def check_own(self, run):
        """409 unless ``run``'s folder holds its own files (`lbee.service.paths.check_own_files`)."""
        from .paths import check_own_files

        try:
            check_own_files(self.settings.output, run)
        except ValueError as exc:
            raise HTTPException(409, str(exc)) from None

    def file(self, run, name, media_type):
        """The stored file ``name`` of ``run`` as an answer, read through the descriptor checked.

        Read by path, a FIFO swapped in after the check blocked a server thread for good (sweep 32t).
        """
        path, data = self.checked_bytes(run, name)
        return Response(data, media_type=media_type)

    def checked_bytes(self, run, name):
        """``(path, bytes)`` of ``run``'s file ``name``, the bytes served being the bytes checked.

        Checked, then read again by path, another run's file swapped in between was served (sweep 32x B3): the
        bytes read are hashed and compared with the digest recorded with the run.
        """
        import hashlib

        from .._files import read_bytes_file
        from .paths import recorded_digest

        path = self.path(run, name)
        try:
            data = read_bytes_file(path, name)
        except (OSError, ValueError):  # no longer a regular file, or gone: as missing
            raise HTTPException(404, f"{name} of run {run.id} is missing from the output folder.") from None
        recorded = recorded_digest(run, name)
        if getattr(run, "files_sha256", None) is not None and hashlib.sha256(data).hexdigest() != recorded:
            raise HTTPException(409, f"run {run.id}'s {name} is not the one recorded with the run (changed).")
        return path, data


def _plausible_id(job_id):
    """Whether ``job_id`` could name a job (a name without control characters); others are 404 before the database."""
    from .._validation import check_name_text

    try:
        check_name_text(job_id, "job id")
    except ValueError:
        return False
    return True


def page_templates():
    """The service's page templates, every value escaped.

    With the reports' templates too: the run list's findings cell is the batch index's (one place). Every template
    escapes what it prints, whatever its file's suffix: escaping chosen by suffix (``.html``) left the reports'
    ``.j2`` macro raw, and a statement's markup ran in the run list's page (sweep 32s B3).
    """
    from .._version import __version__

    loader = ChoiceLoader([PackageLoader("lbee.service", "templates"), PackageLoader("lbee.reports", "templates")])
    templates = Environment(loader=loader, autoescape=True)
    templates.globals["version"] = __version__  # every page's header (the login page had none)
    return templates


def create_app(settings, *, start_workers=True, explain_pool=None):
    """The service as a FastAPI application.

    Parameters
    ----------
    settings : ServiceSettings
    start_workers : bool, default=True
        Start ``settings.workers`` job worker processes with the app (tests
        pass False and run jobs with `lbee.service.jobs.run_next_job`).
        The explain processes start on the first request then.
    explain_pool : lbee.service.workers.ExplainPool, optional
        Shared explain processes (tests share one across apps); the app does not shut it down.

    Returns
    -------
    fastapi.FastAPI
        ``app.state.db`` is the `Database`, ``app.state.ctx`` the `Context`.
    """
    from .._version import __version__
    from . import jobs as jobs_mod
    from .browse import add_browse_routes
    from .db import Database
    from .pages import add_pages
    from .routes import add_api_routes
    from .workers import ExplainPool, JobRunner

    if not isinstance(settings, ServiceSettings):
        raise TypeError(f"`settings` must be a ServiceSettings; received {type(settings).__name__}.")
    # nothing the service writes is another user's to change, whatever the umask it was started with: under umask
    # 000 a job's report.html was 0666 until its digest was recorded, and another user's script in it was served
    # (sweep 32al BL2); its workers inherit this umask
    os.umask(os.umask(0o022) | 0o022)
    settings.output.mkdir(parents=True, exist_ok=True)
    db = Database(settings.db_url)  # creates or upgrades the schema (or refuses a newer one)
    from .paths import record_missing_digests

    record_missing_digests(db, settings.output)  # runs recorded before their files' digests were: pinned now
    ctx = Context(db, settings, page_templates())

    @contextlib.asynccontextmanager
    async def lifespan(app):
        await run_in_threadpool(jobs_mod.recover, db, settings)
        ctx.explain_pool = explain_pool or ExplainPool(settings)
        if start_workers:
            ctx.explain_pool.warm()
            if settings.workers > 0:
                ctx.runner = JobRunner(db, settings).start()
        try:
            yield
        finally:
            if explain_pool is None:
                ctx.explain_pool.shutdown()
            if ctx.runner is not None:
                await run_in_threadpool(ctx.runner.stop)

    # No /docs, /redoc or /openapi.json of FastAPI's own: they would answer without a token and load their
    # JavaScript from a CDN. lbee.service.pages serves them behind a token, with assets from the package.
    app = FastAPI(
        title="lbee",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        description="Find, and describe in plain language, where a computer-vision model fails. "
        "Every endpoint but /health needs `Authorization: Bearer <token>` "
        "(`lbee serve token create NAME`).",
    )
    app.state.db, app.state.settings, app.state.ctx = db, settings, ctx
    app.add_middleware(BodyLimit, limit=settings.max_upload_bytes)

    @app.exception_handler(ValueError)
    async def _value_error(request, exc):  # bad input anywhere below is the client's: 422 with the message
        from .paths import redact_paths

        return JSONResponse({"detail": redact_paths(str(exc), settings)}, status_code=422)  # no server path

    @app.exception_handler(RequestValidationError)
    async def _validation(request, exc):  # FastAPI's own, with one readable line per problem first
        from .._validation import shown

        errors = exc.errors()
        problems = [f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in errors]
        # an input is quoted cut, as every lbee message quotes a value (sweep 25: a 100 kB sort echoed whole)
        errors = [{**e, "input": shown(e["input"])} if "input" in e else e for e in errors]
        return JSONResponse(
            {"detail": "; ".join(problems), "errors": json.loads(json.dumps(errors, default=str))},
            status_code=422,
        )

    @app.middleware("http")
    async def _headers(request, call_next):
        response = await call_next(request)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        # no Referer to another site; to this one the browser says where a form comes from (an Origin, not
        # 'null'), which the sign-in and sign-out forms check (lbee.service.pages)
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response

    add_api_routes(app, ctx)
    add_pages(app, ctx)
    add_browse_routes(app, ctx)
    return app
