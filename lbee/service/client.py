"""A Python client of ``lbee serve``: submit a job, poll its progress, fetch its results.

HTTP through the standard library (``urllib``), no server library: ``pip install
lbee`` is enough to talk to a server.

>>> from lbee.service.client import Client                      # doctest: +SKIP
>>> c = Client("http://127.0.0.1:8000", token="lbee_...")        # doctest: +SKIP
>>> job = c.run({"name": "demo", "spotcheck": {"seed": 0}},      # doctest: +SKIP
...             on_progress=lambda j: print(j["phase"], j["fraction"]))
>>> c.fetch(job["id"], "results/")                               # doctest: +SKIP

``lbee submit ENTRY.yaml --url URL`` does the same from the command line.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import time
import urllib.error
import urllib.request
from pathlib import Path

from .client_http import AnswerTooSlow, Redirected, open_within
from .reading import (  # noqa: F401  (named from here too)
    confirmed_statements,
    describe_progress,
    entry_from_text,
    is_entry_text,
    progress_lines,
    read_entry,
)

#: The server a client talks to when none is named (``lbee serve``'s default address).
DEFAULT_URL = "http://127.0.0.1:8000"
#: Environment variables of the server address and the API token.
URL_ENV, TOKEN_ENV = "LBEE_URL", "LBEE_TOKEN"
#: Seconds between two looks at a running job.
POLL_SECONDS = 1.0
#: Job states after which nothing changes (`lbee.service.db.FINAL_STATES`, kept here: the client needs no
#: database library).
FINAL_STATES = ("done", "failed", "cancelled")
#: What `Client.fetch` writes: file name -> the job's endpoint.
#: The files `Client.fetch` writes, each from its endpoint under ``/v1/jobs/{id}/``: the report, the explanation and
#: the per-image table (so that ``lbee export spotlight`` opens a fetched copy), and the metrics.
RESULT_FILES = {
    "report.html": "report",
    "explanation.json": "explanation",
    "images.parquet": "images",
    "metrics.json": "metrics",
}


class ServiceError(RuntimeError):
    """The server answered with an error; ``status`` is the HTTP status (0: no answer)."""

    def __init__(self, message, status=0):
        super().__init__(message)
        self.status = status


class JobFailed(ServiceError):
    """The job ended ``failed`` or ``cancelled``; ``job`` is its last state (``job['error']`` says why)."""

    def __init__(self, job):
        super().__init__(f"job {job['id']} {job['status']}: {job.get('error') or 'no reason given'}", 0)
        self.job = job


#: The largest answer the client reads (a report page is a few MB; a stream that never ends is cut here).
MAX_RESPONSE_BYTES = 512 << 20
#: The largest job state the client reads (a job's phase, progress and log): JSON becomes Python objects at up to
#: 70 times its size (a hostile server's 50 MiB answer took 3.7 GB).
MAX_JOB_BYTES = 4 << 20
#: The largest JSON answer the client parses (explanation.json, metrics): parsed, JSON takes up to 70 times its size.
MAX_JSON_BYTES = 64 << 20
#: The most of an error answer the client reads (its message is a few lines).
MAX_ERROR_BYTES = 64 << 10
#: The most images `Client.group_images` collects (about a kilobyte each in memory), and bytes of their rows.
MAX_GROUP_IMAGES, MAX_GROUP_BYTES = 1_000_000, 256 << 20
#: The largest page of a group the client reads (48 rows: some 30 kB).
MAX_PAGE_BYTES = 4 << 20


def _read_within(resp, limit, deadline, what):
    """At most ``limit`` bytes of ``resp``, by chunks, before ``deadline`` (`time.monotonic`); ServiceError past it."""
    chunks, size = [], 0
    while size < limit:
        if time.monotonic() > deadline:
            raise ServiceError(f"{what}: the answer did not arrive in time (the server sends it too slowly).")
        chunk = resp.read1(min(1 << 16, limit - size)) if hasattr(resp, "read1") else resp.read(limit - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    declared = (getattr(resp, "headers", None) or {}).get("Content-Length")
    try:  # read as http.client reads it ('+N' and '1_000' included: sweep 32c)
        length = int(declared) if declared is not None else None
    except ValueError:
        length = None
    if size < limit and length is not None and length != size:
        # a connection closed early ended a report half written, taken for whole (sweep 32)
        raise ServiceError(f"{what}: the answer ended after {size:,} of the {length:,} bytes it declared.")
    return b"".join(chunks)


def printable(text):
    r"""``text`` with its control characters shown as ``\xNN`` (escape sequences, carriage returns).

    A server's words are printed on the user's terminal, where an escape could clear the screen or hide a line.
    """
    import unicodedata

    # C0 / C1 controls, and the format characters and separators that reorder or break a line (U+202E, U+2028)
    return "".join(
        c
        if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cf", "Zl", "Zp")
        else f"\\x{ord(c):02x}"
        if ord(c) < 256
        else f"\\u{ord(c):04x}"
        for c in str(text)
    )


def _quoted(job_id):
    """A job id as a URL's path segment: a '/', a space or a line break in it never reaches the request line."""
    from urllib.parse import quote

    return quote(str(job_id), safe="")


def _job(answer, what):
    """A job's state as the server sent it, with its texts made `printable`.

    Checked for what the client reads: an id and a status, as text.
    """
    fraction = answer.get("fraction") if isinstance(answer, dict) else None
    if not (
        isinstance(answer, dict)
        and isinstance(answer.get("id"), str)
        and _is_job_id(answer["id"])  # it goes into the next URLs
        and isinstance(answer.get("status"), str)
        and (fraction is None or (isinstance(fraction, (int, float)) and not isinstance(fraction, bool)))
        and isinstance(answer.get("runs") or [], list)
        and all(isinstance(answer.get(k) or "", str) for k in ("phase", "progress", "error"))
        and isinstance(answer.get("log") or [], list)
        and all(isinstance(line, str) for line in answer.get("log") or [])
        and (answer.get("earlier") is None or _is_job_id(answer["earlier"]))  # it is shown in a URL too
    ):
        raise ServiceError(
            f"{what}: the server's answer is not a job (an object with 'id' of letters, digits, '_', '.' or '-', "
            "'status', ...)."
        )
    return _printable_all(answer)


def _is_job_id(value):
    """Letters, digits, '_', '.' or '-' (1 to 128), not only dots ('.' and '..' would name another path)."""
    return (
        isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", value) is not None and value.strip(".") != ""
    )


def _printable_all(value):
    """`printable` for every string in a JSON value."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, list):
        return [_printable_all(v) for v in value]
    if isinstance(value, dict):
        return {k: _printable_all(v) for k, v in value.items()}
    return value


class Client:
    """Talks to one ``lbee serve``.

    Parameters
    ----------
    url : str, optional
        The server, e.g. ``http://127.0.0.1:8000``; default ``$LBEE_URL``, else `DEFAULT_URL`.
    token : str, optional
        An API token (``lbee serve token create``): ``submit`` scope to submit, ``read`` to look; default
        ``$LBEE_TOKEN``.
    timeout : float, default=60
        Seconds one request may take; a result file (a report, a table: up to 512 MiB) may take ten times as long.
    """

    def __init__(self, url=None, token=None, *, timeout=60.0):
        self.url = (url or os.environ.get(URL_ENV) or DEFAULT_URL).rstrip("/")
        from urllib.parse import urlsplit

        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.netloc:  # urllib would also open file:// and ftp://
            raise ValueError(f"The service URL is {self.url!r}; expected http://HOST:PORT or https://HOST:PORT.")
        self.token = token if token is not None else os.environ.get(TOKEN_ENV)
        self.timeout = timeout

    # ---- HTTP
    def _request(self, method, path, body=None, *, raw=False, limit=MAX_RESPONSE_BYTES):
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        # `timeout` bounds each read of the socket; the deadline bounds the whole answer (one byte every 20 s
        # would otherwise never time out). A report may take longer to come than a job's state.
        deadline = time.monotonic() + self.timeout * (10 if raw else 1)
        try:
            with open_within(req, self.timeout, deadline) as resp:
                payload = _read_within(resp, limit + 1, deadline, f"{method} {path}")
            if len(payload) > limit:
                raise ServiceError(f"{method} {path}: the answer is larger than {limit >> 20} MiB.")
        except AnswerTooSlow:  # the status line, headers or body framing past the deadline (sweep 29)
            raise ServiceError(
                f"{method} {path}: the answer did not arrive in time (the server sends it too slowly)."
            ) from None
        except http.client.HTTPException as exc:  # more than 100 headers, a line too long, a bad status line
            raise ServiceError(
                f"{method} {path}: the answer is not HTTP an lbee server sends ({printable(type(exc).__name__)})."
            ) from None
        except Redirected as exc:
            raise ServiceError(
                f"{method} {path}: the server at {self.url} answered with a redirect to {exc.target!r}; lbee's API "
                "never redirects, so the token was not sent there: check the URL (http or https, host, port)."
            ) from None
        except urllib.error.HTTPError as exc:
            try:  # an error's message is a few lines: never more than MAX_ERROR_BYTES of it is read
                text = _read_within(exc, MAX_ERROR_BYTES, deadline, f"{method} {path}").decode("utf-8", "replace")
            except (ServiceError, AnswerTooSlow, http.client.HTTPException):
                text = "(its message did not arrive whole in time)"  # sweep 31: it read 'HTTP 500: ' alone
            try:
                detail = json.loads(text).get("detail", text)
            except (ValueError, AttributeError, RecursionError):
                detail = text
            if not isinstance(detail, str):
                try:
                    detail = json.dumps(detail)
                except (ValueError, RecursionError):  # nested past Python's limit
                    detail = text
            said = printable(detail.strip()[:2000])
            if exc.code == 401:  # the server's hint names the token's maker; the client's user also needs its flag
                said += f" (lbee submit / fetch: --token or ${TOKEN_ENV}; the library: Client(url, token=...))"
            raise ServiceError(f"{method} {path}: HTTP {exc.code}: {said}", exc.code) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ServiceError(f"Cannot reach the lbee server at {self.url}: {reason}") from None
        if raw:
            return payload
        try:
            answer = json.loads(payload)
        except (ValueError, RecursionError):  # not JSON, or nested past Python's limit: not an lbee server's answer
            raise ServiceError(f"{method} {path}: the server's answer is not JSON an lbee server sends.") from None
        if not isinstance(answer, (dict, list)):
            raise ServiceError(f"{method} {path}: the server's answer is not JSON an lbee server sends.")
        return answer

    # ---- jobs
    def submit(self, entry):
        """Queue a job: one dataset entry (a dict, the path of a YAML / JSON file, or its text). Returns the job (dict).

        An identical entry already queued or running is returned instead (``reused: true``).
        """
        if isinstance(entry, str) and is_entry_text(entry):  # a file's text (trial 39)
            entry = entry_from_text(entry)
        elif isinstance(entry, (str, os.PathLike)):
            entry = read_entry(entry)
        return _job(self._request("POST", "/v1/jobs", entry, limit=MAX_JOB_BYTES), "POST /v1/jobs")

    def job(self, job_id):
        """The job's state: ``status``, ``phase``, ``fraction``, ``progress``, ``log``, ``error``, ``runs``.

        Its texts are made `printable`: they reach a terminal, and a server's text could carry escape sequences.
        """
        return _job(self._request("GET", f"/v1/jobs/{_quoted(job_id)}", limit=MAX_JOB_BYTES), "GET /v1/jobs/{id}")

    def cancel(self, job_id):
        """Cancel a queued or running job; returns its state."""
        return self._request("POST", f"/v1/jobs/{_quoted(job_id)}/cancel", limit=MAX_JOB_BYTES)

    def wait(self, job_id, *, poll=POLL_SECONDS, timeout=None, on_progress=None):
        """Poll the job until it ends; returns its final state.

        Parameters
        ----------
        poll : float, default=1.0
        timeout : float, optional
            Give up (``TimeoutError``) after this many seconds; the job goes on.
        on_progress : callable, optional
            Called with the job's state each time its phase or progress changes.

        Raises
        ------
        JobFailed
            The job ended failed or cancelled.
        """
        from .reading import missed_phases

        deadline = None if timeout is None else time.monotonic() + timeout
        seen, phases = None, set()
        while True:
            job = self.job(job_id)
            now = (job["status"], job.get("phase"), job.get("fraction"), job.get("progress"))
            if on_progress is not None and now != seen:
                for phase in missed_phases(job, phases):  # a phase shorter than a poll, as `lbee submit` says it
                    on_progress({**job, "status": "running", "phase": phase, "fraction": None, "progress": ""})
                on_progress(job)
            seen = now
            if job["status"] in FINAL_STATES:
                if job["status"] != "done":
                    raise JobFailed(job)
                return job
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} is still {job['status']} after {timeout} s ({job.get('progress')})")
            time.sleep(poll)

    def run(self, entry, **wait_options):
        """`submit` then `wait`: the finished job's state."""
        return self.wait(self.submit(entry)["id"], **wait_options)

    # ---- results
    def explanation(self, job_id, model=None):
        """The job's ``explanation.json`` (a dict; ``model`` picks one of an entry with several)."""
        return self._request("GET", f"/v1/jobs/{_quoted(job_id)}/explanation{_model(model)}", limit=MAX_JSON_BYTES)

    def confirmed(self, job_id, model=None):
        """The job's confirmed statements, strongest first (`confirmed_statements`): what to act on.

        A run whose statements were not tested (too few images, confirmation off) gives [] with a warning saying why.
        """
        from ..run.confirm_text import with_images
        from ..run.untested import warn_untested

        explanation = self.explanation(job_id, model)
        listed = confirmed_statements(explanation)
        warn_untested(explanation.get("confirmation") if isinstance(explanation, dict) else None)
        return with_images(listed, explanation.get("images") or [])  # as the library's

    def group(self, job_id, group, *, page=1, sort="confidence", pair=None, model=None):
        """One page of a hard group's images of the job's run, as ``lbee serve``'s group page lists them.

        Parameters
        ----------
        job_id : str
            With ``model``, when the job ran several.
        group : int
            The hard group, as the report numbers it; -1: the run's hard images in no hypothesis.
        page : int, default=1
            As `lbee.reports.group_page.group_page` takes it, as ``sort`` and ``pair``.
        sort : str, default='confidence'
            One of `lbee.reports.browse.BROWSE_SORTS`.
        pair : str, optional
            Only the images of one ``label → prediction`` of the group.

        Returns
        -------
        dict
            The page as `lbee.reports.group_page.group_page` gives it, each row with its ``thumbnail`` link.
        """
        from urllib.parse import urlencode

        answer = self.metrics(job_id, model)
        run_id = answer.get("id") if isinstance(answer, dict) else None
        if type(run_id) is not int:
            raise ServiceError(f"the server's answer for job {job_id}'s run names no run id; expected lbee serve's")
        query = urlencode({"page": int(page), "sort": sort, **({"pair": pair} if pair else {})})
        path = f"/v1/runs/{run_id}/groups/{int(group)}/images?{query}"
        return self._request("GET", path, limit=MAX_PAGE_BYTES)  # a page of 48 rows is some 30 kB

    def group_images(self, job_id, group, *, sort="confidence", pair=None, model=None):
        """Every image of a hard group (the rows of each of its `group` pages, at most `MAX_GROUP_IMAGES`): a list.

        `ServiceError` for pages that disagree with the first (a server claiming a billion pages filled memory).
        """
        first = self.group(job_id, group, sort=sort, pair=pair, model=model)
        n, n_pages, rows = first.get("n"), first.get("n_pages"), first.get("rows")
        if not (type(n) is int and type(n_pages) is int and isinstance(rows, list)) or not rows and n:
            raise ServiceError(f"the server's page of group {group} is not one lbee serve writes")
        if n > MAX_GROUP_IMAGES:
            raise ServiceError(
                f"group {group} has {n:,} images, over the {MAX_GROUP_IMAGES:,} group_images collects; page through "
                "it with group(job_id, group, page=...)."
            )
        most = -(-n // len(rows)) if rows else 1
        if not 1 <= n_pages <= most:
            raise ServiceError(f"the server says group {group} has {n_pages:,} pages of {n:,} images; at most {most:,}")
        rows, held = list(rows), len(json.dumps(rows))
        for page in range(2, n_pages + 1):
            more = self.group(job_id, group, page=page, sort=sort, pair=pair, model=model).get("rows")
            if not isinstance(more, list) or len(rows) + len(more) > n:
                raise ServiceError(f"page {page} of group {group} holds more images than the group has ({n:,})")
            held += len(json.dumps(more))  # rows of 40 MB each filled memory (sweep 27)
            if held > MAX_GROUP_BYTES:
                raise ServiceError(f"group {group}'s rows pass {MAX_GROUP_BYTES:,} bytes; page through it with group()")
            rows += more
        return rows

    def metrics(self, job_id, model=None):
        """The job's run with its metric rows (ACR, AHR, TPR, JI per slicer and method; empty without Γ)."""
        return self._request("GET", f"/v1/jobs/{_quoted(job_id)}/metrics{_model(model)}", limit=MAX_JSON_BYTES)

    def report(self, job_id, model=None):
        """The job's HTML report (str)."""
        return self._request("GET", f"/v1/jobs/{_quoted(job_id)}/report{_model(model)}", raw=True).decode("utf-8")

    def fetch(self, job_id, out_dir, model=None, *, overwrite=False):
        """Write the job's result files (`RESULT_FILES`) into ``out_dir``.

        ``report.html``, ``explanation.json``, ``images.parquet`` and ``metrics.json`` are each written into a stage
        as it arrives (one in memory at a time: four held together took 2.7 GB from a hostile server;
        the two JSON files at most `MAX_JSON_BYTES`), and moved in together once all have come (`lbee.io.staging`):
        a failed request leaves ``out_dir`` as it was, and a kill never leaves one job's report beside another's
        explanation. An existing result file is refused unless ``overwrite`` (the folder may hold another run's).

        Returns
        -------
        list of pathlib.Path
        """
        from ..io.staging import check_no_replace, recover_leftovers, staged_entries
        from .reading import check_fetched

        out = Path(out_dir)
        how = "overwrite=True (lbee submit: --overwrite)"  # said from Python and from the CLI alike
        recover_leftovers(out)  # a killed fetch's stage is settled first, even when this one is refused
        check_no_replace([out / name for name in RESULT_FILES], overwrite=overwrite, option=None, how=how)
        with staged_entries(out, replaces=tuple(RESULT_FILES)) as stage:
            for name, endpoint in RESULT_FILES.items():
                limit = MAX_JSON_BYTES if name.endswith(".json") else MAX_RESPONSE_BYTES
                path = f"/v1/jobs/{_quoted(job_id)}/{endpoint}{_model(model)}"
                (stage / name).write_bytes(self._request("GET", path, raw=True, limit=limit))
            check_fetched(stage)  # before anything moves in: a bad answer leaves out_dir as it was
        return [out / name for name in RESULT_FILES]


def _model(model):
    from urllib.parse import quote

    return "" if model is None else f"?model={quote(str(model))}"
