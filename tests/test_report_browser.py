"""The demo's HTML report in a real headless Chromium: no console errors, images and charts render.

Needs Debian's chromium and chromium-driver (`.ci/run` installs them). Outside CI
the test is skipped when they are missing; in CI (CI=true) it fails instead. The
screenshot goes to $LBEE_ARTIFACTS_DIR (default: artifacts/ in the repository).
"""

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
# Flags that work on these machines (no sandbox as root, no GPU, no network chatter).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,2400"]


def _browser(tmp_path):
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        if os.environ.get("CI"):
            pytest.fail("chromium and chromedriver are required in CI (apt-get install chromium chromium-driver)")
        pytest.skip("chromium / chromedriver not installed")
    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager look for drivers online
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in FLAGS + [f"--user-data-dir={tmp_path / 'profile'}"]:
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


def test_demo_report_renders_in_chromium(demo_run, tmp_path):
    out, _ = demo_run
    page = out / "report.html"
    driver = _browser(tmp_path)
    try:
        driver.get(page.resolve().as_uri())
        state = driver.execute_script("""
            return {ready: document.readyState,
                    images: Array.from(document.images).map(i => [i.id, i.complete, i.naturalWidth]),
                    groups: document.querySelectorAll('.cluster').length,
                    table1: document.querySelectorAll('#table1 tr').length,
                    title: document.title};""")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        artifacts = Path(os.environ.get("LBEE_ARTIFACTS_DIR", Path(__file__).resolve().parents[1] / "artifacts"))
        artifacts.mkdir(parents=True, exist_ok=True)
        shot = artifacts / "demo_report.png"
        driver.save_screenshot(str(shot))
    finally:
        driver.quit()
    assert state["ready"] == "complete" and "SpotCheck world 0" in state["title"]
    assert errors == [], errors
    ids = [i for i, _, _ in state["images"]]
    assert "metric-chart" in ids and "plane-chart" in ids
    broken = [img for img in state["images"] if not (img[1] and img[2] > 0)]
    assert broken == [] and len(state["images"]) > 20
    assert state["groups"] >= 2 and state["table1"] > 5
    assert shot.stat().st_size > 50_000
    print(f"screenshot: {shot}")
