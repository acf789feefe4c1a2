"""`lbee serve`: the cases of the independent review (issue 24) as tests, and schema upgrades.

Open doors (API description without a token, CDN assets, encoders from
anywhere, a plain-HTTP bind on every interface), tracebacks (deep JSON, huge
ids, non-boolean masks), unbounded synchronous work, and an upgrade of a
database written at the previous schema (SQLite and PostgreSQL).
"""

import io
import json
import re

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")

from fastapi.testclient import TestClient  # noqa: E402
from service_backends import BACKENDS, backend, postgres  # noqa: E402,F401
from test_service import data_root, entry, explain_pool, service  # noqa: E402,F401

from lbee.service import ServiceSettings, create_app  # noqa: E402


def test_the_api_description_needs_a_token_and_loads_nothing_remote(service):
    client, _, _ = service
    read = client.auth_headers["read"]
    assert client.get("/openapi.json").status_code == 401
    assert client.get("/docs", follow_redirects=False).headers["location"] == "/login"
    assert client.get("/redoc").status_code == 404
    spec = client.get("/openapi.json", headers=read).json()
    assert {"/v1/jobs/{job_id}/cancel", "/metrics", "/v1/explain"} <= set(spec["paths"])
    page = client.get("/docs", headers=read).text
    assert "/static/swagger/swagger-ui-bundle.js" in page and "/openapi.json" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # no CDN, nothing off the server
    assert client.get("/static/swagger/swagger-ui-bundle.js").status_code == 401
    js = client.get("/static/swagger/swagger-ui-bundle.js", headers=read)
    assert js.status_code == 200 and len(js.content) > 500_000 and "javascript" in js.headers["content-type"]
    assert client.get("/static/swagger/../../settings.py", headers=read).status_code == 404
    assert client.get("/static/swagger/index.html", headers=read).status_code == 404


@pytest.mark.parametrize(
    "spec, ok",
    [
        ("open_clip:hf-hub:evil/repo", False),
        ("open_clip:ViT-B-32@hf-hub:evil/repo", False),
        ("open_clip:ViT-B-32@/etc/clip.bin", False),
        ("timm:resnet50", False),
        ("open_clip:ViT-B-32@https://example.org/w.pt", False),
        ("open_clip:ViT-B-32@laion2b_s34b_b79k", True),
        ("open_clip:ViT-B-32", True),
        ("open_clip:ViT-B-32@random:3", True),
        ("open_clip:ViT-B-32@ds/clip.pt", True),  # a checkpoint inside the data root
        ("spotcheck", True),
    ],
)
def test_only_encoders_from_the_allow_list(data_root, spec, ok):
    from lbee.service.paths import check_encoder

    root, _ = data_root
    if ok:
        used = check_encoder(spec, root)
        if "ds/" in spec:  # the worker loads the file that was checked, whatever its working folder
            assert used == f"open_clip:ViT-B-32@{root / 'ds' / 'clip.pt'}"
        else:
            assert used == spec
    else:
        with pytest.raises(ValueError, match="allow-list|outside the data root"):
            check_encoder(spec, root)
    check_encoder("open_clip:hf-hub:org/trusted", root, allowed=("open_clip:hf-hub:org/trusted",))


def test_a_job_naming_a_hub_encoder_is_refused_before_anything_runs(service):
    client, _, _ = service
    e = {k: v for k, v in entry(encoder="open_clip:hf-hub:evil/repo").items() if k != "image_embeddings"}
    r = client.post("/v1/jobs", json=e, headers=client.auth_headers["submit"])
    assert r.status_code == 422 and "allow-list" in r.json()["detail"] and "--allow-encoder" in r.json()["detail"]
    assert client.get("/v1/jobs", headers=client.auth_headers["read"]).json() == []


@pytest.mark.parametrize(
    "host, warned",
    [
        ("0.0.0.0", True),
        ("192.168.1.4", True),
        ("lbee.example.org", True),
        ("127.0.0.1", False),
        ("::1", False),
        ("localhost", False),
    ],
)
def test_a_plain_http_bind_beyond_loopback_is_warned_about(tmp_path, monkeypatch, host, warned):
    import uvicorn
    from click.testing import CliRunner

    from lbee.cli import cli

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(kw))
    res = CliRunner().invoke(
        cli,
        [
            "serve",
            "--root",
            str(tmp_path),
            "--output",
            str(tmp_path / "out"),
            "--host",
            host,
            "--port",
            "0",  # uvicorn.run is replaced: nothing listens, and a server on 8000 beside the test is no conflict
            "--db",
            f"sqlite:///{tmp_path / 'x.db'}",
        ],
        obj={},
    )
    assert res.exit_code == 0, res.output
    assert calls and calls[0]["host"] == host
    assert calls[0]["access_log"] is False  # a line per request only with --access-log (trial 6: 120 of them)
    assert ("WARNING" in res.output and "plain HTTP" in res.output and "reverse proxy" in res.output) is warned


def test_a_database_without_a_token_is_warned_about_at_start(tmp_path, monkeypatch):
    """A ninth user's misspelled --db (lbee.dbx) started a new, empty database in silence: every token was refused."""
    import uvicorn
    from click.testing import CliRunner

    from lbee.cli import cli

    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: None)
    db = f"sqlite:///{tmp_path / 'x.db'}"
    args = ["serve", "--root", str(tmp_path), "--output", str(tmp_path / "out"), "--port", "0", "--db", db]
    res = CliRunner().invoke(cli, args, obj={})
    assert res.exit_code == 0 and "holds no active token" in res.output, res.output
    assert CliRunner().invoke(cli, ["serve", "token", "create", "me", "--db", db], obj={}).exit_code == 0
    res = CliRunner().invoke(cli, args, obj={})
    assert res.exit_code == 0 and "no active token" not in res.output, res.output


def test_deeply_nested_json_and_yaml_are_a_422(service):
    client, _, _ = service
    h = {**client.auth_headers["submit"], "content-type": "application/json"}
    deep = b"[" * 100_000 + b"]" * 100_000
    for path in ("/v1/jobs", "/v1/explain"):
        r = client.post(path, content=deep, headers=h)
        assert r.status_code == 422 and "nested too deeply" in r.json()["detail"], (path, r.text)
    nested = 0
    for _ in range(40):  # 40 levels: parsed by Python, refused by the service's limit of 32
        nested = [nested]
    r = client.post("/v1/jobs", content=json.dumps({"name": "x", "report": nested}), headers=h)
    assert r.status_code == 422 and "nested too deeply" in r.json()["detail"]
    r = client.post("/v1/jobs", content=b"a: " + b"[" * 50_000, headers={**h, "content-type": "application/yaml"})
    assert r.status_code == 422 and "Traceback" not in r.text


def test_a_yaml_alias_bomb_job_body_is_a_quick_422(service):
    """Issue 32: nine anchor levels x 10 (554 bytes) made check_depth walk 10^9 paths (a core at 100 % > 90 s)."""
    import time

    client, _, _ = service
    h = {**client.auth_headers["submit"], "content-type": "application/yaml"}
    lines = ["name: bomb", 'a0: &a0 ["x"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    for body in ("\n".join(lines) + "\n", "name: loop\nreport: &r [1, *r]\n"):
        start = time.perf_counter()
        r = client.post("/v1/jobs", content=body.encode(), headers=h)
        assert time.perf_counter() - start < 10
        assert r.status_code == 422 and r.json()["detail"].startswith("the body"), r.text
    assert "at most 100,000 are accepted" in client.post("/v1/jobs", content="\n".join(lines), headers=h).text
    assert "recursive alias" in r.json()["detail"]
    assert client.get("/v1/jobs", headers=client.auth_headers["read"]).json() == []


def test_a_yaml_body_of_long_aliased_text_is_a_quick_short_422(service):
    """Sweep #5: a 500,000-character name aliased 4,000 times (512 KB) grew the server process by 1.8 GB to build
    the message's repr. Aliases may add at most the body limit (1 MiB) of text; a value under it is quoted cut."""
    import time

    client, _, _ = service
    h = {**client.auth_headers["submit"], "content-type": "application/yaml"}

    def body(aliases):
        return 'name: &s "' + "x" * 500_000 + '"\nspotcheck: {seed: 0}\nmethods: [' + ",".join(["*s"] * aliases) + "]\n"

    start = time.perf_counter()
    r = client.post("/v1/jobs", content=body(4000).encode(), headers=h)
    assert time.perf_counter() - start < 10
    assert r.status_code == 422 and len(r.text) < 1000, r.text[:1000]
    assert "the body: its aliases expand to 2,000,000,000 characters of text beyond" in r.json()["detail"]
    r = client.post("/v1/jobs", content=body(2).encode(), headers=h)  # 1,000,000 characters added: under 1 MiB
    assert r.status_code == 422 and len(r.text) < 1000 and "(2 items)" not in r.text, r.text[:1000]
    assert "key 'methods' is ['xxxx" in r.text
    r = client.post("/v1/jobs", content=body(3).encode(), headers=h)  # 1,500,000: past the body's 1 MiB
    assert r.status_code == 422 and "at most 1,048,576 are accepted" in r.text, r.text[:1000]
    assert client.get("/v1/jobs", headers=client.auth_headers["read"]).json() == []


@pytest.mark.parametrize("written", ["010", "1:0", "0x10", "1_000"])
def test_yaml_1_1_integers_in_a_job_body_are_refused_not_converted(service, written):
    """Sweep #12: `clusters: 010` was stored as 8, `1:0` as 60, `0x10` as 16, `1_000` as 1000."""
    client, _, _ = service
    h = {**client.auth_headers["submit"], "content-type": "application/yaml"}
    r = client.post("/v1/jobs", content=f"name: yo\nspotcheck: {{seed: 0}}\nclusters: {written}\n", headers=h)
    assert r.status_code == 422 and f"'clusters' is '{written}'; expected an integer" in r.json()["detail"], r.text
    r = client.post("/v1/jobs", content="name: yo\nspotcheck: {<<: {seed: 0}}\n", headers=h)
    assert r.status_code == 422 and "line 2: merge keys (<<) are not supported" in r.json()["detail"], r.text


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_ids_beyond_the_database_range_are_a_422_not_an_overflow(service):
    client, _, _ = service
    read = client.auth_headers["read"]
    huge = "99999999999999999999999"
    for path in (
        f"/v1/runs/{huge}",
        f"/v1/runs/{2**31}",
        f"/v1/runs/{huge}/report",
        f"/v1/compare?a={huge}&b=1",
        "/v1/compare?a=1&b=-1",
        f"/compare?a={huge}&b=1",
        "/v1/runs/0",
    ):
        r = client.get(path, headers=read)
        assert r.status_code == 422 and ("less than or equal" in r.text or "greater than" in r.text), (path, r.text)
    assert client.get(f"/v1/runs/{2**31 - 1}", headers=read).status_code == 404  # in range: simply not there


@pytest.mark.parametrize("field, values", [("hard", [0.3, 2.0]), ("easy", [0.3, 0.0]), ("hard", [2, 0])])
def test_masks_must_be_booleans_not_coerced(service, planted, field, values):
    client, _, _ = service
    X, S, _, _ = planted
    n = len(X)
    mask = (values * n)[:n]
    other = "easy" if field == "hard" else "hard"
    body = {
        "image_embeddings": X.tolist(),
        "sentence_embeddings": S.tolist(),
        field: mask,
        other: [i % 2 == 0 for i in range(n)],
    }
    r = client.post("/v1/explain", json=body, headers=client.auth_headers["submit"])
    assert r.status_code == 422 and f"`{field}`" in r.json()["detail"] and "boolean" in r.json()["detail"], r.text
    buf = io.BytesIO()
    np.save(buf, np.asarray(mask, dtype=float))
    files = {
        "image_embeddings": ("x.npy", _npy(X)),
        "sentence_embeddings": ("s.npy", _npy(S)),
        field: ("m.npy", buf.getvalue()),
    }
    r = client.post(
        "/v1/explain", files=files, data={other: json.dumps(body[other])}, headers=client.auth_headers["submit"]
    )
    assert r.status_code == 422 and f"`{field}`" in r.json()["detail"], r.text


def _npy(a):
    buf = io.BytesIO()
    np.save(buf, np.asarray(a))
    return buf.getvalue()


def test_explain_cost_is_bounded_by_the_documented_limits(service):
    """The fixture's server allows 200 images and exact Ward on at most 20 images per split."""
    client, _, _ = service
    h = client.auth_headers["submit"]
    rng = np.random.default_rng(0)
    S = np.eye(8)

    def body(n, **settings):
        X = rng.normal(size=(n, 8))
        return {
            "image_embeddings": X.tolist(),
            "sentence_embeddings": S.tolist(),
            "confidence": rng.normal(size=n).tolist(),
            "settings": {"methods": ["tops"], **settings},
        }

    r = client.post("/v1/explain", json=body(201), headers=h)
    assert r.status_code == 413 and "201 image_embeddings rows" in r.json()["detail"] and "'images'" in r.text
    r = client.post("/v1/explain", json=body(100, ward="exact"), headers=h)
    assert r.status_code == 422 and "limit 'exact_ward'" in r.json()["detail"] and "'auto'" in r.text
    r = client.post("/v1/explain", json=body(100, clusters=501), headers=h)
    assert r.status_code == 422 and "limit 'clusters'" in r.json()["detail"]
    assert client.post("/v1/explain", json=body(100), headers=h).status_code == 200  # auto: the scalable Ward
    assert client.post("/v1/explain", json=body(30, ward="exact"), headers=h).status_code == 200  # splits ≤ 20


def test_the_server_process_never_runs_the_analysis(service, planted, monkeypatch):
    import lbee

    client, _, _ = service
    X, S, phi, _ = planted

    def boom(*args, **kwargs):
        raise AssertionError("the analysis ran in the server process")

    monkeypatch.setattr(lbee, "explain_methods", boom)
    body = {
        "image_embeddings": X.tolist(),
        "sentence_embeddings": S.tolist(),
        "confidence": phi.tolist(),
        "settings": {"methods": ["tops"], "clusters": 2},
    }
    r = client.post("/v1/explain", json=body, headers=client.auth_headers["submit"])
    assert r.status_code == 200 and r.json()["explanations"]["tops"]["selected"]


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_an_upgrade_keeps_the_runs_stored_at_the_previous_schema(data_root, tmp_path, backend, explain_pool):
    """A database at schema 0001 (before leases) with a stored run: the server upgrades it on start and the run
    reads back, report included; a database of a newer lbee is refused with the reason."""
    import sqlalchemy as sa

    from lbee.service.auth import create_token
    from lbee.service.db import Database
    from lbee.service.migrate import HEAD, current_revision, upgrade

    root, _ = data_root
    engine = sa.create_engine(backend)
    upgrade(engine, "0001")
    now = "2026-01-02 03:04:05"
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO jobs (id, name, key, entry, root, folder, status, progress, log, failures, attempts, "
                "created, started, finished) VALUES ('j1', 'old', 'k', '{\"name\": \"old\"}', :root, 'runs/old-k', "
                "'done', 'done in 1.0 s', '', '[]', 1, :t, :t, :t)"
            ),
            {"root": str(root), "t": now},
        )
        conn.execute(
            sa.text(
                "INSERT INTO runs (id, job_id, dataset, model, folder, metrics, n_images, n_hard, seconds, created) "
                "VALUES (7, 'j1', 'old', 'm', 'runs/old-k', :m, 24, 8, 1.0, :t)"
            ),
            {"m": json.dumps([{"slicer": "ward", "method": "tops", "TPR": 0.5}]), "t": now},
        )
    assert current_revision(engine) == "0001"
    out = tmp_path / "out"
    (out / "runs" / "old-k").mkdir(parents=True)
    (out / "runs" / "old-k" / "report.html").write_text("<html>the old report</html>")
    settings = ServiceSettings(root=root, output=out, db_url=backend, workers=0)
    app = create_app(settings, start_workers=False, explain_pool=explain_pool)
    assert current_revision(engine) == HEAD
    h = {"Authorization": f"Bearer {create_token(app.state.db, 'r', 'read')}"}
    with TestClient(app) as client:
        run = client.get("/v1/runs/7", headers=h).json()
        assert run["dataset"] == "old" and run["metrics"] == [{"slicer": "ward", "method": "tops", "TPR": 0.5}]
        assert "the old report" in client.get("/v1/runs/7/report", headers=h).text
        assert client.get("/v1/jobs/j1", headers=h).json()["cancel_requested"] is False
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    with pytest.raises(ValueError, match="revision '9999'.*newer lbee"):
        Database(backend)
    engine.dispose()


# ---- issue 32: bounded settings checked at submission, duplicate keys, linear key checks


@pytest.mark.parametrize(
    "change, message",
    [
        ({"clusters": 100_000_000}, "'clusters' is 100000000; expected an integer in [1, 1000]"),
        ({"easy_clusters": 10**6}, "'easy_clusters' is 1000000; expected an integer in [1, 1000]"),
        ({"k": 10**30}, "'k' is 1000000000000000000000000000000; expected an integer in [1, 100]"),
        ({"a": 10**400}, "expected a number in [0, 10]"),
        ({"o": 1e308}, "'o' is 1e+308; expected a number in [0, 10]"),
        ({"tau": -2}, "expected a number in [-1, 1]"),
        ({"ignore_index": -(10**30)}, "expected an integer in [-2147483648, 2147483647]"),
        ({"thumbnails": 10**12}, "'thumbnails' is 1000000000000; expected an integer in [1, 200]"),
        ({"batch_size": 0}, "'batch_size' is 0; expected an integer in [1, 65536]"),
        ({"sweep": {"C": [10**20]}}, "sweep C as a list of at most 50 integers in [1, 1000]"),
        ({"sweep": {"K": list(range(1, 80))}}, "at most 50"),
        ({"sweep": {"o": [-0.5]}}, "numbers in [0.0, 10.0]"),
    ],
)
def test_every_numeric_setting_is_bounded_at_submission(service, change, message):
    client, _, _ = service
    r = client.post("/v1/jobs", json={**entry(), **change}, headers=client.auth_headers["submit"])
    assert r.status_code == 422 and message in r.json()["detail"], r.text
    assert client.get("/v1/jobs", headers=client.auth_headers["read"]).json() == []  # nothing queued


@pytest.mark.parametrize("seed", [-1, 10**23, 2**32, True, 1.5])
def test_a_world_seed_outside_the_generator_range_is_refused_at_submission(service, seed):
    client, _, _ = service
    for body in ({"name": "x", "spotcheck": {"seed": seed}}, {"name": "x", "spotcheck": seed}):
        r = client.post("/v1/jobs", json=body, headers=client.auth_headers["submit"])
        assert r.status_code == 422, (body, r.text)
        assert "spotcheck" in r.json()["detail"], r.text
    r = client.post(
        "/v1/jobs", json={"name": "x", "spotcheck": {"seed": 2**32 - 1}}, headers=client.auth_headers["submit"]
    )
    assert r.status_code == 202, r.text


def test_the_cli_refuses_settings_out_of_range_with_a_clear_error(tmp_path):
    from click.testing import CliRunner

    from lbee.cli import cli

    for args, message in (
        (["describe", str(tmp_path), "--clusters", "100000"], "100000 is not in the range 1<=x<=1000"),
        (["demo", "--seed", "-1"], "-1 is not in the range 0<=x<=4294967295"),
        (["spotcheck", "generate", "--seed", str(10**23), "--out", str(tmp_path / "w")], "not in the range"),
        (["sweep", "--clusters-grid", "1,100000", "--predictions", __file__, "--relevance", __file__], "[1, 1000]"),
        (["sweep", "--o-grid", "nan", "--predictions", __file__, "--relevance", __file__], "'nan' is not a number"),
        (["evaluate", __file__, "--relevance", __file__, "--o", "11"], "11.0 is not in the range 0.0<=x<=10.0"),  # #30
        (["evaluate", __file__, "--relevance", __file__, "--o", "1e308"], "not in the range 0.0<=x<=10.0"),
        (["sweep", "--o", "11", "--predictions", __file__, "--relevance", __file__], "not in the range 0.0<=x<=10.0"),
        (["describe", str(tmp_path), "--batch-size", "100000"], "100000 is not in the range 1<=x<=65536"),
        (["describe", str(tmp_path), "--num-workers", "1000"], "1000 is not in the range 0<=x<=256"),
        (["describe", str(tmp_path), "--image-size", "100000"], "100000 is not in the range 1<=x<=1024"),
        (["embed", str(tmp_path), "--batch-size", "100000", "--out", str(tmp_path / "e")], "1<=x<=65536"),
        (["vqa", "--images", str(tmp_path), "--batch-size", "100000"], "1<=x<=65536"),
    ):
        res = CliRunner().invoke(cli, args, obj={})
        assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output, res.output


def test_a_json_key_written_twice_is_refused_naming_it(service):
    client, _, _ = service
    h = {**client.auth_headers["submit"], "content-type": "application/json"}
    body = json.dumps(entry())[:-1] + ', "clusters": 3}'  # `clusters` twice: the last one used to win
    r = client.post("/v1/jobs", content=body.encode(), headers=h)
    assert r.status_code == 422 and "'clusters' is written twice" in r.json()["detail"], r.text
    r = client.post("/v1/explain", content=b'{"settings": {"k": 1, "k": 2}}', headers=h)
    assert r.status_code == 422 and "'k' is written twice" in r.json()["detail"], r.text


def test_an_entry_with_90000_unknown_keys_is_refused_in_linear_time(service):
    import time

    client, _, _ = service
    body = {**entry(), **{f"k{i}": 1 for i in range(90_000)}}
    t0 = time.perf_counter()
    r = client.post("/v1/jobs", json=body, headers=client.auth_headers["submit"])
    assert time.perf_counter() - t0 < 5  # 9 s when every unknown key got a did-you-mean
    detail = r.json()["detail"]
    assert r.status_code == 422 and "unknown key 'k0'" in detail and "89995 more unknown keys" in detail


def test_a_big_manifest_is_checked_by_the_worker_not_in_the_request(service, data_root):
    """Issue 32: the POST of a job naming a 1M-row manifest took 108 s (its rows were read in the request)."""
    import time

    from lbee.service.jobs import run_next_job

    client, app, settings = service
    root, _ = data_root
    rows = "\n".join(f"imgs/{i:06d}.png" for i in range(200_000))
    (root / "ds" / "big.csv").write_text("path\n" + rows + "\n")
    (root / "ds" / "leaky.csv").write_text("path\nimgs/a.png\n/etc/passwd\n")
    h = client.auth_headers["submit"]
    big = {"name": "big", "images": "ds/big.csv", "predictions": "ds/good.csv"}
    t0 = time.perf_counter()
    r = client.post("/v1/jobs", json=big, headers=h)
    assert r.status_code == 202 and time.perf_counter() - t0 < 5, r.text
    client.post(f"/v1/jobs/{r.json()['id']}/cancel", headers=h)
    leaky = client.post("/v1/jobs", json={**big, "name": "leaky", "images": "ds/leaky.csv"}, headers=h).json()
    run_next_job(app.state.db, settings)  # the worker reads the rows first, and refuses the one outside the root
    job = client.get(f"/v1/jobs/{leaky['id']}", headers=client.auth_headers["read"]).json()
    assert job["status"] == "failed" and "outside the data root" in job["error"] and "root:" not in job["error"]


def test_job_errors_and_logs_show_no_server_path(service, data_root):
    from lbee.service.jobs import run_next_job
    from lbee.service.paths import redact_paths

    client, app, settings = service
    root, _ = data_root
    h = client.auth_headers["submit"]
    job = client.post("/v1/jobs", json=entry(name="npy", sentence_embeddings="ds/good.csv"), headers=h).json()["id"]
    run_next_job(app.state.db, settings)
    st = client.get(f"/v1/jobs/{job}", headers=client.auth_headers["read"]).json()
    shown = json.dumps(st)
    assert st["status"] == "failed" and "'ds/good.csv'" in st["error"], st
    assert str(root) not in shown and str(settings.output) not in shown and "/tmp" not in shown
    # the rule: inside the root relative to it, the output and cache by name, anything else by its last part
    site = "/usr/lib/python3/site-packages/numpy/lib/npyio.py"
    text = f"{root}/ds/x.csv, line 3; wrote {settings.output}/jobs/1/report.html; {site}:456; {settings.cache_dir}/a"
    assert (
        redact_paths(text, settings) == "ds/x.csv, line 3; wrote <output>/jobs/1/report.html; …/npyio.py:456; <cache>/a"
    )


def _npy_claiming(shape):
    """A .npy file of a 2 × 8 float32 array whose header claims ``shape``."""
    raw = _npy(np.zeros((2, 8), np.float32))
    n = int.from_bytes(raw[8:10], "little")
    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}"
    return raw[:10] + (header + " " * (n - len(header) - 1) + "\n").encode() + raw[10 + n :]


def test_an_npy_upload_is_checked_by_its_header_before_anything_is_allocated(service):
    """Issue 32: a header claiming (10**12, 8) gave a 500 from a MemoryError; an .npz gave AttributeError."""
    client, _, _ = service
    h = client.auth_headers["submit"]
    S = ("s.npy", _npy(np.eye(8, dtype=np.float32)))
    z = io.BytesIO()
    np.savez(z, a=np.zeros((2, 8)))
    for data, status, message in (
        (_npy_claiming((10**12, 8)), 413, "1000000000000 is over this server's limit 'images' of 200"),
        (_npy_claiming((2, 10**9)), 413, "limit 'dim'"),
        (_npy_claiming((150, 4000)), 422, "its header claims shape (150, 4000)"),
        (_npy_claiming((2, 8, 8)), 422, "expected 2 dimension(s)"),
        (z.getvalue(), 422, "is an .npz archive (np.savez), not a .npy array"),
    ):
        r = client.post("/v1/explain", files={"image_embeddings": ("x.npy", data), "sentence_embeddings": S}, headers=h)
        assert r.status_code == status and message in r.json()["detail"], r.text


@pytest.mark.parametrize(
    "body, message",
    [
        ({"images": "ds/" + "a" * 5000}, "File name too long"),  # was a 500 (OSError from Path.exists)
        ({"name": ["x"]}, "'name' is ['x']; expected a string"),  # was accepted as the folder name "['x']"
        ({"slicers": [{"ward": {"x": 1}}]}, "options that slicer 'ward' takes"),  # failed in the worker
        ({"slicers": [{"domino": {"random_state": -5}}]}, "`slicers.domino.random_state` is -5"),
        # Ward's joblib cache folder is the library's, never a job's: it wrote anywhere on the server
        ({"slicers": [{"ward": {"memory": "/tmp/outside"}}]}, "'memory' is not one"),
        ({"slicers": [{"planespot": {"device": "cuda:7"}}]}, "'device' is not one"),
        ({"slicers": [{"ward": {"n_clusters": 10**8}}]}, "is 100000000; expected an integer in [1, 1000]"),
        ({"slicers": [{"domino": {"max_iter": 10**12}}]}, "`slicers.domino.max_iter` is 1000000000000"),
        ({"slicers": [{"domino": {"tol": "nan"}}]}, "`slicers.domino.tol` is 'nan'; expected a number"),
        ({"encoder": "open_clip:ViT-B-32@random:99999999999999999999999"}, "`encoder @random:SEED` is 9999"),
    ],
)
def test_hostile_entries_are_a_422_at_submission_never_a_500_nor_a_worker_failure(service, body, message):
    client, _, _ = service
    e = {**entry(), **body}
    if "images" in body or "encoder" in body:
        e.pop("image_embeddings")
    r = client.post("/v1/jobs", json=e, headers=client.auth_headers["submit"])
    assert r.status_code == 422 and message in r.json()["detail"], r.text


@pytest.mark.parametrize("content_type", ["application/json", "application/yaml"])
def test_an_integer_of_thousands_of_digits_is_a_422_naming_the_key_or_the_number(service, content_type):
    """Sixth sweep M1: `seed:` followed by 5001 digits gave Python's own 'Exceeds the limit (4300 digits)' text,
    naming no key. JSON refuses a number of more than 4000 digits; YAML keeps it as text, which the key refuses."""
    client, _, _ = service
    h = {**client.auth_headers["submit"], "content-type": content_type}
    digits = "7" * 5001
    body = f'{{"name": "x", "spotcheck": {{"seed": {digits}}}}}'
    r = client.post("/v1/jobs", content=body.encode(), headers=h)
    detail = r.json()["detail"]
    assert r.status_code == 422 and "4300" not in detail, r.text
    assert "a number of 5,001 digits; at most 4000" in detail or "seed" in detail, detail


def test_an_escaped_lone_surrogate_is_a_422_naming_it(service):
    client, _, _ = service
    h = {**client.auth_headers["submit"], "content-type": "application/json"}
    r = client.post("/v1/jobs", content=b'{"name": "\\ud800", "spotcheck": {"seed": 0}}', headers=h)
    assert r.status_code == 422 and "\\ud800, a lone surrogate" in r.json()["detail"], r.text


def test_serve_on_port_0_names_the_port_it_listens_on(tmp_path, monkeypatch):
    """A fourth user's `lbee serve --port 0` printed http://127.0.0.1:0/; the real port was in uvicorn's line only.
    `token create` says the token is shown once."""
    import uvicorn
    from click.testing import CliRunner

    from lbee.cli import cli

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(kw))
    db = f"sqlite:///{tmp_path / 'x.db'}"
    res = CliRunner().invoke(
        cli, ["serve", "--root", str(tmp_path), "--output", str(tmp_path / "o"), "--port", "0", "--db", db], obj={}
    )
    assert res.exit_code == 0, res.output
    port = calls[0]["port"]
    assert port > 0 and f"http://127.0.0.1:{port}/" in res.output
    res = CliRunner().invoke(cli, ["serve", "--db", db, "token", "create", "ci"], obj={})
    assert res.exit_code == 0 and "shown this once" in res.output, res.output
