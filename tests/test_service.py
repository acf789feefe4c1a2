"""`lbee serve`: the API (TestClient), auth, root confinement, limits, jobs and their leases, cancel, metrics.

Tests marked with ``BACKENDS`` run on SQLite and on a real PostgreSQL server
(tests/service_backends.py); the others on SQLite. A real server:
tests/test_service_live.py and tests/test_service_crash.py.
"""

import html as html_lib
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")

from fastapi.testclient import TestClient  # noqa: E402
from service_backends import BACKENDS, backend, postgres  # noqa: E402,F401

import lbee  # noqa: E402
from lbee.service import ServiceSettings, create_app  # noqa: E402
from lbee.service.auth import create_token, revoke_token  # noqa: E402
from lbee.service.jobs import new_owner, run_next_job  # noqa: E402
from lbee.service.workers import ExplainPool, JobRunner  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    """A data root with a precomputed dataset (24 images, 6 sentences, Γ) and two models' predictions."""
    root = tmp_path_factory.mktemp("root")
    rng = np.random.default_rng(0)
    dark = np.zeros(24, bool)
    dark[rng.permutation(24)[:8]] = True
    names = [f"img_{i:02d}.png" for i in range(24)]
    (root / "ds").mkdir()
    (root / "ds" / "sents.txt").write_text("at night\nbright\neverything\nnoise a\nnoise b\nnoise c\n")
    X = np.where(dark[:, None], np.eye(6)[0], np.eye(6)[1]) + 0.05 * rng.normal(size=(24, 6))
    np.save(root / "ds" / "img.npy", X)
    np.save(root / "ds" / "sen.npy", np.eye(6))
    np.save(root / "ds" / "bad.npy", np.zeros((3, 6)))
    probs = np.where(dark, 0.3, 0.95)
    labels = np.zeros(24, int)
    pd.DataFrame({"path": names, "label": labels, "prob_cat": probs, "prob_dog": 1 - probs}).to_csv(
        root / "ds" / "good.csv", index=False
    )
    # A second checkpoint that also fails on a third of the bright images.
    worse = probs.copy()
    worse[np.flatnonzero(~dark)[:5]] = 0.3
    pd.DataFrame({"path": names, "label": labels, "prob_cat": worse, "prob_dog": 1 - worse}).to_csv(
        root / "ds" / "worse.csv", index=False
    )
    rel = np.zeros((24, 6), bool)
    rel[dark, 0] = True
    rel[~dark, 1] = True
    rel[:, 2] = True
    np.save(root / "ds" / "rel.npy", rel)
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.csv").write_text("path,confidence\na,1\n")
    (root / "ds" / "link.csv").symlink_to(outside / "secret.csv")
    (root / "ds" / "linkdir").symlink_to(outside, target_is_directory=True)
    return root, outside


def entry(name="street", predictions="ds/good.csv", **extra):
    return {
        "name": name,
        "image_embeddings": "ds/img.npy",
        "sentence_embeddings": "ds/sen.npy",
        "sentences": "ds/sents.txt",
        "relevance": {"ground_truth": "ds/rel.npy"},
        "predictions": predictions,
        "methods": ["tops", "pdiff"],
        "clusters": 2,
        "k": 1,
        **extra,
    }


@pytest.fixture(scope="module")
def explain_pool(data_root):
    """One explain process for the module's apps (spawning one per test would cost seconds each)."""
    pool = ExplainPool(ServiceSettings(root=data_root[0], explain_limits={"images": 200, "exact_ward": 20}))
    yield pool
    pool.shutdown()


@pytest.fixture
def service(data_root, tmp_path, backend, explain_pool):
    root, _ = data_root
    settings = ServiceSettings(
        root=root,
        output=tmp_path / "out",
        workers=0,
        max_upload_bytes=2**20,
        db_url=backend,
        explain_limits={"images": 200, "exact_ward": 20},
    )
    app = create_app(settings, start_workers=False, explain_pool=explain_pool)
    db = app.state.db
    tokens = {"read": create_token(db, "reader", "read"), "submit": create_token(db, "ci", "submit")}
    with TestClient(app) as client:
        client.auth_headers = {k: {"Authorization": f"Bearer {v}"} for k, v in tokens.items()}
        client.tokens = tokens
        yield client, app, settings


def test_every_endpoint_but_health_needs_a_token_with_the_right_scope(service):
    client, app, _ = service
    read = client.auth_headers["read"]
    assert client.get("/health").json()["status"] == "ok"
    for path in ("/v1/runs", "/v1/jobs", "/v1/jobs/x", "/v1/compare?a=1&b=2", "/v1/runs/1/report"):
        r = client.get(path)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", path
    assert client.post("/v1/jobs", json=entry()).status_code == 401
    assert client.get("/v1/runs", headers={"Authorization": "Bearer lbee_wrong"}).status_code == 401
    assert client.get("/v1/runs", headers={"Authorization": f"Basic {client.tokens['read']}"}).status_code == 401
    assert client.get("/v1/runs", headers=read).json() == []
    r = client.post("/v1/jobs", json=entry(), headers=read)
    assert r.status_code == 403 and "read-only" in r.json()["detail"]
    assert client.post("/v1/explain", json={}, headers=read).status_code == 403
    # the page redirects to the login form; the form sets a cookie that is good for GET only
    assert client.get("/", follow_redirects=False).headers["location"] == "/login"
    same = {"Origin": "http://testserver"}  # what a browser sends with a form of this server
    r = client.post("/login", data={"token": client.tokens["submit"]}, headers=same, follow_redirects=False)
    assert r.status_code == 303 and "httponly" in r.headers["set-cookie"].lower()
    assert "samesite=strict" in r.headers["set-cookie"].lower()
    assert client.get("/v1/runs").status_code == 200 and "Runs" in client.get("/").text
    assert client.post("/v1/jobs", json=entry()).status_code == 401  # no cookie auth for what changes state
    client.cookies.clear()
    revoke_token(app.state.db, "reader")
    assert client.get("/v1/runs", headers=read).status_code == 401
    page = client.post("/login", data={"token": "lbee_nope"}, headers=same)
    assert page.url.path == "/login" and "invalid or revoked token" in page.text
    from lbee._version import __version__

    assert f"lbee {__version__}" in page.text  # the login page's header had an empty version
    # eighth sweep: any ?error= text was shown (escaped): a link could make the login page say anything
    # tenth sweep: a sign-in posted from another site set the cookie (login CSRF)
    evil = client.post("/login", data={"token": client.tokens["read"]}, headers={"Origin": "http://evil.example"})
    assert (
        evil.status_code == 403
        and "another site" in evil.text
        and "lbee_token" not in evil.headers.get("set-cookie", "")
    )
    # twelfth sweep: `Origin: null` (a page with referrer no-referrer) or no Origin / Referer at all got through,
    # and a GET of /logout (an <img> on another site) signed users out
    for headers in ({"Origin": "null"}, {}, {"Referer": "http://evil.example/page"}):
        r = client.post("/login", data={"token": client.tokens["read"]}, headers=headers, follow_redirects=False)
        assert r.status_code == 403 and "lbee_token" not in r.headers.get("set-cookie", ""), headers
    assert (
        client.post(
            "/login",
            data={"token": client.tokens["submit"]},  # the read token was revoked above
            headers={"Referer": "http://testserver/login"},
            follow_redirects=False,
        ).status_code
        == 303
    )
    assert client.get("/v1/runs").status_code == 200  # signed in (the cookie)
    assert client.get("/logout").status_code == 200 and client.get("/v1/runs").status_code == 200  # a form only
    assert client.post("/logout", headers={"Origin": "null"}).status_code == 403
    assert client.post("/logout", headers=same, follow_redirects=False).status_code == 303
    client.cookies.clear()
    forged = client.get("/login", params={"error": "Your session expired: sign in at evil.example"}).text
    assert "evil.example" not in forged and "invalid or revoked token" not in forged


def test_explain_json_and_npy_match_the_library(service, planted):
    client, _, _ = service
    X, S, phi, sentences = planted
    body = {
        "image_embeddings": X.tolist(),
        "sentence_embeddings": S.tolist(),
        "confidence": phi.tolist(),
        "sentences": sentences,
        "settings": {"methods": ["fpdiff", "tops"], "clusters": 2, "k": 1},
    }
    compose = {**body, "settings": {**body["settings"], "methods": ["compose"]}}  # sweep 32ak N4: library advice
    r = client.post("/v1/explain", json=compose, headers=client.auth_headers["submit"])
    assert r.status_code == 422 and "submit a job (POST /v1/jobs)" in r.text and "grammar=" not in r.text, r.text
    r = client.post("/v1/explain", json=body, headers=client.auth_headers["submit"])
    assert r.status_code == 200, r.text
    out = r.json()
    want = lbee.explain_methods(
        X, S, confidence=phi, methods=["fpdiff", "tops"], n_clusters=2, k=1, sentences=sentences
    )
    assert set(out["explanations"]) == {"fpdiff", "tops"} and out["settings"]["tau"] == 0.25
    for m, exp in want.items():
        got = lbee.Explanation.from_dict(out["explanations"][m])
        assert got.selected == exp.selected
        assert [sorted(c.indices.tolist()) for c in got.hard_clusters] == [
            sorted(c.indices.tolist()) for c in exp.hard_clusters
        ]
    # the planted causes are found: "at night" and "in fog"
    assert {sentences[i] for i in out["explanations"]["fpdiff"]["selected"]} == {"at night", "in fog"}
    # tenth sweep: finite values past float32 (x1e38) were cast to inf first and refused as "NaN or inf"
    big = client.post(
        "/v1/explain", json={**body, "image_embeddings": (X * 1e38).tolist()}, headers=client.auth_headers["submit"]
    )
    assert (
        big.status_code == 200
        and big.json()["explanations"]["fpdiff"]["selected"] == out["explanations"]["fpdiff"]["selected"]
    )

    def npy(a):
        buf = io.BytesIO()
        np.save(buf, np.asarray(a))
        return buf.getvalue()

    files = {
        "image_embeddings": ("x.npy", npy(X.astype(np.float32))),
        "sentence_embeddings": ("s.npy", npy(S)),
        "confidence": ("c.npy", npy(phi)),
    }
    r = client.post(
        "/v1/explain",
        files=files,
        data={"settings": json.dumps(body["settings"]), "sentences": "\n".join(sentences)},
        headers=client.auth_headers["submit"],
    )
    assert r.status_code == 200, r.text
    assert r.json()["explanations"]["fpdiff"]["selected"] == out["explanations"]["fpdiff"]["selected"]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"sentence_embeddings": [[1.0, 0.0]]}, "d"),
        ({"settings": {"k": 0}}, "`k`"),
        ({"settings": {"methds": ["tops"]}}, "did you mean 'methods'"),
        ({"settings": {"o": 0.5}}, "need a dataset and a model"),
        ({"confidence": [1.0, float("nan")]}, "confidence"),
        ({"image_embeddings": [[1, 2], [3]]}, "image_embeddings"),
        ({"extra": 1}, "unknown field"),
    ],
)
def test_explain_bad_input_is_a_422_with_the_message(service, planted, change, message):
    client, _, _ = service
    X, S, phi, _ = planted
    body = {"image_embeddings": X.tolist(), "sentence_embeddings": S.tolist(), "confidence": phi.tolist(), **change}
    r = client.post(
        "/v1/explain",
        content=json.dumps(body),
        headers={**client.auth_headers["submit"], "content-type": "application/json"},
    )
    assert r.status_code == 422 and message in r.json()["detail"], r.text


def test_oversize_uploads_are_refused(service):
    client, _, settings = service
    big = b"[" + b"0.0," * (settings.max_upload_bytes // 4) + b"0.0]"
    h = {**client.auth_headers["submit"], "content-type": "application/json"}
    r = client.post("/v1/explain", content=big, headers=h)
    assert r.status_code == 413 and "limit" in r.json()["detail"]

    def chunks():  # no Content-Length: counted as it streams
        for _ in range(40):
            yield b" " * 65536

    assert client.post("/v1/explain", content=chunks(), headers=h).status_code == 413
    files = {"image_embeddings": ("x.npy", b"\0" * (settings.max_upload_bytes + 10))}
    assert client.post("/v1/explain", files=files, headers=client.auth_headers["submit"]).status_code == 413
    r = client.post("/v1/jobs", content=b"{" + b" " * (2**20 + 10) + b"}", headers=h)
    assert r.status_code == 413
    assert client.get("/health").status_code == 200  # and the server goes on


@pytest.mark.parametrize(
    "change, message",
    [
        ({"predictions": "../ds/good.csv"}, "'..'"),
        ({"predictions": "/etc/passwd"}, "outside the data root"),
        ({"predictions": "ds/link.csv"}, "outside the data root"),
        ({"images": "ds/linkdir"}, "outside the data root"),
        ({"sentences": "~/sents.txt"}, "'~'"),
        ({"relevance": {"vqa": "/etc/hosts"}}, "outside the data root"),
        ({"predictions": None, "model": "os:system"}, "does not import model factories"),
        ({"predictions": None, "model": "timm:local-dir:/etc"}, "an architecture is a name of letters"),  # sweep 22
        ({"encoder": "open_clip:ViT-B-32@/etc/clip.bin", "image_embeddings": None}, "outside the data root"),
        ({"predictions": "ds/missing.csv"}, "does not exist"),
        ({"methds": ["tops"]}, "did you mean 'methods'"),
        ({"k": 0}, "key 'k' is 0"),
        ({"sweep": True, "relevance": "none"}, "needs 'relevance'"),
    ],
)
def test_bad_entries_and_path_escapes_are_a_422_naming_the_problem(service, change, message):
    client, _, _ = service
    e = {k: v for k, v in {**entry(), **change}.items() if v is not None}
    r = client.post("/v1/jobs", json=e, headers=client.auth_headers["submit"])
    assert r.status_code == 422 and message in r.json()["detail"], r.text
    assert "outside" not in message or "does not exist" not in r.json()["detail"]  # no probing outside the root
    assert client.get("/v1/jobs", headers=client.auth_headers["read"]).json() == []


def test_entries_as_yaml_and_absolute_paths_inside_the_root(service, data_root):
    client, _, _ = service
    root, _ = data_root
    text = (
        "name: yaml entry\nimage_embeddings: ds/img.npy\nsentence_embeddings: ds/sen.npy\n"
        f"sentences: {root}/ds/sents.txt\npredictions: ds/good.csv\nmethds: [tops]\n"
    )
    h = {**client.auth_headers["submit"], "content-type": "application/yaml"}
    r = client.post("/v1/jobs", content=text, headers=h)
    assert r.status_code == 422 and "line 6" in r.json()["detail"]
    r = client.post("/v1/jobs", content=text.replace("methds", "methods"), headers=h)
    assert r.status_code == 202 and r.json()["status"] == "queued"
    assert client.post("/v1/jobs", content=b"[1, 2", headers=client.auth_headers["submit"]).status_code == 422


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_jobs_run_through_the_run_layer_and_runs_compare(service, data_root):
    client, app, settings = service
    read, submit = client.auth_headers["read"], client.auth_headers["submit"]
    r = client.post("/v1/jobs", json=entry(), headers=submit)
    assert r.status_code == 202 and r.json()["reused"] is False and r.json()["earlier"] is None
    job_a = r.json()["id"]
    again = client.post("/v1/jobs", json=entry(), headers=submit).json()
    assert again["id"] == job_a and again["reused"] is True  # identical and still queued: the same job
    job_b = client.post("/v1/jobs", json=entry(predictions="ds/worse.csv"), headers=submit).json()["id"]
    bad = client.post("/v1/jobs", json=entry(name="broken", image_embeddings="ds/bad.npy"), headers=submit).json()
    assert client.get(f"/v1/jobs/{job_a}/report", headers=read).status_code == 409
    db = app.state.db
    while run_next_job(db, settings) is not None:
        pass
    ja = client.get(f"/v1/jobs/{job_a}", headers=read).json()
    assert ja["status"] == "done" and ja["attempts"] == 1 and ja["runs"][0]["n_images"] == 24, ja
    assert any("wrote" in line for line in ja["log"]) and ja["progress"].startswith("done in")
    assert not any("attempt 2" in line or "reusing" in line for line in ja["log"])  # only what happened
    jb = client.get(f"/v1/jobs/{bad['id']}", headers=read).json()
    assert jb["status"] == "failed" and "image_embeddings" in jb["error"] and "(24, d)" in jb["error"]
    assert client.get(f"/v1/jobs/{bad['id']}/report", headers=read).status_code == 409
    # results: explanation (validated), metrics, report page
    exp = client.get(f"/v1/jobs/{job_a}/explanation", headers=read).json()
    from lbee.core.explanation import validate_explanation_payload

    assert validate_explanation_payload(exp, source="job")["tops"].hard_clusters  # a valid explanation.json
    metrics = client.get(f"/v1/jobs/{job_a}/metrics", headers=read).json()
    assert {r["method"] for r in metrics["metrics"]} == {"tops", "pdiff"}
    report = client.get(f"/v1/jobs/{job_a}/report", headers=read)
    assert report.status_code == 200 and report.headers["content-type"].startswith("text/html")
    assert "street" in report.text
    assert client.get(f"/v1/jobs/{job_a}/report?model=nope", headers=read).status_code == 404
    assert client.get("/v1/jobs/nope", headers=read).status_code == 404
    # stored runs, filtered, and compared
    runs = client.get("/v1/runs?dataset=street", headers=read).json()
    assert len(runs) == 2 and {r["model"] for r in runs} == {"good", "worse"}
    assert client.get("/v1/runs?dataset=street&model=worse", headers=read).json()[0]["job"] == job_b
    ra = next(r for r in runs if r["model"] == "good")["id"]
    rb = next(r for r in runs if r["model"] == "worse")["id"]
    cmp = client.get(f"/v1/compare?a={ra}&b={rb}", headers=read).json()
    assert {m["metric"] for m in cmp["metrics"]} == {"ACR", "AHR", "TPR", "JI"}
    for m in cmp["metrics"]:
        if m["a"] is not None and m["b"] is not None:
            assert m["delta"] == pytest.approx(m["b"] - m["a"])
    for s in cmp["sentences"].values():
        assert set(s) == {"gained", "lost", "kept"}
        assert not set(s["gained"]) & set(s["lost"])
    assert client.get(f"/v1/compare?a={ra}&b=999", headers=read).status_code == 404
    # sweep 26 S-1: compare read a run's explanation.json linked out of its folder, and served its sentences
    _, _, settings = service
    expl = next(p for p in (settings.output / "jobs").rglob("explanation.json") if job_b in str(p))
    kept = expl.read_bytes()
    outside = data_root[0].parent / "outside_explanation.json"
    outside.write_bytes(kept.replace(b'"sentences":[', b'"sentences":["TOPSECRET",'))
    expl.unlink()
    expl.symlink_to(outside)
    linked = client.get(f"/v1/compare?a={ra}&b={rb}", headers=read)
    # (sweep 32v: a run whose folder no longer holds the explanation recorded with it is refused, not compared)
    assert linked.status_code == 409 and "TOPSECRET" not in linked.text and "line 1" not in linked.text
    assert client.get(f"/v1/jobs/{job_b}/explanation", headers=read).status_code == 404
    expl.unlink()
    expl.write_bytes(kept)
    page = client.get(f"/compare?a={ra}&b={rb}", headers=read)
    assert page.status_code == 200 and "Δ" in page.text
    index = client.get("/", headers=read).text
    assert index.count('class="report-link"') == 2 and "broken" in index and "failed" in index


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_a_resubmission_leaves_the_older_run_intact_and_compare_shows_the_change(service, data_root):
    """The review's case: the same entry resubmitted after its data changed gets its own folder; run A's files
    and numbers stay, and /v1/compare shows what changed."""
    import hashlib

    client, app, settings = service
    root, _ = data_root
    read, submit = client.auth_headers["read"], client.auth_headers["submit"]
    moving = root / "ds" / f"moving-{settings.output.parent.name}.csv"
    shutil.copy(root / "ds" / "good.csv", moving)  # version 1: the model fails at night
    e = entry(name="moving", predictions=str(moving.relative_to(root)), methods=["tops"])
    job_1 = client.post("/v1/jobs", json=e, headers=submit).json()["id"]
    assert run_next_job(app.state.db, settings) == job_1
    run_1 = client.get(f"/v1/jobs/{job_1}", headers=read).json()["runs"][0]
    folder_1 = (
        settings.output
        / app.state.db.session().get(__import__("lbee.service.db", fromlist=["Run"]).Run, run_1["id"]).folder
    )
    digest = {f: hashlib.sha256((folder_1 / f).read_bytes()).hexdigest() for f in ("report.html", "explanation.json")}
    table = pd.read_csv(moving)
    table["prob_cat"] = np.where(table["prob_cat"] < 0.5, 0.95, 0.55)  # version 2: unsure by day, sure at night
    table["prob_dog"] = 1 - table["prob_cat"]
    table.to_csv(moving, index=False)
    again = client.post("/v1/jobs", json=e, headers=submit).json()
    assert again["reused"] is False and again["id"] != job_1
    assert again["earlier"] == job_1  # the same entry ran before: said, with the job it repeats (trial 29)
    assert run_next_job(app.state.db, settings) == again["id"]
    run_2 = client.get(f"/v1/jobs/{again['id']}", headers=read).json()["runs"][0]
    assert run_2["id"] != run_1["id"]
    assert {f: hashlib.sha256((folder_1 / f).read_bytes()).hexdigest() for f in digest} == digest  # untouched
    assert client.get(f"/v1/runs/{run_1['id']}", headers=read).json()["metrics"] == run_1["metrics"]
    cmp = client.get(f"/v1/compare?a={run_1['id']}&b={run_2['id']}", headers=read).json()
    assert cmp["sentences"]["tops"]["lost"] == ["at night"] and cmp["sentences"]["tops"]["gained"] == ["bright"]
    assert any(m["delta"] for m in cmp["metrics"] if m["delta"] is not None)
    r1 = client.get(f"/v1/runs/{run_1['id']}/report", headers=read)
    r2 = client.get(f"/v1/runs/{run_2['id']}/report", headers=read)
    assert r1.status_code == r2.status_code == 200 and r1.text != r2.text


def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_a_restart_takes_over_the_jobs_of_dead_workers_and_counts_attempts(service, data_root, tmp_path):
    client, app, settings = service
    db = app.state.db
    submit = client.auth_headers["submit"]
    j1 = client.post("/v1/jobs", json=entry(name="one"), headers=submit).json()["id"]
    j2 = client.post("/v1/jobs", json=entry(name="two"), headers=submit).json()["id"]
    j3 = client.post("/v1/jobs", json=entry(name="three"), headers=submit).json()["id"]
    j4 = client.post("/v1/jobs", json=entry(name="four"), headers=submit).json()["id"]
    host = socket.gethostname()
    dead = f"{host}:{_dead_pid()}:x"  # a worker of this host whose process is gone (killed with its server)
    kw = {"lease_seconds": 3600, "max_attempts": settings.max_attempts}
    assert db.claim(dead, "w1", **kw) == (j1, 1) and db.claim(dead + "y", "w2", **kw) == (j2, 1)
    assert db.claim("elsewhere:1:z", "w3", **kw) == (j3, 1)  # another host's worker: its lease must expire first
    db.update_job(j2, attempts=settings.max_attempts)
    # a restarted server: same database, same root
    app2 = create_app(settings, start_workers=False, explain_pool=app.state.ctx.explain_pool)
    with TestClient(app2) as client2:
        read = {"Authorization": f"Bearer {client.tokens['read']}"}
        assert run_next_job(app2.state.db, settings) == j1  # taken over at once, oldest first
        s1 = client2.get(f"/v1/jobs/{j1}", headers=read).json()
        assert s1["status"] == "done" and s1["attempts"] == 2 and len(s1["runs"]) == 1
        assert any("attempt 2: attempt 1 stopped without finishing" in ln for ln in s1["log"])
        assert run_next_job(app2.state.db, settings) == j4  # j2 failed (too many attempts), j3 is leased
        s2 = client2.get(f"/v1/jobs/{j2}", headers=read).json()
        assert s2["status"] == "failed" and "interrupted 3 times" in s2["error"]
        assert client2.get(f"/v1/jobs/{j3}", headers=read).json()["status"] == "running"
    # a server on another root leaves the queued job of this one for this one (sweep 32au N7: it failed it)
    j5 = client.post("/v1/jobs", json=entry(name="five"), headers=submit).json()["id"]
    other = ServiceSettings(root=tmp_path, output=settings.output, db_url=settings.db_url, workers=0)
    assert run_next_job(db, other) is None
    read = client.auth_headers["read"]
    assert client.get(f"/v1/jobs/{j5}", headers=read).json()["status"] == "queued"
    assert run_next_job(db, settings) == j5
    assert client.get(f"/v1/jobs/{j5}", headers=read).json()["status"] == "done"


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_only_the_lease_owner_records_runs_or_finishes_a_job(service):
    from lbee.service.db import LeaseLost, Run

    client, app, settings = service
    db = app.state.db
    job = client.post("/v1/jobs", json=entry(name="lease"), headers=client.auth_headers["submit"]).json()["id"]
    kw = {"max_attempts": 3}
    assert db.claim("h:1:a", "w", lease_seconds=3600, **kw) == (job, 1)
    assert db.claim("h:2:b", "w", lease_seconds=3600, **kw) is None  # held
    with pytest.raises(LeaseLost):
        db.renew(job, "h:2:b", lease_seconds=60)
    assert db.finish(job, "h:2:b", "done", runs=[{"dataset": "x", "model": "m", "folder": "f"}]) is False
    db.expire_leases({"h:1:a"})  # the owner is known dead
    assert db.claim("h:2:b", "w", lease_seconds=3600, **kw) == (job, 2)
    with pytest.raises(LeaseLost):  # the first owner came back: it may neither renew nor finish
        db.renew(job, "h:1:a", lease_seconds=60)
    assert db.finish(job, "h:1:a", "done", runs=[{"dataset": "x", "model": "m", "folder": "f"}]) is False
    assert db.finish(job, "h:2:b", "done", runs=[{"dataset": "x", "model": "m", "folder": "f"}]) is True
    with db.session() as s:
        assert s.query(Run).filter(Run.job_id == job).count() == 1
    assert client.get(f"/v1/jobs/{job}", headers=client.auth_headers["read"]).json()["status"] == "done"


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_cancel_a_queued_job_at_once_and_a_running_one_at_its_next_stage(service):
    from lbee.service.jobs import run_job

    client, app, settings = service
    db = app.state.db
    read, submit = client.auth_headers["read"], client.auth_headers["submit"]
    queued = client.post("/v1/jobs", json=entry(name="q"), headers=submit).json()["id"]
    running = client.post("/v1/jobs", json=entry(name="r"), headers=submit).json()["id"]
    assert client.post(f"/v1/jobs/{queued}/cancel", headers=read).status_code == 403
    r = client.post(f"/v1/jobs/{queued}/cancel", headers=submit)
    assert r.status_code == 202 and r.json()["status"] == "cancelled"
    owner = new_owner()
    assert db.claim(owner, "w", lease_seconds=60, max_attempts=3) == (running, 1)
    r = client.post(f"/v1/jobs/{running}/cancel", headers=submit).json()
    assert r["status"] == "running" and r["cancel_requested"] and "cancel requested" in r["progress"]
    assert run_job(db, settings, running, owner=owner, attempt=1) == "cancelled"  # stopped at its first stage
    st = client.get(f"/v1/jobs/{running}", headers=read).json()
    assert st["status"] == "cancelled" and st["runs"] == [] and "cancelled at the user's request" in st["log"]
    assert not any("wrote" in ln for ln in st["log"])
    r = client.post(f"/v1/jobs/{running}/cancel", headers=submit)
    assert r.status_code == 409 and "cancelled" in r.json()["detail"]
    assert client.post("/v1/jobs/nope/cancel", headers=submit).status_code == 404
    assert run_next_job(db, settings) is None  # nothing left to run


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_metrics_in_prometheus_text_format(service):
    from prometheus_client.parser import text_string_to_metric_families

    client, app, settings = service
    submit = client.auth_headers["submit"]
    assert client.get("/metrics").status_code == 401
    for name in ("m1", "m2"):
        client.post("/v1/jobs", json=entry(name=name), headers=submit)
    run_next_job(app.state.db, settings)
    r = client.get("/metrics", headers=client.auth_headers["read"])
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(r.text)
        for s in f.samples
    }
    assert samples[("lbee_jobs", (("status", "done"),))] == 1
    assert samples[("lbee_jobs", (("status", "queued"),))] == 1 == samples[("lbee_job_queue_length", ())]
    assert samples[("lbee_job_duration_seconds_count", ())] == 1
    assert samples[("lbee_job_duration_seconds_sum", ())] > 0 and samples[("lbee_runs", ())] == 1


def test_a_worker_that_dies_fails_its_job_and_is_replaced(service):
    import multiprocessing

    client, app, settings = service
    db = app.state.db
    job = client.post("/v1/jobs", json=entry(name="crash"), headers=client.auth_headers["submit"]).json()["id"]
    runner = JobRunner(db, settings, check_every=0.1)
    ctx = multiprocessing.get_context("spawn")
    dead = ctx.Process(target=os._exit, args=(3,))
    dead.start()
    dead.join(30)
    assert db.claim(new_owner(), "w-crashed", lease_seconds=60, max_attempts=3) == (job, 1)
    runner.procs["w-crashed"] = dead
    runner.start()  # settings.workers == 0: only the watcher
    try:
        deadline = time.time() + 30
        while (
            time.time() < deadline
            and client.get(f"/v1/jobs/{job}", headers=client.auth_headers["read"]).json()["status"] == "running"
        ):
            time.sleep(0.1)
        st = client.get(f"/v1/jobs/{job}", headers=client.auth_headers["read"]).json()
        assert st["status"] == "failed" and "exit code 3" in st["error"]
        assert "w-crashed" not in runner.procs and len(runner.procs) == 1  # replaced
    finally:
        runner.stop(timeout=20)
    assert client.get("/health").status_code == 200


def test_token_commands(tmp_path):
    from click.testing import CliRunner

    from lbee.cli import cli

    url = f"sqlite:///{tmp_path / 't.db'}"
    run = CliRunner().invoke
    res = run(cli, ["serve", "token", "create", "alice", "--scope", "submit", "--db", url], obj={})
    assert res.exit_code == 0 and res.stdout.startswith("lbee_")
    # a new database is said to be one (a typo'd --db: the server of the right one would refuse the token)
    assert f"first token of a new database, {tmp_path / 't.db'}" in " ".join(res.stderr.split())
    res2 = run(cli, ["serve", "token", "create", "bob", "--db", url], obj={})
    assert res2.exit_code == 0 and "new database" not in res2.stderr
    assert run(cli, ["serve", "token", "revoke", "bob", "--db", url], obj={}).exit_code == 0
    token = res.stdout.strip()  # stdout holds the token alone (the note that it is shown once is on stderr)
    assert " " not in token and "\n" not in token
    assert token not in (tmp_path / "t.db").read_bytes().decode("latin-1")  # stored hashed only
    res = run(cli, ["serve", "--db", url, "token", "list"], obj={})
    assert "alice\tsubmit" in res.output and token not in res.output and "active" in res.output
    assert res.output.startswith("name\tscope\ttoken starts\tcreated\tstate\n")  # a fifth user saw bare rows
    res = run(cli, ["serve", "token", "create", "alice", "--db", url], obj={})
    assert res.exit_code == 1 and "exists already" in res.output and "Traceback" not in res.output
    for name, char in (("a\nb", "000A"), ("a\u2028b", "2028"), ("ali\u200bce", "200B")):  # sweep #38
        res = run(cli, ["serve", "token", "create", name, "--db", url], obj={})
        assert res.exit_code == 1 and "token name" in res.output and f"U+{char}" in res.output, res.output
    assert run(cli, ["serve", "token", "revoke", "alice", "--db", url], obj={}).exit_code == 0
    assert "revoked" in run(cli, ["serve", "token", "list", "--db", url], obj={}).output
    res = run(cli, ["serve"], obj={})
    assert res.exit_code == 2 and "--root" in res.output


def test_token_commands_refuse_a_missing_database_or_a_file_that_is_not_one(tmp_path):
    """Issue 32: `token list --db sqlite:////typo/x.db` created the folders and an empty database."""
    from click.testing import CliRunner

    from lbee.cli import cli

    run = CliRunner().invoke
    typo = tmp_path / "typo" / "x.db"
    for args in (["token", "list"], ["token", "revoke", "alice"]):
        res = run(cli, ["serve", *args, "--db", f"sqlite:///{typo}"], obj={})
        assert res.exit_code == 1 and f"database 'sqlite:///{typo}' does not exist" in res.output, res.output
        assert "Traceback" not in res.output and not typo.parent.exists()
    (tmp_path / "notes.db").write_text("not a database\n" * 100)
    for args in (["token", "list"], ["token", "create", "alice"]):
        res = run(cli, ["serve", *args, "--db", f"sqlite:///{tmp_path / 'notes.db'}"], obj={})
        assert res.exit_code == 1 and "file is not a database" in res.output and "notes.db" in res.output
        assert "Traceback" not in res.output and "sqlalchemy" not in res.output.lower()
    # a folder, or a FIFO, where the file should be: said as what it is, not as missing (sweep 32aa N4)
    (tmp_path / "adir").mkdir()
    os.mkfifo(tmp_path / "ff.db")
    for name in ("adir", "ff.db"):
        for args in (["token", "list"], ["token", "create", "alice"]):
            res = run(cli, ["serve", *args, "--db", f"sqlite:///{tmp_path / name}"], obj={})
            assert res.exit_code == 1 and "is not a database file (a folder or a special file)" in res.output


@pytest.mark.parametrize(
    "ref",
    ["/etc/passwd", "../../../../../../etc/passwd", "outside.grammar.yaml"],
)
def test_a_sidecar_cannot_make_a_job_read_outside_the_root(service, data_root, ref):
    """Issue 32's security case: a `.conditions.tsv`'s `# grammar:` line is confined like a request's paths."""
    client, app, settings = service
    root, outside = data_root
    (outside / "secret.grammar.yaml").write_text("name: secret-words-inside\nlead: An image\nsubjects: []\n")
    link = root / "ds" / "outside.grammar.yaml"
    if not link.exists():
        link.symlink_to(outside / "secret.grammar.yaml")
    (root / "ds" / "leak.txt").write_text("at night\nbright\neverything\nnoise a\nnoise b\nnoise c\n")
    sidecar = f"# grammar: {ref}\n# grammar_digest: sha256:0\nsentence\tconditions\n"
    (root / "ds" / "leak.conditions.tsv").write_text(sidecar)
    r = client.post("/v1/jobs", json=entry(name="leak", sentences="ds/leak.txt"), headers=client.auth_headers["submit"])
    if r.status_code == 202:  # refused in the worker, before the file is opened
        while run_next_job(app.state.db, settings) is not None:
            pass
        job = client.get(f"/v1/jobs/{r.json()['id']}", headers=client.auth_headers["read"]).json()
        assert job["status"] == "failed", job
        error = job["error"]
    else:
        assert r.status_code == 422, r.text
        error = r.json()["detail"]
    assert "outside the data root" in error, error
    assert "root:" not in error and "secret-words" not in error  # nothing of the file is quoted


def test_a_sidecar_may_name_any_grammar_on_the_command_line_but_not_under_a_root(tmp_path):
    from lbee.grammar import load_grammar
    from lbee.io.confinement import PathEscape, confined_to
    from lbee.io.sentences import load_sentence_set

    grammar_file = tmp_path / "g" / "photos.grammar.yaml"
    grammar_file.parent.mkdir()
    grammar_file.write_text((Path(lbee.io.sentences.builtin_dir()) / "object_photos.grammar.yaml").read_text())
    g = load_grammar(grammar_file)
    sents = tmp_path / "sets" / "s.txt"
    sents.parent.mkdir()
    from lbee.grammar import generate
    from lbee.io.grammar_sets import write_grammar_set

    sentences, conditions, _ = generate(g, max_conditions=1)
    write_grammar_set(sents, g, sentences, conditions, max_conditions=1, source_ref=str(grammar_file))
    assert load_sentence_set(sents).grammar.digest == g.digest  # a user's own file: any path
    with confined_to(tmp_path / "sets"), pytest.raises(PathEscape, match="outside the data root"):
        load_sentence_set(sents)
    with confined_to(tmp_path):
        assert load_sentence_set(sents).grammar.digest == g.digest  # inside the root: read


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_cancel_reaches_a_long_phase_that_never_logs(service, monkeypatch):
    """Issue 32: a job in one-hypothesis-per-failure for 14 minutes never saw its cancel (checked only at a log)."""
    import threading

    import lbee.reports.batch
    from lbee.service import jobs as jobs_mod

    client, app, settings = service
    db = app.state.db
    calls = []

    def long_phase(*args, **kwargs):  # a phase that computes for a minute and never calls `log`
        calls.append(1)
        end = time.monotonic() + 60
        while time.monotonic() < end:
            sum(range(1000))
        return [], []

    monkeypatch.setattr(lbee.reports.batch, "run_dataset", long_phase)
    job = client.post("/v1/jobs", json=entry(name="long"), headers=client.auth_headers["submit"]).json()["id"]
    threading.Timer(1.0, jobs_mod.cancel, (db, job)).start()
    t0 = time.monotonic()
    assert run_next_job(db, settings) == job
    assert calls and time.monotonic() - t0 < 15  # within the poll of the heartbeat, not the minute of the phase
    st = client.get(f"/v1/jobs/{job}", headers=client.auth_headers["read"]).json()
    assert st["status"] == "cancelled" and st["runs"] == [], st
    time.sleep(2 * jobs_mod.CANCEL_POLL)  # nothing is raised in this thread once the job has ended


def _job_error(client, app, settings, body):
    """The error of a job: the 422 of its submission, or the error its worker recorded."""
    r = client.post("/v1/jobs", json=body, headers=client.auth_headers["submit"])
    if r.status_code == 422:
        return "failed", r.json()["detail"]
    assert r.status_code == 202, r.text
    while run_next_job(app.state.db, settings) is not None:
        pass
    job = client.get(f"/v1/jobs/{r.json()['id']}", headers=client.auth_headers["read"]).json()
    return job["status"], job["error"]


def _case_folder(root, name):
    """A folder of the root with copies of the dataset's embeddings and sentences (sidecars are added beside)."""
    folder = root / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    for f in ("img.npy", "sents.txt"):
        shutil.copy(root / "ds" / f, folder / f)
    return folder


SIDECARS = {  # sidecar name beside the case's input -> (entry key, input, content of the outside file)
    "ids.txt": ("image_embeddings", "img.npy", "".join(f"TOPSECRET-row{i}\n" for i in range(24))),
    "img.ids.txt": ("image_embeddings", "img.npy", "".join(f"TOPSECRET-row{i}\n" for i in range(24))),
    "img.provenance.json": ("image_embeddings", "img.npy", '{"lbee_provenance": 1, "kind": "TOPSECRET-kind"}'),
    "sents.conditions.tsv": ("sentences", "sents.txt", "# grammar: TOPSECRET\n# grammar_digest: sha256:0\n"),
}


@pytest.mark.parametrize("side", sorted(SIDECARS))
def test_a_sidecar_beside_an_input_is_confined_to_the_root(service, data_root, side):
    """Sweep #1-#3: a file an input names implicitly (its ids, provenance, conditions) is not read through a link."""
    client, app, settings = service
    root, outside = data_root
    key, name, content = SIDECARS[side]
    (outside / f"leak-{side}").write_text(content)
    folder = _case_folder(root, f"side-{side.replace('.', '-')}")
    (folder / side).symlink_to(outside / f"leak-{side}")
    status, error = _job_error(client, app, settings, entry(name="side", **{key: f"{folder.name}/{name}"}))
    assert status == "failed" and "leads outside the data root" in error and repr(side) in error, error
    assert "TOPSECRET" not in error and str(outside) not in error and "leak-" not in error, error


@pytest.mark.parametrize("side", sorted(SIDECARS))
@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_sidecar_that_is_not_a_regular_file_is_an_error_naming_it(service, data_root, side, kind):
    """Sweep #20: a FIFO or a folder where a sidecar belongs was silently skipped (and a FIFO must not block)."""
    client, app, settings = service
    root, _ = data_root
    key, name, _ = SIDECARS[side]
    folder = _case_folder(root, f"odd-{kind}-{side.replace('.', '-')}")
    os.mkfifo(folder / side) if kind == "fifo" else (folder / side).mkdir()
    t0 = time.monotonic()
    status, error = _job_error(client, app, settings, entry(name="odd", **{key: f"{folder.name}/{name}"}))
    assert status == "failed" and "not a regular file" in error and side in error, error
    assert str(root) not in error and time.monotonic() - t0 < 60


@pytest.mark.parametrize(
    "change, message",
    [
        ({"image_embeddings": "ds/nonexist.npy"}, "image_embeddings path 'ds/nonexist.npy' does not exist in the data"),
        ({"predictions": "ds/missing.csv"}, "does not exist in the data root"),
        ({"predictions": "fifos/p.csv"}, "'fifos/p.csv' is a FIFO (named pipe), not a regular file"),
        ({"sentences": "fifos/s.txt"}, "sentences 'fifos/s.txt' is a FIFO (named pipe); expected a text file"),
        ({"predictions": "ds"}, "predictions 'ds' is a folder; expected a CSV/TSV/parquet file"),
        ({"sentences": "ds/nosuch.txt"}, "`sentences` path 'ds/nosuch.txt' does not exist in the data root"),
        # eighth sweep S1: a name without suffix or separator was read from the server's working folder
        ({"sentences": ".netrc"}, "`sentences` path '.netrc' does not exist in the data root"),
        # ninth sweep S1: a TorchScript model file in a job read and wrote files outside the root (torch.from_file)
        ({"predictions": None, "model": "ds/nope.pt"}, "a model file (TorchScript) or a module:factory runs its own"),
        ({"predictions": None, "model": "ds/img.npy"}, "so a job cannot name one; give a torchvision:NAME or timm:"),
        ({"image_embeddings": "ds"}, "image_embeddings 'ds' is a folder; expected an .npy file"),
    ],
)
def test_a_submission_error_names_paths_relative_to_the_root_and_what_is_wrong(service, data_root, change, message):
    """Sweep #4 (the server's root in a 422), #25-#27 (a FIFO or folder reported as missing or outside)."""
    client, _, _ = service
    root, _ = data_root
    (root / "fifos").mkdir(exist_ok=True)
    for fifo in ("p.csv", "s.txt"):
        if not (root / "fifos" / fifo).exists():
            os.mkfifo(root / "fifos" / fifo)
    body = {k: v for k, v in {**entry(), **change}.items() if v is not None}
    r = client.post("/v1/jobs", json=body, headers=client.auth_headers["submit"])
    assert r.status_code == 422 and message in r.json()["detail"], r.text
    assert str(root) not in r.text and os.path.realpath(root) not in r.text, r.text


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_control_characters_and_bad_filters_are_refused_before_the_database(service):
    """Sweep #22-#24 (HTTP 500 on PostgreSQL for a NUL), #31 (an unknown status listed nothing), #40, #42."""
    client, _, _ = service
    sub, read = client.auth_headers["submit"], client.auth_headers["read"]
    for name, says in [
        ("a\u0000b", "U+0000"),
        ("a\nb", "U+000A"),
        ("re\u200bd", "U+200B"),
        ("x" * 201, "has 201 characters; expected at most 200"),
    ]:
        r = client.post("/v1/jobs", json=entry(name=name), headers=sub)
        assert r.status_code == 422 and "name" in r.json()["detail"] and says in r.json()["detail"], r.text
    assert client.post("/v1/jobs", json=entry(name="x" * 200), headers=sub).status_code == 202
    r = client.get("/v1/runs", params={"dataset": "a\u0000b"}, headers=read)
    assert r.status_code == 422 and "query dataset" in r.json()["detail"] and "U+0000" in r.json()["detail"], r.text
    r = client.get("/v1/runs", params={"model": "m\u0000"}, headers=read)
    assert r.status_code == 422 and "query model" in r.json()["detail"], r.text
    for status in ("a\u0000", "bogus"):
        r = client.get("/v1/jobs", params={"status": status}, headers=read)
        assert r.status_code == 422 and "queued, running, done, failed, cancelled" in r.json()["detail"], r.text
    assert client.get("/v1/jobs", params={"status": "queued"}, headers=read).status_code == 200
    assert client.get("/v1/jobs/a%00b", headers=read).status_code == 404
    assert client.post("/v1/jobs/a%00b/cancel", headers=sub).status_code == 404


def _npy(a):
    buf = io.BytesIO()
    np.save(buf, np.asarray(a))
    return buf.getvalue()


def test_explain_refuses_what_it_would_read_as_something_else(service, planted):
    """Sweep #13 (strings and booleans read as numbers), #37 (blank / repeated sentences), #41 (a line break)."""
    client, _, _ = service
    X, S, phi, sentences = planted
    base = {"image_embeddings": X.tolist(), "sentence_embeddings": S.tolist(), "confidence": phi.tolist()}
    twice = [sentences[0]] + sentences[:-1]
    for change, message in [
        ({"confidence": ["1_0"] + phi.tolist()[1:]}, '`confidence` holds "1_0" (str, row 0); expected JSON numbers'),
        ({"confidence": phi.tolist()[:-1] + ["\u0661"]}, "`confidence` holds"),
        ({"confidence": [True] + phi.tolist()[1:]}, "`confidence` holds true (bool"),
        ({"image_embeddings": [[" 1 "] + X.tolist()[0][1:]] + X.tolist()[1:]}, "`image_embeddings` holds"),
        ({"sentence_embeddings": S.tolist()[:-1] + [[None] * S.shape[1]]}, "`sentence_embeddings` holds null"),
        ({"sentences": twice}, f"`sentences[1]` repeats sentences[0] {sentences[0]!r}"),
        ({"sentences": [" "] + sentences[1:]}, "`sentences[0]` is blank"),
        ({"sentences": ["a\nb"] + sentences[1:]}, "`sentences[0]` holds the character U+000A"),
    ]:
        r = client.post("/v1/explain", json={**base, **change}, headers=client.auth_headers["submit"])
        assert r.status_code == 422 and message in r.json()["detail"], (change.keys(), r.text)
    masks = {"hard": (phi < 0.3).tolist(), "easy": (phi > 0.7).tolist()}
    r = client.post("/v1/explain", json={**base, "confidence": None, **masks}, headers=client.auth_headers["submit"])
    assert r.status_code == 200, r.text  # booleans are what a mask holds


def test_explain_uploads_are_refused_when_ambiguous_or_not_real_numbers(service, planted):
    """Sweep #14 (a field given twice), #15 (bytes after the data), #16 (datetime and other non-real dtypes)."""
    client, _, _ = service
    X, S, phi, _ = planted
    files = {"image_embeddings": ("x.npy", _npy(X)), "sentence_embeddings": ("s.npy", _npy(S))}

    def post(extra):
        parts = [(k, v) for k, v in files.items() if k not in dict(extra)] + list(extra)
        return client.post("/v1/explain", files=parts, headers=client.auth_headers["submit"])

    r = post([("confidence", ("c.npy", _npy(phi))), ("confidence", ("r.npy", _npy(phi[::-1])))])
    assert r.status_code == 422 and "field 'confidence' is given twice" in r.json()["detail"], r.text
    r = post([("confidence", ("c.npy", _npy(phi) + b"\0" * 1000))])
    assert r.status_code == 422 and "nothing after it" in r.json()["detail"], r.text
    for name, array, says in [
        ("image_embeddings", X.astype("datetime64[s]"), "dtype datetime64[s]; expected real numbers"),
        ("image_embeddings", X.astype(bool), "dtype bool; expected real numbers"),
        ("sentence_embeddings", S.astype(np.complex64), "dtype complex64"),
        ("confidence", phi.astype("timedelta64[s]"), "dtype timedelta64[s]"),
        ("hard", (phi < 0.5).astype(np.float32), "dtype float32; expected booleans or integers"),
    ]:
        r = post(
            [(name, ("a.npy", _npy(array)))] + ([] if name == "confidence" else [("confidence", ("c.npy", _npy(phi)))])
        )
        assert r.status_code == 422 and f"`{name}` has {says}" in r.json()["detail"], (name, r.text)
    assert post([("confidence", ("c.npy", _npy(phi)))]).status_code == 200


def test_a_jobs_warnings_reach_its_log(service, data_root):
    """Second sweep N3: a Γ row that matches no sentence was ignored with a warning on the server's stderr only."""
    client, app, settings = service
    root, _ = data_root
    rel = np.load(root / "ds" / "rel.npy")
    sentences = (root / "ds" / "sents.txt").read_text().split("\n")[:6]
    names = [f"img_{i:02d}.png" for i in range(24)]
    rows = [
        {"image": names[i], "sentence": sentences[j], "relevant": int(rel[i, j])} for i in range(24) for j in range(6)
    ]
    rows[0]["sentence"] = "at  night"  # two spaces: matches no sentence
    pd.DataFrame(rows).to_csv(root / "ds" / "long_ws.csv", index=False)
    e = entry(name="warned", relevance={"ground_truth": "ds/long_ws.csv"})
    job = client.post("/v1/jobs", json=e, headers=client.auth_headers["submit"]).json()["id"]
    while run_next_job(app.state.db, settings) is not None:
        pass
    st = client.get(f"/v1/jobs/{job}", headers=client.auth_headers["read"]).json()
    assert st["status"] == "done", st
    warned = [line for line in st["log"] if line.startswith("warning:")]
    assert any("match no" in line for line in warned), st["log"]
    assert not any(str(root) in line for line in warned)  # paths as job errors show them


def test_a_job_shows_its_phase_while_it_runs(service, monkeypatch):
    """The job's row says which step it is in (lbee.progress.PHASES) as it runs, then its final status."""
    from lbee.progress import PHASES

    client, app, settings = service
    db, phases = app.state.db, []
    renew = db.renew

    def spy(job_id, owner, **values):
        if "phase" in values:
            phases.append(values["phase"])
            assert values["progress"].startswith(values["phase"])
        return renew(job_id, owner, **values)

    monkeypatch.setattr(db, "renew", spy)
    job = client.post("/v1/jobs", json=entry(name="phased"), headers=client.auth_headers["submit"]).json()
    assert job["phase"] == "queued" and job["fraction"] is None
    while run_next_job(db, settings) is not None:
        pass
    st = client.get(f"/v1/jobs/{job['id']}", headers=client.auth_headers["read"]).json()
    assert st["status"] == st["phase"] == "done", st
    assert phases[0] == "preparing" and {"describing", "writing the report"} <= set(phases) <= set(PHASES)
    assert phases.index("describing") < phases.index("writing the report")


def test_a_job_that_embeds_reports_each_phase_to_its_end_in_order(service, data_root, monkeypatch):
    """Fifth and sixth users: a job that embedded its images sat at "embedding sentences 0% (0 of 35)" and never
    showed "describing"."""
    from PIL import Image

    from lbee.progress import PHASES

    client, app, settings = service
    root, _ = data_root
    (root / "ph").mkdir(exist_ok=True)
    for i in range(24):
        Image.new("RGB", (20, 16), (10 * i, 50, 0)).save(root / "ph" / f"img_{i:02d}.png")
    (root / "ph" / "good.csv").write_bytes((root / "ds" / "good.csv").read_bytes())
    db, seen = app.state.db, []
    renew = db.renew

    def spy(job_id, owner, **values):
        if "phase" in values:
            seen.append((values["phase"], values.get("fraction")))
        return renew(job_id, owner, **values)

    monkeypatch.setattr(db, "renew", spy)
    e = {"name": "phases", "images": "ph", "encoder": "spotcheck", "sentences": "spotcheck", "methods": ["tops"]}
    client.post(
        "/v1/jobs",
        json={**e, "clusters": 2, "models": [{"name": "m", "predictions": "ph/good.csv"}]},
        headers=client.auth_headers["submit"],
    )
    while run_next_job(db, settings) is not None:
        pass
    phases = [p for p, _ in seen]
    order = [PHASES.index(p) for p in dict.fromkeys(phases)]
    assert order == sorted(order), phases
    assert ("embedding sentences", 1.0) in seen and "describing" in phases, seen


def test_a_stored_runs_groups_page_through_all_their_images_with_thumbnails(service, data_root):
    """lbee serve's browser: a hard group's pages (JSON and HTML) list each of its images once, sortable by
    confidence, with thumbnails made from the stored image files."""
    from PIL import Image

    from lbee.reports.browse import BROWSE_PAGE_SIZE

    client, app, settings = service
    root, _ = data_root
    (root / "br").mkdir()
    for name in ("img.npy", "sen.npy", "sents.txt", "rel.npy", "good.csv"):
        (root / "br" / name).write_bytes((root / "ds" / name).read_bytes())
    for i in range(24):
        Image.new("RGB", (20, 16), (10 * i, 0, 0)).save(root / "br" / f"img_{i:02d}.png")
    e = entry(
        name="browse",
        images="br",
        image_embeddings="br/img.npy",
        sentence_embeddings="br/sen.npy",
        sentences="br/sents.txt",
        relevance={"ground_truth": "br/rel.npy"},
        predictions="br/good.csv",
    )
    read = client.auth_headers["read"]
    client.post("/v1/jobs", json=e, headers=client.auth_headers["submit"])
    while run_next_job(app.state.db, settings) is not None:
        pass
    run = client.get("/v1/runs?dataset=browse", headers=read).json()[0]
    groups = {}
    for g in range(2):
        first = client.get(f"/v1/runs/{run['id']}/groups/{g}/images?sort=-confidence", headers=read).json()
        rows = [
            r
            for p in range(1, first["n_pages"] + 1)
            for r in client.get(
                f"/v1/runs/{run['id']}/groups/{g}/images?page={p}&sort=-confidence", headers=read
            ).json()["rows"]
        ]
        assert len(rows) == first["n"] == len({r["image"] for r in rows}) > 0
        assert [r["confidence"] for r in rows] == sorted((r["confidence"] for r in rows), reverse=True)
        assert all(r["split"] == "hard" and r["group"] == g and r["label"] is not None for r in rows)
        assert "path" not in rows[0] and not [r for r in rows if str(root) in json.dumps(r)]  # no server path shown
        groups[g] = rows
    assert sum(len(v) for v in groups.values()) == run["n_hard"]
    jobs = client.get("/v1/jobs", headers=read).json()
    job_id = next(j["id"] for j in (jobs if isinstance(jobs, list) else jobs["jobs"]) if j["name"] == "browse")
    assert not [j for j in jobs if "runs" in j]  # a third user read `"runs": []` of a done job as "no run"
    r = client.get(f"/v1/jobs/{job_id}/explanation", params={"model": "m" * 5000}, headers=read)
    assert r.status_code == 404 and "(5,000 characters)" in r.text and len(r.text) < 400  # eighth sweep: echoed whole
    assert client.get(f"/v1/jobs/{job_id}", headers=read).json()["runs"]
    explained = client.get(f"/v1/jobs/{job_id}/explanation", headers=read).text  # seventh sweep S1: the encoder's
    assert str(root) not in explained and '"image_embeddings":"br/img.npy"' in explained.replace(" ", "")  # paths
    index = client.get("/", headers=read).text
    assert str(root) not in index  # seventh sweep S2: "Data root: /srv/..."
    # trial 25: the run list showed metrics alone; what a run found (here: why nothing was tested) is a column
    found = client.get(f"/v1/runs/{run['id']}", headers=read).json()["findings"]
    assert found["statements"] == [] and "that confirmation needs" in found["untested"]
    assert f"nothing tested on held-out images ({found['untested']})" in html_lib.unescape(index)
    assert found["lead"] and f"first lead: {found['lead']}" in re.sub("<[^>]+>", "", html_lib.unescape(index))
    html = client.get(f"/v1/runs/{run['id']}/report", headers=read).text  # sixth sweep S2: links spelt the server's
    assert html.count("img_0") > 0 and str(root) not in html and 'href="../' not in html  # folders, and could not open
    thumb = client.get(groups[0][0]["thumbnail"], headers=read)
    assert (
        thumb.status_code == 200 and thumb.headers["content-type"] == "image/jpeg" and thumb.content[:2] == b"\xff\xd8"
    )
    page = client.get(f"/runs/{run['id']}/groups/0", headers=read)
    assert page.status_code == 200 and page.text.count('loading="lazy"') == min(len(groups[0]), BROWSE_PAGE_SIZE)
    assert f"of {len(groups[0])}" in page.text and "page 1 of 1" in page.text and "→" in page.text
    rate = 1 - np.mean([r["performance"] for r in groups[0]])  # the header says it, as the report's does (trial 9)
    assert f"Group 0: {len(groups[0])} images, error rate {rate:.2f}</h2>" in page.text
    assert client.get(f"/runs/{run['id']}/groups/0").status_code in (303, 200)  # no token: the login form
    assert client.get(f"/v1/runs/{run['id']}/groups/9/images", headers=read).status_code == 404
    bad = client.get(f"/v1/runs/{run['id']}/groups/0/images?sort=size", headers=read)
    assert bad.status_code == 422 and "expected one of confidence" in bad.text
    assert client.get(f"/v1/runs/{run['id']}/images/999/thumbnail", headers=read).status_code == 404
    assert client.get(f"/v1/runs/{run['id']}/groups/0/images").status_code == 401
    assert 'class="browse-link"' in client.get("/", headers=read).text
    # a sixth user: the service's group page had no label → prediction filter (the report's has one)
    everything = client.get(f"/v1/runs/{run['id']}/groups/0/images", headers=read).json()
    (pair, count), *_ = everything["pairs"]
    only = client.get(f"/v1/runs/{run['id']}/groups/0/images", params={"pair": pair}, headers=read).json()
    assert only["n"] == count and all(f"{r['label']} → {r['prediction']}" == pair for r in only["rows"])
    page = client.get(f"/runs/{run['id']}/groups/0", params={"pair": pair}, headers=read).text
    assert 'id="pair"' in page and "selected>" in page.split('id="pair"')[1].split("</select>")[0]
    bad = client.get(f"/v1/runs/{run['id']}/groups/0/images", params={"pair": "cat → nope"}, headers=read)
    assert bad.status_code == 422 and "label → prediction" in bad.text
    # sweep 25: integers in ASCII digits only ('1_0' was page 10), a sort not echoed whole
    assert client.get(f"/v1/runs/{run['id']}/groups/0/images?page=1_0", headers=read).status_code == 422
    assert client.get(f"/v1/runs/{run['id']}/groups/0/images?page=%EF%BC%91", headers=read).status_code == 422
    long_sort = client.get(f"/v1/runs/{run['id']}/groups/0/images", params={"sort": "A" * 20_000}, headers=read)
    assert long_sort.status_code == 422 and len(long_sort.text) < 2000
    folder = settings.output / run["folder"] if "folder" in run else None
    stored = next((settings.output / "jobs").rglob("images.parquet")) if folder is None else folder / "images.parquet"
    # sweep 25 S1: a run file linked out of the run's folder was opened, and its keys quoted in the 404
    expl = stored.parent / "explanation.json"
    kept = expl.read_bytes()
    secret = data_root[0].parent / "secret.json"
    secret.write_text('{"methods": {"TOPSECRET_METHOD": 1}}')
    expl.unlink()
    expl.symlink_to(secret)
    r = client.get(f"/v1/runs/{run['id']}/groups/0/images", headers=read)
    assert r.status_code == 404 and "TOPSECRET" not in r.text and "leads out of the run's folder" in r.text
    expl.unlink()
    # sweep 25 SW1: an edited explanation.json was served as genuine (and the client's confirmed() read it)
    payload = json.loads(kept)
    payload["params"]["k"] = 99
    expl.write_text(json.dumps(payload))
    r = client.get(f"/v1/jobs/{job_id}/explanation", headers=read)
    said = "content_sha256" in r.text or "not the one recorded with the run" in r.text  # (the latter: sweep 32v)
    assert r.status_code == 409 and said and str(settings.output) not in r.text
    expl.write_bytes(kept)
    assert client.get(f"/v1/jobs/{job_id}/explanation", headers=read).status_code == 200
    # tenth sweep S3: a run whose stored files lbee's reader refuses said so with the output folder's absolute path
    (stored.parent / "explanation.json").write_text("{}")
    stored.unlink()
    for url in (f"/v1/runs/{run['id']}/groups/0/images", f"/v1/compare?a={run['id']}&b={run['id']}"):
        r = client.get(url, headers=read)
        assert r.status_code in (404, 409, 422) and str(settings.output) not in r.text, (url, r.text)


def test_a_run_on_random_weights_carries_the_banner_on_the_run_list_and_its_report(service, data_root):
    from test_first_day import RANDOM_CLIP, write_random_weight_embeddings

    from lbee.run.identity import RANDOM_WEIGHTS_BANNER

    client, app, settings = service
    root, _ = data_root
    (root / "rnd").mkdir(exist_ok=True)
    sentences = (root / "ds" / "sents.txt").read_text().splitlines()
    write_random_weight_embeddings(root / "rnd", np.load(root / "ds" / "img.npy"), np.eye(6), sentences)
    read, submit = client.auth_headers["read"], client.auth_headers["submit"]
    spec = f"open_clip:{RANDOM_CLIP['model']}@random"
    body = entry(name="noise", image_embeddings="rnd/img.npy", sentence_embeddings="rnd/sen.npy", encoder=spec)
    job = client.post("/v1/jobs", json=body, headers=submit).json()["id"]
    plain = client.post("/v1/jobs", json=entry(name="plain"), headers=submit).json()["id"]
    while run_next_job(app.state.db, settings) is not None:
        pass
    assert client.get(f"/v1/jobs/{job}", headers=read).json()["status"] == "done"
    banner = RANDOM_WEIGHTS_BANNER.format(encoder=spec)
    index = client.get("/", headers=read).text.replace("&#39;", "'")
    assert 'id="random-weights"' in index and banner in index and "run(s)" not in index
    assert index.count('<span class="random-weights">random weights</span>') == 1  # the plain run is not marked
    report = client.get(f"/v1/jobs/{job}/report", headers=read).text
    assert 'id="random-weights"' in report
    assert 'id="random-weights"' not in client.get(f"/v1/jobs/{plain}/report", headers=read).text
    # a third user: the group pages of a stored run had no banner
    for j, shown in ((job, True), (plain, False)):
        run_id = client.get(f"/v1/jobs/{j}", headers=read).json()["runs"][0]["id"]
        page = client.get(f"/runs/{run_id}/groups/0", headers=read)
        assert page.status_code == 200 and ('id="random-weights"' in page.text) == shown, page.text[:300]


def test_the_server_log_tells_each_jobs_start_and_end(service, caplog):
    """The second new user's server log held only the clients' polls: no line said a job started or ended."""
    import logging

    client, app, settings = service
    job = client.post("/v1/jobs", json=entry(name="told"), headers=client.auth_headers["submit"]).json()["id"]
    with caplog.at_level(logging.INFO, logger="lbee"):
        while run_next_job(app.state.db, settings) is not None:
            pass
    said = [r.getMessage() for r in caplog.records]
    assert f"job {job} (told): started, attempt 1" in said and f"job {job} (told): done" in said, said


def test_a_bare_sentences_name_is_a_file_in_the_root_and_a_builtin_name_is_the_builtin(
    data_root, tmp_path, monkeypatch
):
    """Eighth sweep S1 and W1: `sentences: leakfile` read the server's working folder, and a file named
    `conditions` there replaced the built-in set of every job."""
    from lbee.service.jobs import validate_entry

    root, _ = data_root
    monkeypatch.chdir(tmp_path)
    (tmp_path / "leakfile").write_text("machine example.com password hunter2\n")
    (tmp_path / "conditions").write_text("a sentence of the working folder\n")
    (root / "leakfile").write_text("An image of the root\n")
    ds = validate_entry({**entry(), "sentences": "leakfile"}, root)
    assert ds.sentence_set == str(root.resolve() / "leakfile")
    from lbee.io.sentences import load_sentence_set

    assert load_sentence_set(ds.sentence_set).sentences == ("An image of the root",)
    ds = validate_entry({**entry(), "sentences": "conditions"}, root)
    with pytest.warns(UserWarning, match="is the built-in set; the file 'conditions' in the current folder"):
        sents = load_sentence_set(ds.sentence_set).sentences
    assert len(sents) > 100 and "a sentence of the working folder" not in sents


def test_serve_on_a_port_in_use_is_one_line_before_anything_starts(tmp_path):
    """A new user's second `lbee serve` printed its banner and "Application startup complete", then uvicorn's
    `[Errno 98] address already in use`, with no word of what to do."""
    import socket

    from click.testing import CliRunner

    from lbee.cli import cli

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        db = f"sqlite:///{tmp_path / 'x.db'}"
        r = CliRunner().invoke(cli, ["serve", "--port", str(port), "--db", db, "--root", str(tmp_path)], obj={})
    assert r.exit_code == 1 and f"127.0.0.1:{port} is in use" in r.output and "--port 0" in r.output, r.output
    assert not (tmp_path / "x.db").exists()  # refused before the database was made


def test_a_job_with_a_bad_table_fails_while_preparing(service, data_root):
    """A seventh user's job with a half table showed 'hashing images', 'embedding sentences' and 'describing' before
    it failed on the table: the entry's tables are now checked before anything is loaded."""
    import pandas as pd

    from lbee.service.job_progress import PHASE_LINE

    client, app, settings = service
    root, _ = data_root
    table = pd.read_csv(root / "ds" / "good.csv")
    table.assign(label="no such class").to_csv(root / "ds" / "badlabel.csv", index=False)
    submit, read = client.auth_headers["submit"], client.auth_headers["read"]
    job = client.post("/v1/jobs", json=entry(name="badlabel", predictions="ds/badlabel.csv"), headers=submit).json()
    while run_next_job(app.state.db, settings) is not None:
        pass
    state = client.get(f"/v1/jobs/{job['id']}", headers=read).json()
    phases = [line[len(PHASE_LINE) :] for line in state["log"] if line.startswith(PHASE_LINE)]
    assert state["status"] == "failed" and "label" in state["error"], state
    assert phases == ["preparing"], phases


def test_a_statement_s_markup_is_text_on_every_page_of_the_service():
    """Sweep 32s B3: the run list's findings cell, a macro of the reports' templates (.j2), was not escaped under
    the service's escaping by suffix: a sentence file's `<img onerror=...>` ran in the page of whoever opened it."""
    from lbee.reports.html import _environment
    from lbee.service.app import page_templates

    evil = '<img src=x onerror="alert(1)">'
    findings = {"statements": [evil], "more": 0, "untested": None}
    row = {"id": 1, "job": "j", "dataset": evil, "model": "m", "created": "", "n_images": 1, "n_hard": 1}
    page = (
        page_templates()
        .get_template("index.html")
        .render(
            runs=[{**row, "main": [], "findings": findings, "links": {"report": "/r"}}],
            jobs=[],
            who="w",
            metrics=(),
            root="",
            random=None,
        )
    )
    assert evil not in page and page.count("&lt;img src=x onerror=") == 2
    # the list says what its statements are (trial 29 read a bare statement, confirmed or a lead?)
    cell = page[page.index('class="findings"') :]
    assert cell.index("confirmed on held-out images:") < cell.index("&lt;img src=x onerror=")
    index = (
        _environment()
        .get_template("index.html.j2")
        .render(entries=[{"href": "r", "dataset": evil, "model": "m", "findings": findings}], failures=[], title="t")
    )
    assert evil not in index and "&lt;img src=x onerror=" in index


def test_another_runs_files_put_in_a_runs_folder_are_never_served_as_its_own(service):
    """Sweep 32v B4, B5: another run's whole, consistent files copied into a run's folder (by someone who can write
    the server's output) were served as that run's by every endpoint, and compared without a word. A run is
    recorded with its explanation's digest; its files are served only while they are its own."""
    import shutil

    client, app, settings = service
    read, submit = client.auth_headers["read"], client.auth_headers["submit"]
    ja = client.post("/v1/jobs", json=entry(name="a"), headers=submit).json()["id"]
    jb = client.post("/v1/jobs", json=entry(name="b", predictions="ds/worse.csv"), headers=submit).json()["id"]
    while run_next_job(app.state.db, settings) is not None:
        pass
    ra, rb = (client.get(f"/v1/jobs/{j}", headers=read).json()["runs"][0]["id"] for j in (ja, jb))
    folder = {j: next((settings.output / "jobs").rglob(f"*{j}*/**/explanation.json")).parent for j in (ja, jb)}
    urls = [
        f"/v1/jobs/{ja}/explanation",
        f"/v1/jobs/{ja}/images",
        f"/v1/runs/{ra}/report",
        f"/v1/runs/{ra}/groups/0/images",
        f"/v1/compare?a={ra}&b={rb}",
    ]
    assert [client.get(u, headers=read).status_code for u in urls] == [200] * len(urls)
    assert client.get(f"/v1/runs/{ra}", headers=read).json()["findings"] is not None
    assert client.get(f"/v1/runs/{ra}", headers=read).json()["files_intact"] is True
    kept = {n: (folder[ja] / n).read_bytes() for n in ("explanation.json", "images.parquet", "assignments.parquet")}
    for name in kept:
        shutil.copy(folder[jb] / name, folder[ja] / name)
    said = [client.get(u, headers=read) for u in urls]
    assert [r.status_code for r in said] == [409] * len(urls), [r.text for r in said]
    assert all("not the one recorded with the run" in r.text for r in said)
    assert client.get(f"/v1/runs/{ra}", headers=read).json()["findings"] is None
    listed = {r["id"]: r for r in client.get("/v1/runs", headers=read).json()}  # listed, and said to be changed
    assert listed[ra]["files_intact"] is False and listed[ra]["findings"] is None
    for name, data in kept.items():
        (folder[ja] / name).write_bytes(data)
    assert [client.get(u, headers=read).status_code for u in urls] == [200] * len(urls)
    # sweep 32w B2: another run's report.html alone was served as the run's report
    own_report = (folder[ja] / "report.html").read_bytes()
    shutil.copy(folder[jb] / "report.html", folder[ja] / "report.html")
    assert client.get(f"/v1/runs/{ra}/report", headers=read).status_code == 409
    assert client.get(f"/v1/jobs/{ja}/report", headers=read).status_code == 409
    (folder[ja] / "report.html").write_bytes(own_report)
    # sweep 32w B3: a run recorded before its files' digests were (schema 0003) was never checked; a server that
    # starts pins it to its files as they are then
    import sqlalchemy as sa

    with app.state.db.engine.begin() as conn:
        conn.execute(sa.text("UPDATE runs SET files_sha256 = NULL"))
    os.chmod(folder[jb] / "report.html", 0o666)  # sweep 32am AM2: an older server's file another user could edit
    restarted = create_app(settings, start_workers=False, explain_pool=app.state.ctx.explain_pool)
    with TestClient(restarted) as again:
        assert again.get(f"/v1/runs/{ra}/report", headers=read).status_code == 200
        shutil.copy(folder[jb] / "explanation.json", folder[ja] / "explanation.json")
        assert again.get(f"/v1/jobs/{ja}/explanation", headers=read).status_code == 409
        assert again.get(f"/v1/runs/{rb}/report", headers=read).status_code == 409  # not pinned as it is: not served


def test_the_bytes_served_are_the_bytes_checked(service, monkeypatch):
    """Sweep 32x B3: the service checked a run's files, then read them again by path: another run's report.html
    swapped in between was served; a file edited in place at the same size, its time restored, kept its digest. B4:
    a run pinned while its folder was missing was never checked."""
    import shutil

    import sqlalchemy as sa

    import lbee._files as files

    client, app, settings = service
    read, submit = client.auth_headers["read"], client.auth_headers["submit"]
    job = client.post("/v1/jobs", json=entry(name="c"), headers=submit).json()["id"]
    while run_next_job(app.state.db, settings) is not None:
        pass
    run = client.get(f"/v1/jobs/{job}", headers=read).json()["runs"][0]["id"]
    folder = next((settings.output / "jobs").rglob(f"*{job}*/**/report.html")).parent
    real = files.read_bytes_file
    monkeypatch.setattr(files, "read_bytes_file", lambda path, what, **kw: real(path, what, **kw).upper())
    assert client.get(f"/v1/runs/{run}/report", headers=read).status_code == 409  # read after the check: others
    assert client.get(f"/v1/jobs/{job}/explanation", headers=read).status_code == 409
    monkeypatch.setattr(files, "read_bytes_file", real)
    assert client.get(f"/v1/runs/{run}/report", headers=read).status_code == 200
    report = folder / "report.html"
    st = report.stat()
    data = report.read_bytes()
    with open(report, "r+b") as fh:  # the same size, the same modification time: only the change time tells
        fh.write(data[:20].swapcase())
    os.utime(report, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert client.get(f"/v1/runs/{run}/report", headers=read).status_code == 409
    report.write_bytes(data)
    assert client.get(f"/v1/runs/{run}/report", headers=read).status_code == 200
    # B4: pinned with its folder missing, the run must still have no files
    with app.state.db.engine.begin() as conn:
        conn.execute(sa.text("UPDATE runs SET files_sha256 = NULL"))
    shutil.move(folder, folder.with_name("away"))
    create_app(settings, start_workers=False, explain_pool=app.state.ctx.explain_pool)  # pins at start
    shutil.move(folder.with_name("away"), folder)
    assert client.get(f"/v1/runs/{run}/report", headers=read).status_code == 409
