"""The HTML side of ``lbee serve``: login, the run list, comparisons, and the API description behind a token.

``/docs`` is Swagger UI with its JavaScript and CSS served from the installed
``swagger-ui-py`` package (no CDN), and ``/openapi.json`` needs a read token
like the API it describes (a browser logged in at ``/login`` sends its cookie).
"""

from __future__ import annotations

from fastapi import Query, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse

from .settings import MAX_ID
from .views import METRICS, compare_runs, job_dict, own_findings, run_dict

#: Swagger UI files served under /static/swagger/ (and no others).
SWAGGER_FILES = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "favicon-32x32.png": "image/png",
}


#: The login page's one error, and the code its redirect carries.
LOGIN_ERROR, LOGIN_ERROR_CODE = "invalid or revoked token", "token"


def _swagger_dir():
    import importlib.resources

    try:
        return importlib.resources.files("swagger_ui") / "static"
    except ModuleNotFoundError:
        return None


def _same_site(request, what):
    """Refuse a form posted from another site: its Origin (else its Referer) must be this server.

    A browser sends one of them with every POST; one sent from another site, or ``Origin: null`` (a page with
    ``referrer: no-referrer``, a sandboxed frame), or neither, is refused.
    """
    from urllib.parse import urlsplit

    from fastapi import HTTPException

    origin = request.headers.get("origin") or request.headers.get("referer")
    if not origin or origin == "null" or urlsplit(origin).netloc != request.headers.get("host"):
        raise HTTPException(403, f"{what} from another site is refused; open the pages of this server.")


def add_pages(app, ctx):
    """Add /health, /login, /logout, /, /compare, /docs, /openapi.json and the Swagger UI assets to ``app``."""
    from sqlalchemy import select

    from .._version import __version__
    from .db import Job, Run

    db, settings, templates, read = ctx.db, ctx.settings, ctx.templates, ctx.read

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon():  # the pages carry no icon; a browser asks anyway (a 404 in every console otherwise)
        from fastapi import Response

        return Response(status_code=204)

    @app.get("/health", tags=["service"])
    def health():
        """Liveness: no token needed."""
        return {"status": "ok", "version": __version__}

    @app.get("/login", response_class=HTMLResponse, include_in_schema=False)
    def login_form(error: str | None = None):
        # only the server's own message: a link with ?error=... must not make the page say anything
        return templates.get_template("login.html").render(error=LOGIN_ERROR if error == LOGIN_ERROR_CODE else None)

    @app.post("/login", include_in_schema=False)
    async def login(request: Request):
        # login CSRF: another site must not sign a browser in with a token of its own
        _same_site(request, "a sign-in")
        form = await request.form(max_files=0, max_fields=4)
        token = str(form.get("token") or "").strip()
        if ctx.check_token(db, token) is None:
            return RedirectResponse(f"/login?error={LOGIN_ERROR_CODE}", status_code=303)
        resp = RedirectResponse("/", status_code=303)
        resp.set_cookie("lbee_token", token, httponly=True, samesite="strict", secure=request.url.scheme == "https")
        return resp

    @app.post("/logout", include_in_schema=False)
    def logout(request: Request):
        _same_site(request, "a sign-out")  # an <img src=/logout> on another site signed users out
        resp = RedirectResponse("/login", status_code=303)
        resp.delete_cookie("lbee_token")
        return resp

    @app.get("/logout", response_class=HTMLResponse, include_in_schema=False)
    def logout_page():
        return templates.get_template("logout.html").render()

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index(request: Request):
        who = ctx.page_token(request)
        if who is None:
            return RedirectResponse("/login", status_code=303)
        with db.session() as s:
            runs = [
                {**run_dict(r), "findings": own_findings(settings.output, r)}
                for r in s.scalars(select(Run).order_by(Run.id.desc()).limit(500))
            ]
            jobs = [job_dict(j) for j in s.scalars(select(Job).order_by(Job.created.desc()).limit(200))]
            entries = s.execute(select(Job.id, Job.entry).where(Job.id.in_({r["job"] for r in runs}))).all()
        random = random_weight_runs(runs, dict(entries))
        for r in runs:
            r["main"] = (
                [row for row in r["metrics"] if row.get("slicer") == (r["metrics"][0]["slicer"])]
                if r["metrics"]
                else []
            )
        return templates.get_template("index.html").render(
            runs=runs,
            jobs=jobs,
            who=who.name,
            metrics=METRICS,
            root=str(settings.root),
            random=random,
        )

    @app.get("/compare", response_class=HTMLResponse, include_in_schema=False)
    def compare_page(request: Request, a: int = Query(ge=1, le=MAX_ID), b: int = Query(ge=1, le=MAX_ID)):
        if ctx.page_token(request) is None:
            return RedirectResponse("/login", status_code=303)
        ra, rb = ctx.run(a), ctx.run(b)
        ctx.check_own(ra), ctx.check_own(rb)  # another run's files put in a folder: 409, never compared (32v B4)
        return templates.get_template("compare.html").render(c=compare_runs(settings.output, ra, rb))

    # ---- the API description, behind a token
    @app.get("/openapi.json", include_in_schema=False)
    def openapi(token=read):
        return app.openapi()

    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    def docs(request: Request):
        if ctx.page_token(request) is None:
            return RedirectResponse("/login", status_code=303)
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="lbee · API",
            swagger_js_url="/static/swagger/swagger-ui-bundle.js",
            swagger_css_url="/static/swagger/swagger-ui.css",
            swagger_favicon_url="/static/swagger/favicon-32x32.png",
        )

    @app.get("/static/swagger/{name}", include_in_schema=False)
    def swagger_asset(name: str, token=read):
        folder = _swagger_dir()
        if name not in SWAGGER_FILES or folder is None or not (folder / name).is_file():
            from fastapi import HTTPException

            raise HTTPException(404, f"no asset {name!r} (pip install swagger-ui-py for /docs)")
        return FileResponse(
            str(folder / name), media_type=SWAGGER_FILES[name], headers={"Cache-Control": "private, max-age=86400"}
        )


def random_weight_runs(runs, entries):
    """The banner of the run list when some runs used an encoder with random weights, else None.

    Each such run dict gets ``random_weights = True`` (its row is marked too).

    Parameters
    ----------
    runs : list of dict
        `lbee.service.views.run_dict` rows.
    entries : dict of str to str
        Job id -> the job's entry (JSON), whose ``encoder`` names the weights.
    """
    import json

    from ..encoders import RANDOM_WEIGHTS_BANNER, RANDOM_WEIGHTS_BANNER_RUNS
    from ..run.identity import is_random_spec

    specs = {}
    for r in runs:
        spec = json.loads(entries.get(r["job"]) or "{}").get("encoder")
        r["random_weights"] = isinstance(spec, str) and is_random_spec(spec)
        if r["random_weights"]:
            specs.setdefault(spec, []).append(r["id"])
    if not specs:
        return None

    def runs_of(ids):
        return f"run {ids[0]}" if len(ids) == 1 else f"runs {', '.join(map(str, ids[:-1]))} and {ids[-1]}"

    which = "; ".join(f"{runs_of(ids)}: {spec}" for spec, ids in specs.items())
    if len(specs) == 1:
        return f"{RANDOM_WEIGHTS_BANNER.format(encoder=next(iter(specs)))} ({which})"
    return f"{RANDOM_WEIGHTS_BANNER_RUNS} ({which})"  # several encoders: each named in the list
