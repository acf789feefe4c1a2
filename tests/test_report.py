"""Batch reports: the config file, the HTML page, failures that do not stop the batch."""

import html as html_lib
import json
import re
import textwrap

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from PIL import Image

from lbee.cli import cli
from lbee.reports.batch import run_report
from lbee.reports.config import ConfigError, load_report_config

NASTY = "in the dark <script>alert('x')</script> & friends"


def write(path, text):
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture(scope="module")
def image_dataset(tmp_path_factory):
    """24 coloured images; 8 dark ones are the model's failures, told apart by sentence 0 (NASTY)."""
    root = tmp_path_factory.mktemp("ds")
    (root / "imgs").mkdir()
    rng = np.random.default_rng(0)
    dark = np.zeros(24, bool)
    dark[rng.permutation(24)[:8]] = True
    names = []
    for i in range(24):
        name = f"img_{i:02d}<b>.png"  # markup in a file name must come out escaped
        level = 20 if dark[i] else 220
        arr = np.clip(level + rng.integers(-15, 15, size=(40, 40, 3)), 0, 255).astype(np.uint8)
        Image.fromarray(arr).save(root / "imgs" / name)
        names.append(name)
    sentences = [NASTY, "bright", "everything", "noise a", "noise b", "noise c"]
    (root / "sents.txt").write_text("\n".join(sentences) + "\n")
    # Embeddings in a 6-d joint space: dark images point to sentence 0, bright ones to 'bright'.
    X = np.where(dark[:, None], np.eye(6)[0], np.eye(6)[1]) + 0.05 * rng.normal(size=(24, 6))
    np.save(root / "img.npy", X)
    np.save(root / "sen.npy", np.eye(6))
    labels = np.zeros(24, int)
    pd.DataFrame({"path": names, "label": labels}).to_csv(root / "imgs" / "manifest.csv", index=False)
    probs = np.where(dark, 0.3, 0.95)
    pd.DataFrame({"path": names, "label": labels, "prob_cat": probs, "prob_dog": 1 - probs}).to_csv(
        root / "good.csv", index=False
    )
    bad = pd.DataFrame({"path": names, "label": np.where(dark, 7, 0), "prob_cat": probs, "prob_dog": 1 - probs})
    bad.to_csv(root / "bad_labels.csv", index=False)
    flat = pd.DataFrame({"path": names, "confidence": np.ones(24)})
    flat.to_csv(root / "flat.csv", index=False)
    rel = np.zeros((24, 6), bool)
    rel[dark, 0] = True
    rel[~dark, 1] = True
    rel[:, 2] = True
    np.save(root / "rel.npy", rel)
    return root, dark


def config_text(root):
    return f"""\
    output: {root}/out
    defaults:
      methods: [tops, pdiff]
      clusters: 2
      k: 1
    datasets:
      - name: street <i>scenes</i>
        images: {root}/imgs/manifest.csv
        image_embeddings: {root}/img.npy
        sentence_embeddings: {root}/sen.npy
        sentences: {root}/sents.txt
        relevance: {{ground_truth: {root}/rel.npy}}
        sweep: {{K: [1, 2], C: [1, 2], o: [0.2]}}
        models:
          - {{name: good, predictions: {root}/good.csv}}
          - {{name: labels beyond classes, predictions: {root}/bad_labels.csv}}
      - name: no hard images
        images: {root}/imgs/manifest.csv
        image_embeddings: {root}/img.npy
        sentence_embeddings: {root}/sen.npy
        sentences: {root}/sents.txt
        predictions: {root}/flat.csv
      - name: missing
        images: {root}/does_not_exist
        predictions: {root}/good.csv
      - name: typo
        images: {root}/imgs
        predictions: {root}/good.csv
        methds: [tops]
    """


def test_batch_report_goes_on_after_failures_and_lists_them(image_dataset, tmp_path):
    root, dark = image_dataset
    cfg = write(tmp_path / "report.yaml", config_text(root))
    # Entry problems are found before anything runs: listed together, exit 2, nothing written.
    for args in (["report", "--check", str(cfg)], ["report", str(cfg)]):
        r = CliRunner().invoke(cli, ["-q", "--cache-dir", str(tmp_path / "cache"), *args], obj={})
        assert r.exit_code == 2 and "3 problem(s)" in r.output, r.output
        assert "line 24: images path" in r.output and "line 29: unknown key 'methds'" in r.output
        assert "model 'labels beyond classes'" in r.output and "received [7]" in r.output
        assert not (root / "out").exists()
    r = CliRunner().invoke(
        cli, ["-q", "--cache-dir", str(tmp_path / "cache"), "report", "--keep-going", str(cfg)], obj={}
    )
    assert r.exit_code == 1, r.output
    assert "1 report(s)" in r.output and "4 failed" in r.output
    assert "column 'label'" in r.output and "received [7]" in r.output  # caught by the predictions reader
    assert "The hard split is empty" in r.output and "all confidences are equal" in r.output
    assert "line 24: images path" in r.output and "does_not_exist" in r.output
    assert "line 29: unknown key 'methds'" in r.output and "did you mean 'methods'" in r.output

    out = root / "out"
    folder = out / "street_i_scenes_i" / "good"
    html = (folder / "report.html").read_text()
    # Every user string is escaped: sentence, file names, dataset name.
    assert NASTY not in html and "dark &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; friends" in html
    assert "<b>.png" not in html and "&lt;b&gt;.png" in html
    assert "street &lt;i&gt;scenes&lt;/i&gt;" in html
    assert 'id="index-link" href="../../index.html"' in html  # back to the batch's index page
    assert 'id="metric-chart"' in html and 'id="toc"' in html
    # The dark images are the one hard group and TopS / PDiff name them with sentence 0, a failure sentence.
    metrics = pd.read_csv(folder / "metrics.csv")
    assert set(metrics["method"]) == {"tops", "pdiff"} and (metrics["TPR"] == 1.0).all()
    payload = json.loads((folder / "explanation.json").read_text())
    assert payload["dataset"] == "street <i>scenes</i>" and payload["model"] == "good"
    from lbee.run.pipeline import load_explanations

    hard = [c.indices.tolist() for c in load_explanations(folder / "explanation.json")[0]["tops"].hard_clusters]
    assert sorted(sum(hard, [])) == np.flatnonzero(dark).tolist()
    # Thumbnails only of shown images: 8 hard + 4 easy twin per group at most.
    n_thumbs = html.count('src="data:image/jpeg;base64,')
    assert 0 < n_thumbs <= 12 * len(hard) * 2
    # The sweep: 2 K + 2 C + 1 o values x 2 methods, drawn on the page.
    sweep = pd.read_csv(folder / "sweep.csv")
    assert len(sweep) == 10 and 'id="sweep-chart"' in html
    index = (out / "index.html").read_text()
    assert 'href="street_i_scenes_i/good/report.html"' in index
    for name in ("labels beyond classes", "no hard images", "missing", "typo"):
        assert name in index
    # what fails comes first, per run (trial 25 opened every report to find it): this small run was not tested
    findings = index[index.index('<section id="findings">') : index.index('<section id="runs">')]
    assert "good" in findings and "nothing tested on held-out images" in findings and "under the 500" in findings
    # and the lead it found, not "its report lists leads" alone (trial 35): the dark group's first sentence
    lead = payload["sentences"][payload["methods"]["tops"]["hard_sentences"][0][0]]
    assert f"first lead:</span> {lead}" in html_lib.unescape(findings)


def test_thumbnails_are_generated_once(image_dataset, tmp_path):
    root, _ = image_dataset
    text = config_text(root).split("      - name: no hard images")[0].replace(f"{root}/out", str(tmp_path / "o"))
    cfg = write(tmp_path / "r.yaml", text)
    from lbee.reports.thumbnails import ThumbnailCache

    run_report(cfg, cache_dir=tmp_path / "cache", keep_going=True)  # one of its models has bad labels
    made = sorted(p.name for p in (tmp_path / "cache" / "thumbnails").rglob("*.jpg"))
    assert made
    thumbs = ThumbnailCache(tmp_path / "cache")
    for p in sorted((root / "imgs").glob("*.png")):
        thumbs.jpeg(p)
    assert thumbs.n_cached == len(made) and thumbs.n_generated == 24 - len(made)


def test_config_errors_name_key_and_line(tmp_path, image_dataset):
    root, _ = image_dataset
    bad_top = write(
        tmp_path / "a.yaml",
        """\
    datasets:
      - name: x
        spotcheck: {seed: 0}
    outptu: somewhere
    """,
    )
    with pytest.raises(ConfigError, match=r"line 4: unknown key 'outptu' in the top level \(did you mean 'output'"):
        load_report_config(bad_top)
    bad_default = write(
        tmp_path / "b.yaml",
        """\
    defaults:
      clusters: zero
    datasets:
      - {name: x, spotcheck: {seed: 0}}
    """,
    )
    with pytest.raises(
        ConfigError, match=r"line 2: defaults key 'clusters' is 'zero'; expected an integer in \[1, 1000\]"
    ):
        load_report_config(bad_default)
    entries = write(
        tmp_path / "c.yaml",
        f"""\
    datasets:
      - name: a
        spotcheck: {{seed: 0}}
        slicers: [ward, nope]
      - name: b
        images: {root}/imgs
      - name: a
        spotcheck: {{seed: 1}}
      - name: c
        images: {root}/imgs
        predictions: {root}/good.csv
        relevance: ground_truth
      - name: d
        images: {root}/imgs
        predictions: {root}/good.csv
        sweep: true
    """,
    )
    cfg = load_report_config(entries)
    errors = [d.error for d in cfg.datasets]
    assert "line 4: datasets[0] key 'slicers'" in errors[0] and "domino, planespot" in errors[0]
    assert "line 5" in errors[1] and "needs the model's outputs" in errors[1]
    assert "used twice" in errors[2]
    assert "line 12" in errors[3] and "only known for SpotCheck" in errors[3]
    assert "line 16" in errors[4] and "needs 'relevance'" in errors[4]
    r = CliRunner().invoke(cli, ["report", str(bad_top)], obj={})
    assert r.exit_code == 2 and "outptu" in r.output


def test_report_of_a_large_dataset_stays_small(tmp_path, monkeypatch):
    """20,000 images: only shown images get thumbnails (the strips, and the group browsers' up to
    BROWSE_MAX_INLINE); the page size does not grow with n."""
    import re

    import lbee.reports.browse as browse

    monkeypatch.setattr(browse, "BROWSE_MAX_INLINE", 100)
    monkeypatch.setattr(browse, "BROWSE_OTHER_INLINE", 30)
    from lbee import explain_methods
    from lbee.reports.html import ReportRun, render_report
    from lbee.reports.thumbnails import ThumbnailCache

    rng = np.random.default_rng(0)
    n, d, N = 20_000, 16, 40
    X = rng.normal(size=(n, d))
    S = rng.normal(size=(N, d))
    phi = rng.normal(size=n)
    exps = explain_methods(X[:2000], S, methods=["tops", "pdiff"], confidence=phi[:2000], n_clusters=5)
    # Embed the 2,000-image explanation's indices into a 20,000-image run: the page must not care.
    sources = [np.full((32, 32, 3), i % 256, np.uint8) for i in range(n)]
    run = ReportRun(
        "big",
        "m",
        {"ward": exps},
        [f"s{i}" for i in range(N)],
        [f"im{i}" for i in range(n)],
        phi,
        (phi > 0).astype(float),
        thumbnail_sources=sources,
        relevance=rng.random((n, N)) < 0.1,
        embeddings=X,
    )
    thumbs = ThumbnailCache(tmp_path)
    html = render_report(run, thumbs=thumbs)
    assert thumbs.n_generated + thumbs.n_cached <= 5 * 12 + 100 + 30
    inlined = json.loads(re.search(r'id="browse-thumbs">(.*?)</script>', html).group(1))
    browser_rows = r'<script type="application/json" id="browse-g-ward-([^"]+)-rows">(.*?)</script>'
    browsers = {key: json.loads(m) for key, m in re.findall(browser_rows, html)}
    listed = [rows for key, rows in browsers.items() if key.isdigit()]
    n_hard = sum(len(c.indices) for c in exps["tops"].hard_clusters)
    # every image of a group listed, 100 with a picture; then 30 more of the images in no group
    assert len(inlined) == 130 and sum(map(len, listed)) == n_hard > 100
    from lbee.reports.other_images import OTHER_MAX_ROWS

    others = {key: rows for key, rows in browsers.items() if not key.isdigit()}
    split, _ = exps["tops"].split_and_group(n)
    assert set(others) == {"easy", "neutral"}  # this run holds out nothing and merges no group away
    assert [len(others[k]) for k in ("easy", "neutral")] == [
        min(OTHER_MAX_ROWS, int((split == k).sum())) for k in ("easy", "neutral")
    ]
    assert (
        max(r["phi"] for r in others["neutral"])
        <= min(  # the least confident listed first
            phi[(split == "neutral")][np.argsort(phi[split == "neutral"])[OTHER_MAX_ROWS:]], default=np.inf
        )
    )
    # The inlined Vega libraries are a fixed cost; the map draws at most 5,000 points whatever n is.
    from lbee.reports.vega import vega_bundle

    assert len(html.encode()) - len(vega_bundle().encode()) < 1_500_000
    assert "5000 of 20000 drawn" in html


def test_per_class_dataset_report(image_dataset, tmp_path):
    root, dark = image_dataset
    cfg = write(
        tmp_path / "pc.yaml",
        f"""\
    datasets:
      - name: per <class>
        images: {root}/imgs/manifest.csv
        image_embeddings: {root}/img.npy
        sentence_embeddings: {root}/sen.npy
        sentences: {root}/sents.txt
        relevance: {root}/rel.npy
        predictions: {root}/good.csv
        per_class: errors
        methods: [tops, pdiff]
        k: 1
    """,
    )
    res = run_report(cfg, output=tmp_path / "out", cache_dir=tmp_path / "cache")
    assert res.failures == [] and res.reports[0]["rows"][0]["slicer"] == "per class"
    folder = tmp_path / "out" / "per_class"
    metrics = pd.read_csv(folder / "per_class_metrics.csv")
    # 'cat' (every label) is analysed: hard = the dark images (false negatives); 'dog' is only ever a
    # false positive, so it has no easy image and is listed as skipped.
    assert metrics["class_name"].unique().tolist() == ["cat"] and (metrics["n_hard"] == dark.sum()).all()
    payload = json.loads((folder / "per_class.json").read_text())
    assert "never predicted correctly" in payload["skipped"]["1"]
    html = (folder / "report.html").read_text()
    assert "per &lt;class&gt;" in html and 'id="class-0"' in html and "dog: no easy image" in html
    assert html.count('src="data:image/jpeg;base64,') >= dark.sum()
    index = (tmp_path / "out" / "index.html").read_text()
    assert "per class" in index


def test_spotcheck_dataset_with_slicers_and_world_reuse(demo_run, tmp_path, monkeypatch):
    """A SpotCheck world in a report: exact Γ, extra slicers, PlaneSpot's plane; a rerun reuses the saved world."""
    import lbee.spotcheck
    from lbee.spotcheck import ExperimentalConfiguration

    out, _ = demo_run
    demo_ec = ExperimentalConfiguration.load(out / "ec")
    made = []

    def fake_make_ec(seed, **kwargs):  # the demo's world stands in for a fresh one (same seed)
        made.append(seed)
        return demo_ec

    monkeypatch.setattr(lbee.spotcheck, "make_ec", fake_make_ec)
    cfg = write(
        tmp_path / "sc.yaml",
        """\
    datasets:
      - name: world
        spotcheck: {seed: 0}
        methods: [tops, fpdiff]
        slicers: [ward, {planespot: {reducer: pca}}]
    """,
    )
    for rerun in (False, True):  # the rerun replaces the first report (overwrite)
        res = run_report(cfg, output=tmp_path / "out", cache_dir=tmp_path / "cache", overwrite=rerun)
        assert res.failures == []
    assert made == [0]  # generated once, then read back from out/world/ec
    rows = res.reports[0]["rows"]
    assert {(r["slicer"], r["method"]) for r in rows} == {
        ("ward", "tops"),
        ("ward", "fpdiff"),
        ("planespot", "tops"),
        ("planespot", "fpdiff"),
    }
    # same world, same analysis: the same hypotheses and the same TopS sentences (the demo also runs 'compose',
    # whose sentences lengthen its list, so metrics over the whole list differ)
    demo, rep = (
        json.loads(p.read_text()) for p in (out / "explanation.json", tmp_path / "out" / "world" / "explanation.json")
    )
    assert [c["indices"] for c in rep["clustering"]["hard"]] == [c["indices"] for c in demo["clustering"]["hard"]]
    texts = lambda d: [[d["sentences"][s] for s in ss] for ss in d["methods"]["tops"]["hard_sentences"]]  # noqa: E731
    assert texts(rep) == texts(demo)
    assert {r["method"] for r in rows if r["slicer"] == "ward" and np.isfinite(r["TPR"])} == {"tops", "fpdiff"}
    html = (tmp_path / "out" / "world" / "report.html").read_text()
    assert "PlaneSpot 2-D plane" in html and 'id="plane-chart"' in html
    assert "True blindspot 0" in html
    # a retained sentence that is not a failure sentence reads apart from one that is, without its colour
    # (an eighteenth user copied the table as text: '+' and '+')
    assert '<span class="fp">(+)</span> retained but not one' in html
    marks = re.findall(r'<span class="(tp|fp)">([^<]*)</span>', html.split("<tbody>", 1)[-1])
    assert {m for m in marks if m[0] == "tp"} == {("tp", "+")} and {m for m in marks if m[0] == "fp"} <= {("fp", "(+)")}
    assert (tmp_path / "out" / "world" / "slicer_planespot" / "explanation.json").exists()
    # a rerun whose only run fails keeps the report before it (sweep 32am AM1: the world linked into the stage was
    # committed alone over the run's folder, and its pages, metrics and tables were gone)
    before = sorted(p.name for p in (tmp_path / "out" / "world").iterdir())

    def broken(*args, **kwargs):
        raise lbee.spotcheck.CorruptECError("unreadable")

    monkeypatch.setattr(ExperimentalConfiguration, "load", classmethod(broken))
    monkeypatch.setattr(lbee.spotcheck, "make_ec", lambda seed, **kwargs: (_ for _ in ()).throw(RuntimeError("no")))
    res = run_report(cfg, output=tmp_path / "out", cache_dir=tmp_path / "cache", overwrite=True)
    assert res.failures and res.reports == []
    assert sorted(p.name for p in (tmp_path / "out" / "world").iterdir()) == before
    assert (tmp_path / "out" / "world" / "report.html").read_text() == html


def test_describe_html_writes_the_report_page(image_dataset, tmp_path):
    """`lbee describe --html`: the page of `lbee report` without YAML; navigation, per-group extras, escaping."""
    import re
    from pathlib import Path
    from urllib.parse import unquote, urlparse

    root, dark = image_dataset
    out = tmp_path / "run"
    args = [
        "-q",
        "--cache-dir",
        str(tmp_path / "cache"),
        "describe",
        str(root / "imgs" / "manifest.csv"),
        "--image-embeddings",
        str(root / "img.npy"),
        "--sentence-embeddings",
        str(root / "sen.npy"),
        "--sentences",
        str(root / "sents.txt"),
        "--predictions",
        str(root / "good.csv"),
        "--method",
        "tops",
        "--method",
        "pdiff",
        "--clusters",
        "2",
        "-k",
        "1",
        "--out",
        str(out),
    ]
    r = CliRunner().invoke(cli, args[:-2] + ["--html"], obj={})
    assert r.exit_code == 2 and "--out" in r.output  # --html needs a folder
    r = CliRunner().invoke(cli, args + ["--html"], obj={})
    assert r.exit_code == 0, r.output
    html = (out / "report.html").read_text()
    assert "report.html" in r.output
    # Escaped everywhere, the JSON chart specs included.
    assert NASTY not in html and "<b>.png" not in html and "&lt;b&gt;.png" in html
    assert "\\u003cb\\u003e.png" in html and "</script>alert" not in html
    # Self-contained: the Vega libraries inlined, nothing fetched.
    assert "window.vegaEmbed" in html and not re.search(r"<script[^>]+src=", html)
    assert 'id="toc"' in html and 'href="#groups-ward"' in html and 'id="plane-chart"' in html
    # No Γ given: said so in words, not an empty chart.
    assert 'id="no-relevance"' in html and 'id="metric-chart"' not in html
    # Groups anchored, listed in the TOC and the group table, sorted by error rate × size.
    anchors = re.findall(r'<div class="cluster" id="(g-ward-\d+)"', html)
    assert len(anchors) == 2 and all(f'href="#{a}"' in html for a in anchors)
    # Thumbnails link to the full image (an absolute file URI: the page can move), captions drop the shared folder.
    links = re.findall(r'<a href="([^"]+)" target="_blank"', html)
    assert links and all(h.startswith("file:///") for h in links)
    assert all(
        Path(unquote(urlparse(h.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")).path)).is_file()
        for h in links
    )
    assert "<figcaption" in html and "imgs/img_" not in re.findall(r"<figcaption[^>]*>([^<]*)<", html)[0]
    # Per group: label → prediction confusion and a CSV of the members.
    assert "label → prediction" in html
    csvs = re.findall(r'href="(data:text/csv;charset=utf-8,[^"]+)" download="([^"]+)"', html)
    assert len(csvs) == 2
    import html as html_mod
    import io

    tables = [pd.read_csv(io.StringIO(unquote(html_mod.unescape(uri).split(",", 1)[1]))) for uri, _ in csvs]
    members = sorted(name for t in tables for name in t["image"])
    assert list(tables[0].columns) == ["image", "phi", "omega", "label", "prediction"]
    dark_names = sorted(f"img_{i:02d}<b>.png" for i in np.flatnonzero(dark))
    assert set(dark_names) <= set(members)
    # The same explanation as without --html.
    payload = json.loads((out / "explanation.json").read_text())
    from lbee.run.pipeline import load_explanations

    tops = load_explanations(out / "explanation.json")[0]["tops"]
    assert payload["format"] == 4  # the rows digest (rows_sha256) since format 3, the content digest since 4
    assert sorted(sum((c.indices.tolist() for c in tops.hard_clusters), [])) == np.flatnonzero(dark).tolist()


def test_groups_sorted_by_risk_and_size(image_dataset):
    """Risk order puts the group with most errors first; 'size' the largest; the page shows φ's meaning."""
    from lbee import explain_methods
    from lbee.reports.html import ReportRun, cluster_views, short_names

    rng = np.random.default_rng(0)
    X = np.concatenate([np.tile(np.eye(4)[i], (m, 1)) for i, m in enumerate([10, 4, 12, 12])])
    X = X + 0.01 * rng.normal(size=X.shape)
    phi = np.r_[np.zeros(14), np.ones(24)]
    omega = np.r_[np.ones(8), np.zeros(2), np.zeros(4), np.ones(24)]  # group of 10: 2 errors; of 4: 4 errors
    exps = explain_methods(X, np.eye(4), methods=["tops"], confidence=phi, n_clusters=2, n_easy_clusters=2)
    run = ReportRun("d", "m", {"ward": exps}, list("abcd"), [f"x/y/{i}.png" for i in range(38)], phi, omega)
    risk = cluster_views(run, "ward", exps, None, None, 2, 2, extras=True)
    assert [v["size"] for v in risk] == [4, 10]
    run.group_order = "size"
    assert [v["size"] for v in cluster_views(run, "ward", exps, None, None, 2, 2, extras=True)] == [10, 4]
    assert short_names(["a/b/x.png", "a/b/c/y.png"]) == ["x.png", "c/y.png"]
    assert short_names(["x.png"]) == ["x.png"]


def _one_run_config(root, out, clusters):
    return (
        config_text(root)
        .split("      - name: no hard images")[0]
        .replace(f"{root}/out", str(out))
        .replace("clusters: 2", f"clusters: {clusters}")
        .replace("          - {name: labels beyond classes, predictions: " + f"{root}/bad_labels.csv}}\n", "")
    )


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_rerun_is_refused_without_overwrite_then_replaces_each_run_whole(image_dataset, tmp_path):
    """Issue 32: rerunning `lbee report` replaced the earlier pages in silence."""
    root, _ = image_dataset
    out = tmp_path / "rep"
    cfg = write(tmp_path / "r.yaml", _one_run_config(root, out, 2))
    base = ["-q", "--cache-dir", str(tmp_path / "cache"), "report", str(cfg)]
    assert CliRunner().invoke(cli, base, obj={}).exit_code == 0
    before = _files(out)
    (out / "street_i_scenes_i" / "slicer_old").mkdir()  # an older run's extra slicer: gone after the rerun
    r = CliRunner().invoke(cli, base, obj={})
    assert r.exit_code == 2 and f"'{out}' already holds a report (index.html, street_i_scenes_i/" in r.output
    assert "--overwrite" in r.output and _files(out) == before
    r = CliRunner().invoke(cli, [*base, "--overwrite"], obj={})
    assert r.exit_code == 0, r.output
    assert not (out / "street_i_scenes_i" / "slicer_old").exists() and (out / "index.html").exists()
    assert not [p for p in out.rglob("*") if ".lbee-" in p.name]


@pytest.mark.parametrize("step", ["staged", "swapping", "swapping:2"])
def test_report_killed_leaves_each_run_folder_whole(image_dataset, tmp_path, killed_lbee, step):
    """Issue 32: a SIGKILL left a new explanation.json (5 clusters) beside the old report.md (4 clusters). The
    report is staged whole: killed in its stage (its run's swap there), the old report is untouched; killed in its
    own swap (the second), the next run finishes the committed one."""
    root, _ = image_dataset
    out = tmp_path / "rep"
    cfg = write(tmp_path / "r.yaml", _one_run_config(root, out, 2))
    cfg3 = write(tmp_path / "r3.yaml", _one_run_config(root, out, 3))
    cache = ["-q", "--cache-dir", str(tmp_path / "cache")]
    assert CliRunner().invoke(cli, [*cache, "report", str(cfg)], obj={}).exit_code == 0
    run_dir = out / "street_i_scenes_i"
    old, old_index = _files(run_dir), (out / "index.html").read_bytes()
    killed_lbee([*cache, "report", str(cfg3), "--overwrite"], step)
    finished = step == "swapping:2"
    if not finished:  # killed with the new report unfinished in its stage: the old one untouched
        assert _files(run_dir) == old and (out / "index.html").read_bytes() == old_index
    else:  # killed between the moves: the next run finishes the committed one
        assert any(".rep.lbee-report-replaced-" in p.name for p in tmp_path.iterdir())
    r = CliRunner().invoke(cli, [*cache, "report", str(cfg3)], obj={})  # settles what the kill left, then refuses
    assert r.exit_code == 2 and "already holds a report" in r.output
    assert not [p for p in tmp_path.rglob("*") if ".lbee-" in p.name]
    clusters = json.loads((run_dir / "explanation.json").read_text())["params"]["n_clusters"]
    assert clusters == (3 if finished else 2)
    assert (_files(run_dir) == old) == (not finished)
    assert sorted(_files(run_dir)) == sorted(old)  # one whole run: every file of it, and no other
    assert 'href="street_i_scenes_i/report.html"' in (out / "index.html").read_text()


@pytest.mark.parametrize("how", ["own name", "through a symlink"])
def test_overwrite_never_deletes_a_dataset_input_in_its_run_folder(image_dataset, tmp_path, how):
    """Fourth sweep L1: `lbee report --overwrite` replaced a dataset's predictions named metrics.csv (and its
    sentences named report.md) in its own run folder, with no copy left; before --overwrite it called them a report."""
    root, _ = image_dataset
    run_dir = tmp_path / "data2"
    run_dir.mkdir()
    (run_dir / "metrics.csv").write_bytes((root / "good.csv").read_bytes())
    (run_dir / "report.md").write_bytes((root / "sents.txt").read_bytes())
    pred = run_dir / "metrics.csv"
    if how == "through a symlink":  # the config names a link elsewhere; replacing the run would leave it dangling
        pred = tmp_path / "preds.csv"
        pred.symlink_to(run_dir / "metrics.csv")
    cfg = write(
        tmp_path / "c2.yaml",
        f"""\
        output: .
        datasets:
          - name: data2
            images: {root}/imgs/manifest.csv
            image_embeddings: {root}/img.npy
            sentence_embeddings: {root}/sen.npy
            sentences: data2/report.md
            predictions: {pred}
            clusters: 2
            methods: [tops]
        """,
    )
    before = _files(run_dir)
    base = ["-q", "--cache-dir", str(tmp_path / "cache"), "report", str(cfg)]
    for extra in ([], ["--overwrite"]):
        r = CliRunner().invoke(cli, [*base, *extra], obj={})
        assert r.exit_code == 2, r.output
        assert (
            f"line 3: datasets[0]: the run folder '{run_dir}' holds this dataset's input '{pred}'; replacing the run "
            "would delete it, even with --overwrite" in " ".join(r.output.split())
        )
        assert "already holds a report" not in r.output
        assert _files(run_dir) == before and not (tmp_path / "index.html").exists()


def test_a_fetched_copy_of_a_served_run_is_one_runs_files(image_dataset, tmp_path):
    """The service serves images.parquet with each path as inside its data root (no server path), and a sweep's
    fetched copy was then refused by `lbee export spotlight` as "edited" (the explanation recorded the table with
    the server's paths). The explanation is served recording the table as served."""
    from types import SimpleNamespace

    from lbee.reports.stored_table import stored_images_table
    from lbee.service.served_files import parquet_bytes, served_explanation, served_images_table

    root, _ = image_dataset
    out = tmp_path / "run"
    args = ["-q", "--cache-dir", str(tmp_path / "cache"), "describe", str(root / "imgs" / "manifest.csv")]
    args += ["--image-embeddings", str(root / "img.npy"), "--sentence-embeddings", str(root / "sen.npy")]
    args += ["--sentences", str(root / "sents.txt"), "--predictions", str(root / "good.csv"), "--clusters", "2"]
    r = CliRunner().invoke(cli, [*args, "--out", str(out), "--html"], obj={})
    assert r.exit_code == 0, r.output
    stored = stored_images_table(out)
    assert all(str(p).startswith(str(root)) for p in stored["path"])  # absolute paths on this machine
    settings = SimpleNamespace(root=root)
    fetched = tmp_path / "fetched"
    fetched.mkdir()
    table = served_images_table(out, settings)
    (fetched / "images.parquet").write_bytes(parquet_bytes(table))
    assert [p for p in table["path"]] == [str(p)[len(str(root)) + 1 :] for p in stored["path"]]  # "imgs/..."
    (fetched / "explanation.json").write_bytes((out / "explanation.json").read_bytes())
    with pytest.raises(ValueError, match="edited or belongs to another run"):  # the explanation as it was stored
        stored_images_table(fetched)
    (fetched / "explanation.json").write_bytes(served_explanation(out / "explanation.json", settings))
    assert stored_images_table(fetched)["path"].tolist() == table["path"].tolist()
    from lbee.cli.evaluate import _image_paths

    payload = json.loads((fetched / "explanation.json").read_text())  # lbee evaluate reads it too (its paths relative:
    assert _image_paths(fetched, list(map(str, payload["images"])), payload["images_sha256"]) is None  # ids alone)
    r = CliRunner().invoke(cli, ["export", "spotlight", str(fetched)], obj={})
    n = len(table)  # the paths are the server root's: not found beside the copy, and nothing is written (trial 22)
    said = " ".join(r.output.split())
    assert r.exit_code == 1 and f"none of the {n} images' files is found" in said and "--images" in said, r.output
    assert not (fetched / "spotlight.parquet").exists()  # so the command with --images needs no --overwrite
    r = CliRunner().invoke(cli, ["export", "spotlight", str(fetched), "--images", str(root)], obj={})
    assert r.exit_code == 0 and "not found" not in r.output, r.output
    assert pd.read_parquet(fetched / "spotlight.parquet")["image"].notna().all()  # a twentieth user's were all None


def _two_run_config(root, out, clusters):
    """Two datasets of one model each (the same inputs), named a and b."""
    one = _one_run_config(root, out, clusters)
    head, entry = one.split("    datasets:\n")
    entry = entry.replace("street <i>scenes</i>", "a")
    return head + "    datasets:\n" + entry + entry.replace("- name: a", "- name: b")


def test_report_killed_between_two_datasets_leaves_the_old_report_whole(image_dataset, tmp_path, killed_lbee):
    """Sweep 32g L-3: `lbee report --overwrite` killed between two datasets left run a of the new config beside run
    b of the old, under the old index.html. The report is staged whole: a kill leaves the old one, every run of it.
    What its folders hold beyond the runs (a note, an earlier model's folder) is kept by the rerun."""
    root, _ = image_dataset
    out = tmp_path / "rep"
    cfg, cfg3 = (write(tmp_path / f"r{c}.yaml", _two_run_config(root, out, c)) for c in (2, 3))
    cache = ["-q", "--cache-dir", str(tmp_path / "cache")]
    assert CliRunner().invoke(cli, [*cache, "report", str(cfg)], obj={}).exit_code == 0
    (out / "a" / "notes.txt").write_text("mine")
    (out / "b" / "older_model").mkdir()
    (out / "b" / "older_model" / "report.md").write_text("an earlier config's model")
    old = _files(out)
    # the second run folder's own swap (inside the report's stage): run a is done there, b is half swapped
    killed_lbee([*cache, "report", str(cfg3), "--overwrite"], "swapping:2")
    assert _files(out) == old
    r = CliRunner().invoke(cli, [*cache, "report", str(cfg3), "--overwrite"], obj={})
    assert r.exit_code == 0, r.output
    assert not [p for p in tmp_path.rglob("*") if ".lbee-" in p.name]
    for name in ("a", "b"):  # both runs of the new config
        assert json.loads((out / name / "explanation.json").read_text())["params"]["n_clusters"] == 3
    assert (out / "a" / "notes.txt").read_text() == "mine"
    assert (out / "b" / "older_model" / "report.md").read_text() == "an earlier config's model"
    assert str(tmp_path / ".rep.lbee") not in r.output  # the folders as swapped in, never the stage's name


@pytest.mark.parametrize("step", ["swapping:3", "swapping:4"])
def test_report_killed_in_its_swap_never_leaves_an_index_over_another_reports_runs(
    image_dataset, tmp_path, killed_lbee, step
):
    """Sweep 32ae B1: `lbee report --overwrite` killed in its swap (folder by folder, the index last) left the old
    index.html over run a of the new config. Every old entry now goes aside (the index first) before any new one
    goes in (the index last): killed there, the folder holds no index until the next report finishes the swap."""
    root, _ = image_dataset
    out = tmp_path / "rep"
    cfg, cfg3 = (write(tmp_path / f"r{c}.yaml", _two_run_config(root, out, c)) for c in (2, 3))
    cache = ["-q", "--cache-dir", str(tmp_path / "cache")]
    assert CliRunner().invoke(cli, [*cache, "report", str(cfg)], obj={}).exit_code == 0
    # swapping:1 and :2 are the runs' own swaps in the report's stage; :3 the report's first folder (a), :4 b
    killed_lbee([*cache, "report", str(cfg3), "--overwrite"], step)
    if step == "swapping:4":  # a is in whole, b's first entry is
        assert json.loads((out / "a" / "explanation.json").read_text())["params"]["n_clusters"] == 3
    assert not (out / "index.html").exists()
    assert not (out / "b" / "report.md").exists()  # b: its old run aside, its new one not yet in; never both
    r = CliRunner().invoke(cli, [*cache, "report", str(cfg3)], obj={})  # finishes the committed swap, then refuses
    assert r.exit_code == 2 and "already holds a report" in r.output
    assert not [p for p in tmp_path.rglob("*") if ".lbee-" in p.name]
    for name in ("a", "b"):
        assert json.loads((out / name / "explanation.json").read_text())["params"]["n_clusters"] == 3
    assert 'href="b/report.html"' in (out / "index.html").read_text()


def test_a_report_replaces_only_what_it_writes_and_keeps_a_failed_run(image_dataset, tmp_path, monkeypatch):
    """Sweep 32h L-2, L-3: staged whole, a report replaced whole dataset folders with a snapshot taken at its start:
    a model that failed lost its previous run, and a file written into a dataset folder meanwhile was deleted.
    Only the run folders' run entries and the index are replaced now; a failed run keeps the previous one."""
    import lbee.reports.batch as batch

    root, _ = image_dataset
    out = tmp_path / "rep"
    cfg, cfg3 = (write(tmp_path / f"r{c}.yaml", _two_run_config(root, out, c)) for c in (2, 3))
    cache = ["-q", "--cache-dir", str(tmp_path / "cache")]
    assert CliRunner().invoke(cli, [*cache, "report", str(cfg)], obj={}).exit_code == 0
    old_b = _files(out / "b")
    real = batch._run_model

    def run_model(ds, model, inputs, out_dir, *args, **kwargs):
        (out / "a" / "written-meanwhile.txt").write_text("mine")  # by the user, while the report runs
        if ds.name == "b":
            raise OSError(28, "No space left on device")
        return real(ds, model, inputs, out_dir, *args, **kwargs)

    monkeypatch.setattr(batch, "_run_model", run_model)
    r = CliRunner().invoke(cli, [*cache, "report", str(cfg3), "--overwrite"], obj={})
    assert r.exit_code == 1 and "No space left on device" in r.output, r.output
    assert json.loads((out / "a" / "explanation.json").read_text())["params"]["n_clusters"] == 3
    assert _files(out / "b") == old_b  # its run failed: the previous one stays, whole
    assert (out / "a" / "written-meanwhile.txt").read_text() == "mine"
    assert not [p for p in tmp_path.rglob("*") if ".lbee-" in p.name]


@pytest.mark.parametrize("what", ["a file", "a link to a folder"])
def test_a_report_refuses_a_run_folder_that_is_not_a_real_folder(image_dataset, tmp_path, what):
    """Sweep 32h L-1, L-4: a file named like a dataset's folder was deleted by a report without --overwrite, and a
    run folder that was a link was written through it, outside the report's stage. Both are refused first."""
    root, _ = image_dataset
    out = tmp_path / "rep"
    out.mkdir()
    if what == "a file":
        (out / "a").write_text("my notes")
    else:
        (tmp_path / "elsewhere").mkdir()
        (out / "a").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    cfg = write(tmp_path / "r.yaml", _two_run_config(root, out, 2))
    r = CliRunner().invoke(cli, ["-q", "--cache-dir", str(tmp_path / "cache"), "report", str(cfg)], obj={})
    assert r.exit_code == 2 and f"'{out / 'a'}' is " in r.output and "lbee replaces only its own" in r.output
    assert not (out / "b").exists() and not (out / "index.html").exists()  # refused before any work
    if what == "a file":
        assert (out / "a").read_text() == "my notes"
    else:
        assert (out / "a").is_symlink() and not list((tmp_path / "elsewhere").iterdir())


def test_a_run_into_a_killed_reports_run_folder_settles_the_report_first(image_dataset, tmp_path, killed_lbee):
    """Sweep 32i L-1: a report killed in its own swap, then `describe --overwrite` into one of its run folders, then
    any later `lbee report`: the report's old commit was finished over the newer run (five of its files replaced).
    A run into a report's run folder settles the report's swap first; then it replaces the run whole."""
    root, _ = image_dataset
    out = tmp_path / "rep"
    cfg, cfg3 = (write(tmp_path / f"r{c}.yaml", _one_run_config(root, out, c)) for c in (2, 3))
    cache = ["-q", "--cache-dir", str(tmp_path / "cache")]
    assert CliRunner().invoke(cli, [*cache, "report", str(cfg)], obj={}).exit_code == 0
    killed_lbee([*cache, "report", str(cfg3), "--overwrite"], "swapping:2")  # in the report's own swap
    assert any(".rep.lbee-report-replaced-" in p.name for p in tmp_path.iterdir())
    run_dir = out / "street_i_scenes_i"
    args = [*cache, "describe", str(root / "imgs" / "manifest.csv"), "--image-embeddings", str(root / "img.npy")]
    args += ["--sentence-embeddings", str(root / "sen.npy"), "--sentences", str(root / "sents.txt"), "--predictions"]
    args += [str(root / "good.csv"), "--tau", "0.2", "--clusters", "4", "--out", str(run_dir), "--overwrite"]
    r = CliRunner().invoke(cli, args, obj={})
    assert r.exit_code == 0, r.output
    assert not [p for p in tmp_path.iterdir() if ".lbee-" in p.name]  # the report's swap was finished first
    described = _files(run_dir)
    assert json.loads(described["explanation.json"])["params"]["n_clusters"] == 4
    r = CliRunner().invoke(cli, [*cache, "report", str(cfg3)], obj={})  # refused: nothing of the report left to finish
    assert r.exit_code == 2 and _files(run_dir) == described


def test_a_report_whose_swap_fails_says_the_next_report_finishes_it(image_dataset, tmp_path, monkeypatch):
    """Sweep 32i U-2: a full disk during the report's swap said only "No space left on device", and the next
    report, even a refused one, put the new report in place in silence. The error says what happened and what
    comes next; the next report finishes the swap."""
    import lbee.io.staged_tree as tree

    root, _ = image_dataset
    out = tmp_path / "rep"
    cfg, cfg3 = (write(tmp_path / f"r{c}.yaml", _one_run_config(root, out, c)) for c in (2, 3))
    cache = ["-q", "--cache-dir", str(tmp_path / "cache")]
    assert CliRunner().invoke(cli, [*cache, "report", str(cfg)], obj={}).exit_code == 0
    real = tree.move_in

    def full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tree, "move_in", full)
    r = CliRunner().invoke(cli, [*cache, "report", str(cfg3), "--overwrite"], obj={})
    said = " ".join(r.output.split())
    assert r.exit_code == 1 and "putting it in place stopped part-way (No space left on device)" in said, said
    assert "The next `lbee report` into that folder finishes putting it in place, once some space is freed" in said
    assert "OSError" not in said and "--debug" not in said
    monkeypatch.setattr(tree, "move_in", real)
    for (
        p
    ) in tmp_path.iterdir():  # the failed writer ends (in this test it is this process): its leftovers, a gone pid's
        if ".rep.lbee-report-" in p.name:
            kind, owner = p.name.rsplit("-", 2)[0], p.name.rsplit("-", 1)[1]
            p.rename(p.with_name(f"{kind}-999999.0-{owner}"))
    r = CliRunner().invoke(cli, [*cache, "report", str(cfg3)], obj={})
    assert r.exit_code == 2  # refused, after finishing the committed report
    run_dir = out / "street_i_scenes_i"
    assert json.loads((run_dir / "explanation.json").read_text())["params"]["n_clusters"] == 3
    assert not [p for p in tmp_path.iterdir() if ".lbee-" in p.name]


def test_a_run_into_a_report_folder_puts_the_reports_old_index_aside_before_its_part(tmp_path, monkeypatch):
    """Sweep 32af B2: a report killed after its commit (its old index still in place), then a run into one of its
    run folders that finished that folder's part of the report and was killed before its own commit: the old
    index over the new report's run. The part is finished only once the report's old index is aside."""
    import lbee.io.staged_tree as tree
    from lbee.io.output_lock import OutputBusyError, lock_output, unlock_output
    from lbee.io.staged_tree import finish_part, staged_tree
    from lbee.run.outputs import RUN_ENTRIES

    out = tmp_path / "rep"
    for name, which in (("a", "old"), ("b", "old")):
        (out / name).mkdir(parents=True)
        (out / name / "explanation.json").write_text(which)
    (out / "index.html").write_text("old index")

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # as a SIGKILL right after the commit: nothing moved yet

    monkeypatch.setattr(tree, "_swap", killed)
    with pytest.raises(KeyboardInterrupt), staged_tree(out, [out / "a", out / "b"], replaces=RUN_ENTRIES) as stage:
        for name in ("a", "b"):
            (stage / name).mkdir()
            (stage / name / "explanation.json").write_text("new")
        (stage / "index.html").write_text("new index")
    monkeypatch.undo()
    held = lock_output(out / "a")  # a run into a: its commit settles the report's part there first
    try:
        busy = lock_output(out)  # a live report putting its index aside this moment: the run waits for nobody
        with pytest.raises(OutputBusyError, match="Run again in a moment"):
            finish_part(out, out / "a", held, RUN_ENTRIES)
        unlock_output(busy)
        assert (out / "index.html").read_text() == "old index" and (out / "a" / "explanation.json").read_text() == "old"
        finish_part(out, out / "a", held, RUN_ENTRIES)
    finally:
        unlock_output(held)
    assert (out / "a" / "explanation.json").read_text() == "new"
    assert not (out / "index.html").exists()  # aside: never the old index over the new report's run
    assert (out / "b" / "explanation.json").read_text() == "old"
    tree.recover_tree(out, RUN_ENTRIES)  # the next report finishes the rest
    assert (out / "index.html").read_text() == "new index"
    assert [(out / n / "explanation.json").read_text() for n in ("a", "b")] == ["new", "new"]
    assert not [p for p in tmp_path.iterdir() if ".lbee-" in p.name]


def test_a_report_whose_every_run_fails_leaves_the_previous_one_whole(image_dataset, tmp_path, monkeypatch):
    """Sweep 32af N1: a full disk failed every run of `lbee report --overwrite`, and the old index was still
    replaced by one listing 0 reports and 2 failures (the old runs in place, nothing linking to them)."""
    import lbee.reports.batch as batch

    root, _ = image_dataset
    out = tmp_path / "rep"
    cfg, cfg3 = (write(tmp_path / f"r{c}.yaml", _two_run_config(root, out, c)) for c in (2, 3))
    cache = ["-q", "--cache-dir", str(tmp_path / "cache")]
    assert CliRunner().invoke(cli, [*cache, "report", str(cfg)], obj={}).exit_code == 0
    old = _files(out)

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(batch, "_run_model", full)
    r = CliRunner().invoke(cli, [*cache, "report", str(cfg3), "--overwrite"], obj={})
    assert r.exit_code == 1 and "No space left on device" in r.output, r.output
    assert "No run succeeded, so the report already there (its index and every run) is left as it was" in r.output
    assert _files(out) == old
    assert not [p for p in tmp_path.rglob("*") if ".lbee-" in p.name]
    fresh = tmp_path / "fresh"  # no earlier report: the index lists the failures
    r = CliRunner().invoke(cli, [*cache, "report", str(cfg3), "--out", str(fresh)], obj={})
    assert r.exit_code == 1 and "0 report(s); index:" in r.output and (fresh / "index.html").is_file()


def test_a_run_into_a_busy_reports_folder_stops_and_keeps_nothing_half_done(image_dataset, tmp_path, monkeypatch):
    """Sweep 32ag B1: a run into a run folder of a report killed after its commit, while another process held the
    report folder's lock: the busy error was swallowed, the run committed and said "Wrote", and the next report
    put the killed report's older run over it. The run now stops with the error, and writes nothing."""
    import lbee.io.staged_tree as tree
    import lbee.run.outputs as outputs
    from lbee.io.output_lock import lock_output, unlock_output
    from lbee.io.staged_tree import staged_tree

    root, _ = image_dataset
    out = tmp_path / "rep"
    (out / "a").mkdir(parents=True)
    (out / "a" / "explanation.json").write_text("report A's run")
    (out / "index.html").write_text("report A's index")

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # report B, killed right after its commit

    monkeypatch.setattr(tree, "_swap", killed)
    with pytest.raises(KeyboardInterrupt), staged_tree(out, [out / "a"], replaces=outputs.RUN_ENTRIES) as stage:
        (stage / "a").mkdir()
        (stage / "a" / "explanation.json").write_text("report B's run")
        (stage / "index.html").write_text("report B's index")
    monkeypatch.undo()
    # as when B was killed after this run's check before its work: only its commit meets B's leftovers
    monkeypatch.setattr(outputs, "recover_tree", lambda *args, **kwargs: [])
    busy = lock_output(out)  # another process holds the report folder
    try:
        args = ["-q", "--cache-dir", str(tmp_path / "cache"), "describe", str(root / "imgs" / "manifest.csv")]
        args += ["--image-embeddings", str(root / "img.npy"), "--sentence-embeddings", str(root / "sen.npy")]
        args += ["--sentences", str(root / "sents.txt"), "--predictions", str(root / "good.csv"), "--clusters", "2"]
        r = CliRunner().invoke(cli, [*args, "--out", str(out / "a"), "--overwrite"], obj={})
    finally:
        unlock_output(busy)
    assert r.exit_code != 0 and "Run again in a moment" in " ".join(r.output.split()), r.output
    assert "Wrote" not in r.output
    assert (out / "a" / "explanation.json").read_text() == "report A's run"
    assert (out / "index.html").read_text() == "report A's index"
    monkeypatch.undo()
    tree.recover_tree(out, outputs.RUN_ENTRIES)  # the next report finishes B whole
    assert (out / "a" / "explanation.json").read_text() == "report B's run"
    assert (out / "index.html").read_text() == "report B's index"


def test_a_link_in_ones_own_leftover_stage_is_never_followed(tmp_path, monkeypatch):
    """Sweep 32ai N2 / N3: in a leftover report stage of one's own, a run folder that was a link was followed at the
    recovery (the files it led to moved into the run folder), and a mark could list the stage's own bookkeeping
    files as entries to move in."""
    import json as json_

    import lbee.io.staged_tree as tree
    from lbee.io.staging import _entry_names
    from lbee.run.outputs import RUN_ENTRIES

    out = tmp_path / "rep"
    (out / "a").mkdir(parents=True)
    (out / "a" / "explanation.json").write_text("old run")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "explanation.json").write_text("not lbee's")

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(tree, "_swap", killed)
    with pytest.raises(KeyboardInterrupt), tree.staged_tree(out, [out / "a"], replaces=RUN_ENTRIES) as stage:
        (stage / "a").mkdir()
        (stage / "a" / "explanation.json").write_text("new run")
    monkeypatch.undo()
    (stage / "a" / "explanation.json").unlink()
    (stage / "a").rmdir()
    (stage / "a").symlink_to(victim)  # the part swapped for a link
    tree.recover_tree(out, RUN_ENTRIES)
    assert (victim / "explanation.json").read_text() == "not lbee's"  # never moved out of where the link led
    assert (out / "a" / "explanation.json").read_text() == "old run"
    for own in (".lbee-complete.json", ".lbee-started"):
        assert not _entry_names({"new": [own], "old": []})
    assert _entry_names(json_.loads('{"new": ["report.md"], "old": []}'))


def test_a_report_folder_the_umask_leaves_open_is_refused_and_not_left(image_dataset, tmp_path):
    """Sweep 32aj B1: `lbee report` into a new output folder under umask 000 made it 0777 and never checked it;
    another user wrote into the report while it ran. It is made through the checked walk, as describe's is."""
    import os

    root, _ = image_dataset
    out = tmp_path / "rep"
    cfg = write(tmp_path / "r.yaml", _one_run_config(root, out, 2))
    (tmp_path / "cache").mkdir()  # made before: only the report's folder is new
    old = os.umask(0)
    try:
        r = CliRunner().invoke(cli, ["-q", "--cache-dir", str(tmp_path / "cache"), "report", str(cfg)], obj={})
    finally:
        os.umask(old)
    said = " ".join(r.output.split())
    assert r.exit_code != 0 and "is writable by every user (lbee made it just now" in said and "umask 000" in said, said
    assert not out.exists()
    assert (
        CliRunner().invoke(cli, ["-q", "--cache-dir", str(tmp_path / "cache"), "report", str(cfg)], obj={}).exit_code
        == 0
    )


def test_a_sentence_the_given_relevance_says_is_true_of_almost_none_of_its_group_is_said_not_to_describe_it():
    """Trial 32: FPDiff's first sentence "no air bubble, on a dark background" for a group of bubble images showed
    only a grey "true of 0 % of the group"."""
    import html as html_text

    from lbee import explain_methods
    from lbee.reports.html import ReportRun, render_report

    rng = np.random.default_rng(0)
    n, d, N = 300, 8, 12
    X, S, phi = rng.normal(size=(n, d)), rng.normal(size=(N, d)), rng.normal(size=n)
    exps = explain_methods(X, S, methods=["fpdiff"], confidence=phi, n_clusters=3)
    pages = {}
    names, ids, omega = [f"s{i}" for i in range(N)], [f"im{i}" for i in range(n)], (phi > 0).astype(float)
    for true_of_all in (False, True):
        run = ReportRun("d", "m", {"ward": exps}, names, ids, phi, omega, relevance=np.full((n, N), true_of_all))
        pages[true_of_all] = html_text.unescape(" ".join(render_report(run).split()))
    assert "true of 0% of the group: by Γ, it does not describe this group" in pages[False]
    assert "(by Γ, true of 0% of the group: it does not describe it)" in pages[False]  # the "What fails" row
    assert "true of 100% of the group" in pages[True] and "does not describe" not in pages[True]
