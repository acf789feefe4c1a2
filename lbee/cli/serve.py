"""``lbee serve``: the error-explanation service (and ``lbee serve token create|list|revoke``)."""

from __future__ import annotations

import os

import click

from ..extras import install_command
from ._base import FloatRange, LbeeError, cli

DEFAULT_DB = "sqlite:///lbee.db"


def _require_serve():
    """The serve extra, or one line naming every module it lacks (a sixteenth user read only "uvicorn is missing")."""
    from ..extras import MissingExtraError, require_extra

    try:
        require_extra("serve", needed_for="lbee serve")
    except MissingExtraError as exc:
        raise LbeeError(str(exc)) from None


def _db(url, must_exist=False):
    _require_serve()
    try:
        from ..service.db import Database
    except ImportError as exc:
        raise LbeeError(f"lbee serve cannot import {exc.name}: {install_command('serve')}") from None
    return Database(url, must_exist=must_exist)


db_option = click.option(
    "--db",
    "db_url",
    default=None,
    metavar="URL",
    help=f"SQLAlchemy database URL (SQLite file or PostgreSQL) [default: {DEFAULT_DB}].",
)


@cli.group(invoke_without_command=True)
@click.option(
    "--root",
    type=click.Path(file_okay=False),
    default=None,
    help="Data folder: jobs may read paths inside it only (required to start the server).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Interface to listen on (put a reverse proxy in front rather than 0.0.0.0).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="Port to listen on (0: any free one).",
)
@db_option
@click.option(
    "--output",
    type=click.Path(file_okay=False),
    default="lbee_out/service",
    show_default=True,
    help="Where job outputs (reports, explanations, metrics) are written.",
)
@click.option(
    "--workers", type=click.IntRange(0, 64), default=1, show_default=True, help="Job worker processes (0: queue only)."
)
@click.option(
    "--max-upload-mb",
    type=FloatRange(0.01, 4096),
    default=64,
    show_default=True,
    help="Largest request body, in MiB (larger ones get 413).",
)
@click.option(
    "--explain-workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Processes answering POST /v1/explain (the server process never runs the analysis).",
)
@click.option(
    "--lease-seconds",
    type=FloatRange(1, 3600),
    default=30,
    show_default=True,
    help="A job's lease; a job whose worker stopped heart-beating is taken again once it expired.",
)
@click.option(
    "--allow-encoder",
    "allow_encoders",
    multiple=True,
    metavar="SPEC",
    help="An encoder spec jobs may use beyond the defaults (repeatable; e.g. an hf-hub: model you trust).",
)
@click.option(
    "--ssl-certfile",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="Serve HTTPS with this certificate (or terminate TLS in a reverse proxy).",
)
@click.option(
    "--ssl-keyfile", type=click.Path(dir_okay=False, exists=True), default=None, help="The key of --ssl-certfile."
)
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="info",
    show_default=True,
    help="How much the server logs (uvicorn's and lbee's lines).",
)
@click.option(
    "--access-log/--no-access-log",
    default=False,
    show_default=True,
    help="Log every HTTP request (uvicorn's access lines); off, the log holds the server's and the jobs' lines.",
)
@click.pass_context
def serve(
    ctx,
    root,
    host,
    port,
    db_url,
    output,
    workers,
    max_upload_mb,
    explain_workers,
    lease_seconds,
    allow_encoders,
    ssl_certfile,
    ssl_keyfile,
    log_level,
    access_log,
):
    """Start the lbee service (FastAPI under uvicorn): REST API at /v1, docs at /docs, run list at /.

    Every endpoint but /health needs a token: create one with
    `lbee serve token create NAME --scope submit`. The service page of lbee's documentation (docs/service.md in
    the source) has the limits, the job leases and the PostgreSQL set-up.
    """
    ctx.ensure_object(dict)
    ctx.obj["serve_db"] = db_url
    if ctx.invoked_subcommand is not None:
        return
    _require_serve()  # before the options: a user without the extra learns it first (a fourteenth user)
    if root is None:
        raise click.UsageError("Missing option '--root' (the data folder jobs may read).")
    try:
        import uvicorn

        from ..service import ServiceSettings, create_app
    except ImportError as exc:
        raise LbeeError(f"lbee serve cannot import {exc.name}: {install_command('serve')}") from None
    import logging

    # A server's log: timestamps, and every record once, through the root logger (the CLI's own handlers go).
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True)
    lbee_logger = logging.getLogger("lbee")
    for h in [h for h in lbee_logger.handlers if type(h).__name__ == "EchoHandler"]:
        lbee_logger.removeHandler(h)
    lbee_logger.setLevel(logging.NOTSET)  # --log-level decides for lbee too
    if bool(ssl_certfile) != bool(ssl_keyfile):
        raise click.UsageError("--ssl-certfile and --ssl-keyfile go together.")
    port = _check_port_free(host, port)  # before the database and the workers start, not after "startup complete"
    settings = ServiceSettings(
        root=root,
        output=output,
        db_url=db_url or DEFAULT_DB,
        cache_dir=ctx.obj.get("cache_dir"),
        workers=workers,
        max_upload_bytes=int(max_upload_mb * 2**20),
        device=ctx.obj.get("device"),
        explain_workers=explain_workers,
        lease_seconds=lease_seconds,
        allowed_encoders=allow_encoders,
    )
    app = create_app(settings)
    scheme = "https" if ssl_certfile else "http"
    click.echo(
        f"lbee serve: {scheme}://{host}:{port}/ (root {settings.root}, output {settings.output}, "
        f"db {_shown(settings.db_url)})",
        err=True,
    )
    from ..service.auth import list_tokens

    if not any(not r["revoked"] for r in list_tokens(_db(settings.db_url))):  # a misspelled --db: a new database
        click.echo(
            f"WARNING: the database {_shown(settings.db_url)} holds no active token, so every request will be "
            "refused (a misspelled --db starts a new, empty one). Create one with `lbee serve token create NAME "
            "--db URL`.",
            err=True,
        )
    if scheme == "http" and not _is_loopback(host):
        click.echo(
            f"WARNING: listening on {host} over plain HTTP: tokens and results cross the network in clear "
            "text. Put a TLS-terminating reverse proxy in front and bind 127.0.0.1 (docs/service.md), or "
            "pass --ssl-certfile / --ssl-keyfile.",
            err=True,
        )
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=access_log,
        proxy_headers=True,
        ssl_certfile=ssl_certfile,
        ssl_keyfile=ssl_keyfile,
    )


def _check_port_free(host, port):
    """The port to listen on (a free one for 0), or a one-line error when ``host:port`` is in use.

    uvicorn says it only after its startup lines.
    """
    import errno
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return port  # an unknown host: uvicorn's own error names it
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no conflict
        try:
            sock.bind(address)
            if port == 0:  # any free one: the start line then names the port it is
                return sock.getsockname()[1]
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise LbeeError(
                    f"--port {port}: {host}:{port} is in use (another lbee serve?); pass another --port, or --port 0 "
                    "for any free one."
                ) from None
            # anything else (an address of another machine, a privileged port) is uvicorn's to say
    return port


def _is_loopback(host):
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False


def _shown(url):
    """A database URL without its password."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url


@serve.group()
def token():
    """API tokens: create (printed once, stored hashed), list, revoke."""


def _url(ctx, db_url):
    return db_url or (ctx.find_root().obj or {}).get("serve_db") or DEFAULT_DB


@token.command("create")
@click.argument("name")
@click.option(
    "--scope",
    type=click.Choice(["read", "submit"]),
    default="read",
    show_default=True,
    help="read: GET endpoints and pages; submit: also POST /v1/explain and /v1/jobs.",
)
@db_option
@click.pass_context
def token_create(ctx, name, scope, db_url):
    """Create the token NAME and print it (once; only its hash is stored)."""
    from ..service.auth import create_token
    from ..service.db import sqlite_path

    url = _url(ctx, db_url)
    try:
        path = sqlite_path(url) if url.startswith("sqlite") else None
    except ValueError:
        path = None  # said by the database's own checks, next
    new = path not in (None, "", ":memory:") and not os.path.lexists(path)
    click.echo(create_token(_db(url), name, scope))  # stdout: the token alone, for scripts
    click.echo(f"Token {name!r} ({scope}): shown this once, only its hash is stored; keep it now.", err=True)
    if new:  # a typo'd --db made a database of its own: its server would refuse the token, unexplained
        click.echo(
            f"It is the first token of a new database, {path}: a server started with another --db does not know it.",
            err=True,
        )


@token.command("list")
@db_option
@click.pass_context
def token_list(ctx, db_url):
    """Tokens with their scope and state (never the tokens themselves)."""
    from ..service.auth import list_tokens

    rows = list_tokens(_db(_url(ctx, db_url), must_exist=True))
    if not rows:
        click.echo("no token; create one with `lbee serve token create NAME`.")
    else:
        click.echo("name\tscope\ttoken starts\tcreated\tstate")
    for r in rows:
        state = f"revoked {r['revoked']:%Y-%m-%d %H:%M}" if r["revoked"] else "active"
        click.echo(f"{r['name']}\t{r['scope']}\t{r['prefix']}…\t{r['created']:%Y-%m-%d %H:%M}\t{state}")


@token.command("revoke")
@click.argument("name")
@db_option
@click.pass_context
def token_revoke(ctx, name, db_url):
    """Revoke the token NAME (requests with it get 401 from now on)."""
    from ..service.auth import revoke_token

    revoke_token(_db(_url(ctx, db_url), must_exist=True), name)
    click.echo(f"revoked {name}")
