"""The SpotCheck paper's protocol.

Uniform splits, official blindspots, positives only, 10 hypotheses, the description score.
"""

import json

import numpy as np
import pytest

from lbee.bench import MAX_HYPOTHESES, description_score, positive_rows, slicer_hypotheses, subset_inputs
from lbee.spotcheck import Blindspot, DatasetDefinition, sample_blindspots, sample_dataset, spotcheck_sentences
from lbee.spotcheck._generation import _label, combinations, generate_uniform_split


def _dataset():
    return DatasetDefinition(
        ["background", "square", "circle"],
        [
            ("square", "presence"),
            ("circle", "presence"),
            ("circle", "color"),
            ("background", "color"),
            ("background", "texture"),
            ("square", "color"),
        ],
    )


def test_official_blindspots_pin_square_present():
    rng = np.random.default_rng(4)
    for _ in range(300):
        d = sample_dataset(rng)
        for b in sample_blindspots(rng, d):
            assert b.as_dict()[("square", "presence")] == "true"
            assert 5 <= len(b.triplets) <= 7


def test_only_positive_labels_are_flipped():
    bs = [
        Blindspot(
            [
                ("square", "presence", "true"),
                ("circle", "presence", "true"),
                ("circle", "color", "orange"),
                ("background", "color", "grey"),
                ("background", "texture", "noise"),
            ]
        )
    ]
    inside = {
        ("square", "presence"): "true",
        ("circle", "presence"): "true",
        ("circle", "color"): "orange",
        ("background", "color"): "grey",
        ("background", "texture"): "noise",
    }
    assert _label(inside, bs, mislabel=True) == 0 and _label(inside, bs, mislabel=False) == 1
    negative = {**inside, ("square", "presence"): "false"}
    assert _label(negative, bs, mislabel=True) == 0  # never flipped to 1
    outside = {**inside, ("circle", "color"): "blue"}
    assert _label(outside, bs, mislabel=True) == 1


def test_uniform_split_has_every_combination_equally_often():
    d = _dataset()
    bs = [
        Blindspot(
            [
                ("square", "presence", "true"),
                ("circle", "presence", "true"),
                ("circle", "color", "orange"),
                ("background", "color", "grey"),
                ("background", "texture", "noise"),
            ]
        )
    ]
    combos = combinations(d)
    assert len(combos) == 2**6
    rng = np.random.default_rng(0)
    imgs, attrs, labels = generate_uniform_split(d, bs, 3, rng, 32, mislabel=False)
    assert imgs.shape == (3 * 64, 32, 32, 3)
    keys = [tuple(a[k] for k in d.rollable) for a in attrs]
    _, counts = np.unique(keys, axis=0, return_counts=True)
    assert len(counts) == 64 and np.all(counts == 3)
    inside = np.array([bs[0].contains(a) for a in attrs])
    assert inside.sum() == 3 * 2 ** (6 - 5)  # 2^-5 of the split: no enrichment
    # the train-only enrichment adds images inside the blindspots, labelled 0
    imgs, attrs, labels = generate_uniform_split(d, bs, 1, rng, 32, mislabel=True, n_enrich=10)
    inside = np.array([bs[0].contains(a) for a in attrs])
    assert len(attrs) == 74 and inside.sum() == 12 and np.all(labels[inside] == 0)


class _Exp:
    def __init__(self, sentences):
        self.sentences = sentences


def _world():
    """40 positive images; blindspot = rows 0..9 with circle orange + grey background (+ square present)."""
    conditions = [c for _, c, _ in spotcheck_sentences()]
    texts = [s for s, _, _ in spotcheck_sentences()]
    idx = {t: i for i, t in enumerate(texts)}
    n = 40
    rel = np.zeros((n, len(conditions)), bool)
    rel[:, idx["An image with a square"]] = True
    rel[:30, idx["An image with some text"]] = True  # true of 75 % of all images
    rel[:10, idx["An image with an orange circle"]] = True
    rel[:10, idx["An image on a grey background"]] = True
    rel[10:12, idx["An image on a grey background"]] = True  # specific: 2 / 30 outside
    bs = Blindspot(
        [
            ("square", "presence", "true"),
            ("circle", "presence", "true"),
            ("circle", "color", "orange"),
            ("background", "color", "grey"),
        ]
    )
    memb = np.zeros((n, 1), bool)
    memb[:10, 0] = True
    return rel, conditions, idx, bs, memb


def test_description_score_rewards_naming_the_conditions():
    rel, conditions, idx, bs, memb = _world()
    hyps = [np.arange(10)]
    good = [idx["An image with an orange circle"], idx["An image on a grey background"]]
    score, details = description_score(memb, hyps, lambda i: good, rel, conditions, [bs])
    # orange circle names circle presence and colour; grey names the background: 3 of 3 non-class conditions
    assert score == pytest.approx(1.0) and details[0]["recall"] == 1.0
    half = [idx["An image with an orange circle"]]
    assert description_score(memb, hyps, lambda i: half, rel, conditions, [bs])[0] == pytest.approx(2 / 3)
    # the variant beside it: with K = 3 slots, one true sentence of one returned counts a third
    score, details = description_score(memb, hyps, lambda i: half, rel, conditions, [bs], slots=3)
    assert details[0]["truthfulness"] == pytest.approx(1 / 3) and score == pytest.approx(2 / 9)
    # three sentences returned: the variant is the score
    three = [*good, idx["An image with a blue circle"]]
    assert description_score(memb, hyps, lambda i: three, rel, conditions, [bs], slots=3)[0] == pytest.approx(
        description_score(memb, hyps, lambda i: three, rel, conditions, [bs])[0]
    )


def test_description_score_gives_nothing_for_generic_or_false_sentences():
    rel, conditions, idx, bs, memb = _world()
    hyps = [np.arange(10)]
    # "some text" is true of the blindspot but of 20/30 outside it; "a square" is the class label
    generic = [idx["An image with some text"], idx["An image with a square"]]
    assert description_score(memb, hyps, lambda i: generic, rel, conditions, [bs])[0] == 0.0
    # a false sentence halves the credit of a true one
    mixed = [idx["An image with an orange circle"], idx["An image with a blue circle"]]
    score, details = description_score(memb, hyps, lambda i: mixed, rel, conditions, [bs])
    assert details[0]["truthfulness"] == 0.5 and score == pytest.approx(2 / 3 * 0.5)
    # an uncovered blindspot scores 0 whatever the sentences
    assert description_score(memb, [np.arange(20, 30)], lambda i: mixed, rel, conditions, [bs])[0] == 0.0


def test_positive_rows_and_subset_keep_rows_aligned():
    from lbee.run.inputs import RunInputs, Scores
    from lbee.scoring.confidence import ModelScores

    class EC:
        attributes = {"test": [{("square", "presence"): v} for v in ("true", "false", "true", "false", "true")]}

        def true_labels(self, split):
            return np.array([a[("square", "presence")] == "true" for a in self.attributes[split]], dtype=np.int64)

    rows = positive_rows(EC())
    assert rows.tolist() == [0, 2, 4]
    emb = np.arange(10.0).reshape(5, 2)
    inputs = RunInputs(
        emb,
        np.zeros((3, 2)),
        ["a", "b", "c"],
        [f"t{i}" for i in range(5)],
        None,
        list(range(5)),
        np.array([1, 0, 1, 0, 1]),
        np.eye(5, 3, dtype=bool),
        "gt",
        None,
        {},
        "spotcheck",
    )
    conf = np.linspace(0, 1, 5)
    scores = Scores(conf, conf * 2, "φ", "ω", ModelScores(conf, conf * 2))
    si, ss = subset_inputs(inputs, scores, rows)
    assert si.image_ids == ["t0", "t2", "t4"] and si.thumbnails == [0, 2, 4]
    assert np.array_equal(si.embeddings, emb[rows]) and np.array_equal(si.relevance, inputs.relevance[rows])
    assert np.array_equal(ss.confidence, conf[rows]) and np.array_equal(ss.model_scores.performance, conf[rows] * 2)


def test_paper_protocol_slicers_see_positives_and_return_at_most_ten():
    rng = np.random.default_rng(0)
    n = 400
    y = np.ones(n, np.int64)

    class EC:
        def true_labels(self, split):
            out = np.zeros(2 * n, np.int64)
            out[::2] = 1
            return out

    rows = np.arange(0, 2 * n, 2)
    centres = rng.normal(0, 6, (20, 8))
    g = rng.integers(0, 20, n)
    emb = centres[g] + rng.normal(0, 0.5, (n, 8))
    p1 = np.where(g < 2, 0.05, 0.97)
    probs = np.column_stack([1 - p1, p1])
    features = np.eye(20)[g] * 5 + rng.normal(0, 0.1, (n, 20))  # the classifier's own representation
    out = slicer_hypotheses(EC(), emb, probs, features, rows=rows, protocol="paper", planespot_reducers=("pca",))
    assert set(out) == {"domino", "domino-model", "planespot-pca"}
    for name, (groups, _) in out.items():
        assert 1 <= len(groups) <= MAX_HYPOTHESES, name
        assert all(g_.max() < n for g_ in groups)
    # "domino-model" (SpotCheck Table 16) clusters the features: its top slice is the planted failure
    top = out["domino-model"][0][0]
    assert (g[top] < 2).mean() >= 0.8
    assert y.sum() == n
    with pytest.raises(ValueError, match="protocol"):
        slicer_hypotheses(EC(), emb, probs, emb, rows=rows, protocol="nope")


def test_bench_records_a_failing_ec_and_goes_on(tmp_path, monkeypatch):
    import lbee.spotcheck
    from lbee import bench
    from lbee.spotcheck import _ec

    class FakeEC:
        seed = 1001
        blindspots = [None]
        images = {"test": np.zeros((4, 2, 2, 3))}
        verification = {"attempts": [{"seed": 1000, "blindspots": ["x"], "reason": "model failed verification"}]}

        def describe_blindspots(self):
            return ["square present, circle orange"]

    def fake_make_ec(seed, **kwargs):
        assert kwargs["sampling"] == "uniform" and kwargs["per_combination"] == (2, 2, 2)
        assert kwargs["device"] == "cpu"  # where the classifier trains reaches make_ec
        if seed == 0:
            raise _ec.ECGenerationError("No EC passed", [{"seed": 0, "blindspots": [], "reason": "too hard"}])
        return FakeEC()

    def fake_analyze(ec, encoder, **kwargs):
        assert kwargs["protocol"] == "paper"
        raise ValueError("The easy split is empty")

    monkeypatch.setattr(lbee.spotcheck, "make_ec", fake_make_ec)
    monkeypatch.setattr(bench.analysis, "analyze_ec", fake_analyze)
    records = bench.run_benchmark(2, tmp_path, encoder=None, per_combination=(2, 2, 2))
    assert [r["seed"] for r in records] == [0, 1]
    assert "ECGenerationError" in records[0]["failed"] and records[0]["attempts"][0]["reason"] == "too hard"
    assert "easy split is empty" in records[1]["failed"] and len(records[1]["attempts"]) == 1
    rows = {r["metric"]: r for r in bench.summarize(records)}
    assert rows["ECs failed"]["mean"] == 2 and rows["ECs regenerated"]["mean"] == 2
    assert rows["rejected candidates"]["mean"] == 2
    md = bench.write_tables(bench.summarize(records), tmp_path, bench.failure_notes(records))
    assert "too hard" in md and "easy split is empty" in md
    # the failed records are on disk: a rerun resumes without recomputing them
    monkeypatch.setattr(lbee.spotcheck, "make_ec", lambda *a, **k: pytest.fail("recomputed"))
    assert len(bench.run_benchmark(2, tmp_path, encoder=None, per_combination=(2, 2, 2))) == 2
    with pytest.raises(ValueError, match="another configuration"):
        bench.run_benchmark(2, tmp_path, encoder=None, per_combination=(3, 2, 2))
    # a record with the right configuration but missing its results (tampered) is recomputed, not tabulated
    good = (tmp_path / "ecs" / "ec_0001.json").read_text()
    (tmp_path / "ecs" / "ec_0001.json").write_text(json.dumps({"seed": 1, "config": records[1]["config"]}))
    monkeypatch.setattr(lbee.spotcheck, "make_ec", fake_make_ec)
    redone = bench.run_benchmark(2, tmp_path, encoder=None, per_combination=(2, 2, 2))
    assert "easy split is empty" in redone[1]["failed"]
    (tmp_path / "ecs" / "ec_0001.json").write_text(good)
    # the device is recorded but is not part of the configuration: a CPU run resumes a GPU bench's records
    assert records[1]["device"] == "cpu"
    # the peer slicers' version matters only to benches that run them
    assert "slicers_version" in bench.bench_config() and "slicers_version" not in bench.bench_config(with_slicers=False)
    assert len(bench.run_benchmark(2, tmp_path, encoder=None, per_combination=(2, 2, 2), device="cuda")) == 2


def test_paper_protocol_end_to_end_on_a_tiny_ec():
    """analyze_ec(protocol='paper') on a small uniform EC: positives only, φ = log P(true class), ≤ 10
    hypotheses, and the HTML report built from it shows exactly the analysed images."""
    from lbee.bench import analyze_ec
    from lbee.encoders import create_encoder
    from lbee.reports.html import render_report, spotcheck_report_run
    from lbee.spotcheck import make_ec

    ec = make_ec(
        3,
        sampling="uniform",
        per_combination=(6, 2, 4),
        n_rollable=6,
        epochs=2,
        min_outside=0.0,
        max_inside=1.0,
        min_neighbour=0.0,
    )
    assert ec.verification["sampling"] == "uniform"
    analysis = analyze_ec(ec, create_encoder("spotcheck"), protocol="paper")
    positives = np.flatnonzero(ec.true_labels("test") == 1)
    assert np.array_equal(analysis.rows, positives)
    phi = analysis.result.confidence
    assert phi.shape == (positives.size,) and np.all(phi <= 0)  # log-probabilities
    exp = next(iter(analysis.result.explanations.values()))
    hard = np.concatenate([c.indices for c in exp.hard_clusters])
    easy = np.concatenate([c.indices for c in exp.easy_clusters])
    assert np.array_equal(np.sort(hard), np.flatnonzero(phi < np.log(0.5)))  # the split is by correctness
    assert np.array_equal(np.sort(easy), np.flatnonzero(phi >= np.log(0.5)))
    assert analysis.result.extra["confidence"] == "log-probability of the true class"
    assert 1 <= len(analysis.hypotheses) <= MAX_HYPOTHESES
    assert all(h.max() < positives.size for h in analysis.hypotheses)
    run = spotcheck_report_run(ec, analysis, dataset="tiny")
    assert len(run.thumbnail_sources) == positives.size and run.labels.tolist() == [1] * positives.size
    memb = ec.membership("test")[positives]
    for (_, idx), j in zip(run.blindspots, range(memb.shape[1])):
        assert np.array_equal(idx, np.flatnonzero(memb[:, j]))
    html = render_report(run)
    assert "log-probability of the true class" in html and "paper" in html


_FAILED = {"accuracy_outside": 0.5, "accuracy_inside": [0.0], "worst_neighbour": None}


def test_worlds_are_kept_and_reused_by_another_bench(tmp_path, monkeypatch):
    """--worlds: a second bench (another --out) analyses the very EC the first made, without generating it;
    other generation settings, or a damaged folder, generate it again."""
    import torch

    import lbee.spotcheck
    from lbee import bench

    seen = []

    class Summary:
        def summary(self):
            return {"scores": {}, "failure_analysis": []}

    def fake_analyze(ec, encoder, **kwargs):
        seen.append((ec.images["test"].copy(), {k: v.clone() for k, v in ec.model.state_dict().items()}))
        return Summary()

    monkeypatch.setattr(bench.analysis, "analyze_ec", fake_analyze)
    kwargs = dict(
        encoder=None,
        worlds=tmp_path / "worlds",
        per_combination=(2, 2, 2),
        epochs=1,
        min_outside=0.0,
        max_inside=1.0,
        min_neighbour=0.0,
        with_slicers=False,
    )
    bench.run_benchmark(1, tmp_path / "a", **kwargs)
    assert (tmp_path / "worlds" / "ec_0000" / "model.pt").is_file()
    made = lbee.spotcheck.make_ec
    monkeypatch.setattr(lbee.spotcheck, "make_ec", lambda *a, **k: pytest.fail("a kept world was generated again"))
    bench.run_benchmark(1, tmp_path / "b", **kwargs)
    (img_a, w_a), (img_b, w_b) = seen
    assert np.array_equal(img_a, img_b) and all(torch.equal(w_a[k], w_b[k]) for k in w_a)
    calls, logs = [], []
    monkeypatch.setattr(lbee.spotcheck, "make_ec", lambda *a, **k: calls.append(k) or made(*a, **k))
    bench.run_benchmark(1, tmp_path / "c", **{**kwargs, "epochs": 2}, log=logs.append)
    assert len(calls) == 1 and any("other settings" in m for m in logs)
    (tmp_path / "worlds" / "ec_0000" / "ec.json").write_text("{")  # the folder now holds the epochs=2 world
    bench.run_benchmark(1, tmp_path / "d", **{**kwargs, "epochs": 2}, log=logs.append)
    assert len(calls) == 2 and any("cannot be read" in m for m in logs)
    # a kept world whose classifier fails today's blindspot gate (a check added since it was kept) is made again
    bench.run_benchmark(1, tmp_path / "e", **{**kwargs, "epochs": 2}, log=logs.append)
    assert len(calls) == 2  # kept, and it passes the gate
    monkeypatch.setattr(lbee.spotcheck, "verify_blindspots", lambda ec, **gate: {"passed": False, **_FAILED})
    bench.run_benchmark(1, tmp_path / "f", **{**kwargs, "epochs": 2}, log=logs.append)
    assert len(calls) == 3 and any("fails the blindspot gate (accuracy outside 0.500" in m for m in logs)
