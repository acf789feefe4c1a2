"""`lbee serve` as a real server: the SpotCheck demo job end to end, and its pages in headless Chromium.

The end-to-end test starts `lbee serve` on a free 127.0.0.1 port, submits the
SpotCheck demo world as a job and fetches its report; the browser test opens
the run list and the API description of that server in headless Chromium
(skipped without chromium outside CI, failing under CI=true, as
tests/test_report_browser.py).
"""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")

from service_backends import wait_healthy  # noqa: E402

import lbee  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


# ---- a real server ----------------------------------------------------------------------------------------


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    """`lbee serve` in a subprocess on a free loopback port: (base url, submit token, read token)."""
    tmp = tmp_path_factory.mktemp("live")
    (tmp / "root").mkdir()
    db = f"sqlite:///{tmp / 'lbee.db'}"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    lbee_cmd = [sys.executable, str(REPO / "cli.py")]
    tokens = {}
    for name, scope in (("ci", "submit"), ("viewer", "read")):
        out = subprocess.run(
            lbee_cmd + ["serve", "token", "create", name, "--scope", scope, "--db", db],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        tokens[scope] = out.stdout.strip()
    port = _free_port()
    log = open(tmp / "server.log", "w")
    proc = subprocess.Popen(
        lbee_cmd
        + [
            "--cache-dir",
            str(tmp / "cache"),
            "serve",
            "--root",
            str(tmp / "root"),
            "--output",
            str(tmp / "out"),
            "--db",
            db,
            "--port",
            str(port),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(proc, base, tmp / "server.log")
        yield base, tokens["submit"], tokens["read"], tmp
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


@pytest.fixture(scope="module")
def demo_job(live_server):
    """The SpotCheck demo world submitted to the live server and polled to completion."""
    import httpx

    base, submit, read, tmp = live_server
    r = httpx.post(
        f"{base}/v1/jobs",
        json={"name": "demo", "spotcheck": {"seed": 0}},
        headers={"Authorization": f"Bearer {submit}"},
        timeout=30,
    )
    assert r.status_code == 202, r.text
    job = r.json()["id"]
    deadline, seen = time.time() + 900, set()
    while True:
        st = httpx.get(f"{base}/v1/jobs/{job}", headers={"Authorization": f"Bearer {read}"}, timeout=30).json()
        seen.add(st["status"])
        if st["status"] in ("done", "failed"):
            break
        assert time.time() < deadline, st
        time.sleep(1)
    assert st["status"] == "done", (st, (tmp / "server.log").read_text()[-3000:])
    return job, st, seen


def test_live_server_runs_the_spotcheck_demo_job(live_server, demo_job):
    import httpx

    base, submit, read, _ = live_server
    job, st, seen = demo_job
    h = {"Authorization": f"Bearer {read}"}
    assert "running" in seen or st["started"] is not None
    assert any("generating SpotCheck world" in ln for ln in st["log"])
    report = httpx.get(f"{base}/v1/jobs/{job}/report", headers=h, timeout=30)
    assert report.status_code == 200 and "<title>lbee · demo · EC classifier</title>" in report.text
    assert "True blindspot 0" in report.text and len(report.text) > 50_000
    metrics = httpx.get(f"{base}/v1/jobs/{job}/metrics", headers=h, timeout=30).json()
    assert set(lbee.METHODS) <= {r["method"] for r in metrics["metrics"]}
    exp = httpx.get(f"{base}/v1/jobs/{job}/explanation", headers=h, timeout=30).json()
    from lbee.core.explanation import validate_explanation_payload
    from lbee.io.sentences import WORLD_SENTENCE_SET

    assert exp["sentence_set"] == WORLD_SENTENCE_SET
    assert validate_explanation_payload(exp, source="job")["fpdiff"].hard_clusters
    runs = httpx.get(f"{base}/v1/runs?dataset=demo", headers=h, timeout=30).json()
    assert len(runs) == 1 and runs[0]["model"] == "EC classifier"
    assert httpx.get(f"{base}/docs", headers=h, timeout=30).status_code == 200
    assert httpx.get(f"{base}/openapi.json", timeout=30).status_code == 401
    assert httpx.get(f"{base}/v1/runs", timeout=30).status_code == 401
    r = httpx.post(
        f"{base}/v1/jobs",
        json={"name": "x", "images": "../../etc"},
        headers={"Authorization": f"Bearer {submit}"},
        timeout=30,
    )
    assert r.status_code == 422


def test_run_list_page_in_headless_chromium(live_server, demo_job, tmp_path):
    from selenium.webdriver.support.ui import WebDriverWait
    from test_report_browser import _browser

    base, _, read, _ = live_server
    driver = _browser(tmp_path)
    try:
        driver.get(f"{base}/")  # redirected to the login form
        assert driver.current_url.endswith("/login")
        driver.find_element("id", "token").send_keys(read)
        driver.find_element("id", "login").click()
        WebDriverWait(driver, 30).until(lambda d: d.find_elements("id", "jobs"))  # the run list, logged in
        state = driver.execute_script("""
            return {title: document.title, runs: document.querySelectorAll('#runs tr.run').length,
                    links: Array.from(document.querySelectorAll('a.report-link')).map(a => a.href),
                    jobs: Array.from(document.querySelectorAll('#jobs tr.job td')).map(t => t.textContent)};""")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        driver.get(state["links"][0])
        WebDriverWait(driver, 30).until(lambda d: "EC classifier" in d.title)
        report_title = driver.title
        # the API description: Swagger UI from the package's own assets, the schema fetched with the cookie
        driver.get(f"{base}/docs")
        WebDriverWait(driver, 60).until(lambda d: d.find_elements("css selector", ".opblock"))
        operations = driver.execute_script(
            "return Array.from(document.querySelectorAll('.opblock-summary-path')).map(e => e.textContent);"
        )
        resources = driver.execute_script("return performance.getEntriesByType('resource').map(r => r.name);")
        # the report page and /docs: no error in the console, /favicon.ico included (a seventh user saw its 404)
        docs_errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    finally:
        driver.quit()
    assert any("/v1/jobs/{job_id}/cancel" in o.replace("\u200b", "") for o in operations), operations
    assert resources and all(r.startswith(base) for r in resources), resources  # nothing from a CDN
    assert docs_errors == [], docs_errors
    assert "runs and jobs" in state["title"] and state["runs"] >= len(lbee.METHODS)  # a row per method of the demo run
    assert "done" in state["jobs"] and "demo" in state["jobs"]
    assert errors == [], errors
    assert "demo" in report_title and "EC classifier" in report_title


def test_submit_runs_a_job_end_to_end(live_server, demo_job, tmp_path):
    """`lbee submit` (lbee.service.client) submits an entry, follows its phases to the end and fetches the results;
    the client reads the same job back."""
    import httpx
    from click.testing import CliRunner

    from lbee.cli import cli
    from lbee.service.client import Client, JobFailed

    base, submit, read, tmp = live_server
    (tmp_path / "demo.yaml").write_text("name: demo\nspotcheck: {seed: 0}\n")
    r = CliRunner().invoke(
        cli,
        ["submit", str(tmp_path / "demo.yaml"), "--url", base, "--token", submit, "--out", str(tmp_path / "res")],
        obj={},
    )
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    job_id = lines[0].split()[1]
    assert lines[0].endswith(f"{base}/v1/jobs/{job_id}") and "queued" in lines[0]
    assert any("running · describing" in ln for ln in lines), lines  # the phases, as they came
    assert any(ln.split("] ", 1)[-1].startswith("done") for ln in lines)
    for name in ("report.html", "explanation.json", "images.parquet", "metrics.json"):
        assert f"Wrote {tmp_path / 'res' / name}" in r.output and (tmp_path / "res" / name).stat().st_size > 100
    assert "Browse all" in (tmp_path / "res" / "report.html").read_text()
    # the per-image table comes too (a seventeenth user's fetched copy could not be exported), without server paths
    import pandas as pd

    table = pd.read_parquet(tmp_path / "res" / "images.parquet")
    fetched = json.loads((tmp_path / "res" / "explanation.json").read_text())
    assert table["image"].tolist() == [str(i) for i in fetched["images"]]
    assert not any(isinstance(p, str) and (p.startswith("/") or str(tmp) in p) for p in table["path"])
    r = CliRunner().invoke(cli, ["export", "spotlight", str(tmp_path / "res")], obj={})
    assert r.exit_code == 1 and "--without-images" in r.output, r.output  # the images are the server's
    r = CliRunner().invoke(cli, ["export", "spotlight", str(tmp_path / "res"), "--without-images"], obj={})
    assert r.exit_code == 0, r.output
    assert len(pd.read_parquet(tmp_path / "res" / "spotlight.parquet")) == len(table)
    # the run's findings follow its report's link (a twenty-first user's submit printed none)
    listed = [s for s in Client(base, read).confirmed(job_id) if s["adds_failure"]]
    said = "\n".join(lines)
    first = listed[0] if listed else {}
    by = "(by the given Γ)" if first.get("region") == "relevance" else "(by the encoder)"  # as the record says
    assert first.get("region") in ("relevance", "encoder"), first
    holds = f"holds for {len(first.get('holds_for', ()))} of all the images {by}; on the {first.get('n_in')} of"
    # its size, then its test (trial 36), each count said of what (trial 37)
    assert listed and f'    "{first["text"]}": {holds} them held out, error rate' in said, said
    assert "confirmed on held-out images, strongest first:" in said
    report_url = next(ln.split(": ", 1)[1] for ln in lines if ln.startswith("report of demo"))
    assert report_url.startswith(f"{base}/v1/runs/")
    page = httpx.get(report_url, headers={"Authorization": f"Bearer {read}"})
    assert page.status_code == 200 and "Browse all" in page.text
    c = Client(base, read)
    job = c.job(job_id)
    assert job["status"] == job["phase"] == "done" and job_id != demo_job[0]
    assert c.explanation(job_id)["sentence_set"] and c.metrics(job_id)["metrics"]
    # a group's images through the client (a fourteenth user browsed them with raw HTTP and a token)
    rows = c.group_images(job_id, 0, sort="-confidence")
    first = c.group(job_id, 0)
    assert len(rows) == first["n"] == len({r["image"] for r in rows}) > 0 and rows[0]["thumbnail"].startswith("/v1/")
    assert [r["confidence"] for r in rows] == sorted((r["confidence"] for r in rows), reverse=True)
    # a job that fails (CLIP weights not cached, offline) ends the wait with its reason, whose advice names the
    # entry's `encoder:` key, not the CLI's --encoder
    from PIL import Image

    (tmp / "root" / "mini").mkdir()
    for i in range(4):
        Image.new("RGB", (16, 16), (60 * i, 0, 0)).save(tmp / "root" / "mini" / f"{i}.png")
    (tmp / "root" / "mini" / "p.csv").write_text(
        # (confidences that differ: all equal, the preflight refuses the empty split before the encoder is loaded)
        "path,label,prob_a,prob_b\n" + "".join(f"{i}.png,0,{0.6 + 0.1 * i:.1f},{0.4 - 0.1 * i:.1f}\n" for i in range(4))
    )
    entry = {
        "name": "mini",
        "images": "mini",
        "predictions": "mini/p.csv",
        "encoder": "open_clip:ViT-B-32@laion2b_s34b_b79k",
    }
    with pytest.raises(JobFailed, match="failed") as failed:
        Client(base, submit).run(entry, poll=0.2, timeout=300)
    error = failed.value.job["error"]
    assert "encoder: 'open_clip:ViT-B-32@" in error and "--encoder" not in error, error
