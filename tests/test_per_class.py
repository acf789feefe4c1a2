"""Per-class analysis: ImageNet-style error split, NICO-style probability split, shared sentence index."""

import numpy as np
import pandas as pd
import pytest

import lbee.core.sentence_index
from lbee.analyses.per_class import class_splits, explain_per_class


def test_error_split_by_hand():
    labels = np.array([0, 0, 0, 1, 1, 2])
    preds = np.array([0, 1, 0, 1, 0, 2])
    splits, skipped = class_splits(labels, preds=preds)
    by = {s.label: s for s in splits}
    # class 0: images labelled or predicted 0 = {0, 1, 2, 4}; FN = 1, FP = 4, TP = 0, 2
    assert by[0].images.tolist() == [0, 1, 2, 4]
    assert by[0].images[by[0].hard].tolist() == [1, 4] and by[0].images[by[0].easy].tolist() == [0, 2]
    assert by[1].images[by[1].hard].tolist() == [1, 4] and by[1].images[by[1].easy].tolist() == [3]
    assert by[0].performance.tolist() == [1, 0, 1, 0]
    assert 2 in skipped and "no hard" in skipped[2]


def test_probability_split_and_bad_inputs():
    labels = np.array([0] * 5 + [1] * 3)
    probs = np.zeros((8, 2))
    probs[:5, 0] = [0.9, 0.8, 0.1, 0.2, 0.85]
    probs[:5, 1] = 1 - probs[:5, 0]
    probs[5:] = [0.3, 0.7]  # class 1: no spread, nothing hard
    splits, skipped = class_splits(labels, probs=probs, split="probability")
    s0 = splits[0]
    assert s0.label == 0 and s0.images[s0.hard].tolist() == [2, 3] and s0.images[s0.easy].tolist() == [0, 1, 4]
    assert "no hard" in skipped[1]
    with pytest.raises(ValueError, match=r"class\(es\) \[3\] absent from the predictions"):
        class_splits(np.array([0, 3]), probs=np.full((2, 2), 0.5))
    with pytest.raises(ValueError, match="needs `probs`"):
        class_splits(labels, preds=labels, split="probability")
    # A class never predicted: no easy images, skipped with the reason.
    _, skipped = class_splits(np.array([0, 0, 1, 1]), preds=np.array([0, 0, 0, 0]))
    assert "never predicted correctly" in skipped[1]


def per_class_world(per=6, seed=0):
    """Class 0 lives near e0 and fails 'at night' (e2); class 1 near e1 and fails 'in fog' (e3)."""
    rng = np.random.default_rng(seed)
    eye = np.eye(8)
    # The failure condition dominates its images, so it (not the class) is the best description.
    centres = [eye[0], (eye[0] + 2 * eye[2]) / np.sqrt(5), eye[1], (eye[1] + 2 * eye[3]) / np.sqrt(5)]
    X = np.concatenate([np.tile(c, (per, 1)) for c in centres]) + 0.01 * rng.normal(size=(4 * per, 8))
    labels = np.repeat([0, 0, 1, 1], per)
    preds = labels.copy()
    preds[per : 2 * per] = 1  # class 0 at night: predicted as class 1 (false negatives of 0, false positives of 1)
    preds[3 * per :] = 0  # class 1 in fog: predicted as class 0
    rel = np.zeros((4 * per, 8), bool)
    rel[per : 2 * per, 2] = True
    rel[3 * per :, 3] = True
    rel[: 2 * per, 0] = True
    rel[2 * per :, 1] = True
    return X, eye, labels, preds, rel, ["road", "field", "at night", "in fog", "s4", "s5", "s6", "s7"]


def test_explain_per_class_finds_each_class_failure_with_one_index(monkeypatch):
    X, S, labels, preds, rel, sentences = per_class_world()
    built = []
    original = lbee.core.sentence_index.SentenceIndex.__init__

    def counting_init(self, *args, **kwargs):
        built.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(lbee.core.sentence_index.SentenceIndex, "__init__", counting_init)
    res = explain_per_class(
        X,
        S,
        labels=labels,
        preds=preds,
        methods=["tops", "pdiff"],
        n_clusters=2,
        k=1,
        relevance=rel,
        sentences=sentences,
        class_names=["car", "cow"],
    )
    assert len(built) == 1  # the sentence side is built once for every class
    assert set(res.explanations) == {0, 1}
    # Each class's hard set holds both failure groups (its FN and its FP); the pdiff clusters name them.
    for c in (0, 1):
        exp = res.explanations[c]["pdiff"]
        named = {sentences[cl.sentences[0]] for cl in exp.hard_clusters}
        assert named == {"at night", "in fog"}
        members = np.concatenate([cl.indices for cl in exp.hard_clusters])
        assert sorted(members.tolist()) == list(range(6, 12)) + list(range(18, 24))  # global indices
        assert exp.params["label"] == c
    row = res.metrics.query("`class` == 0 and method == 'pdiff'").iloc[0]
    assert row["class_name"] == "car" and row["n_hard"] == 12 and row["n_easy"] == 6
    # Class 0's images: ω(road) = 1/2 (day and night cars), ω(field) = ω(at night) = ω(in fog) = 0 < mean 1/3,
    # so S* = {field, at night, in fog}; pdiff returns {at night, in fog}.
    assert row["TPR"] == pytest.approx(2 / 3) and row["AHR"] == 1.0 and row["JI"] == pytest.approx(2 / 3)
    summary = res.summary()
    assert summary.set_index("method").loc["pdiff", "n_classes"] == 2


def test_a_class_of_few_hard_images_is_not_cut_into_the_default_five_groups():
    """An eighth user's circle class, 10 hard images, came out as groups of 2, 4, 1, 2 and 1. With
    ``images_per_group`` (what the command line passes when --clusters is not given) it is one group per 10."""
    from lbee.run.settings import RunSettings

    X, S, labels, preds, _, _ = per_class_world()
    kw = dict(labels=labels, preds=preds, methods=["tops"], k=1)
    paper = explain_per_class(X, S, n_clusters=5, **kw)
    assert (paper.metrics["n_hard_clusters"] == 5).all()  # the paper's C, whatever the class's size
    fewer = explain_per_class(X, S, n_clusters=5, images_per_group=10, **kw)
    rows = fewer.metrics.set_index("class")
    assert (rows["n_hard_clusters"] == (rows["n_hard"] // 10).clip(1, 5)).all() and (rows["n_hard"] == 12).all()
    assert RunSettings(per_class="errors").images_per_group_per_class == 10
    assert RunSettings(per_class="errors", clusters=5).images_per_group_per_class is None  # C given: kept


def test_per_class_threads_match_serial():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 16))
    S = rng.normal(size=(40, 16))
    labels = rng.integers(0, 12, size=600)
    preds = np.where(rng.random(600) < 0.3, rng.integers(0, 12, size=600), labels)
    a = explain_per_class(X, S, labels=labels, preds=preds, n_jobs=1)
    b = explain_per_class(X, S, labels=labels, preds=preds, n_jobs=2)  # two worker processes
    pd.testing.assert_frame_equal(a.metrics, b.metrics)
    for c in a.explanations:
        for m in a.explanations[c]:
            ea, eb = a.explanations[c][m], b.explanations[c][m]
            # Same clusters and sentences; floats may differ in the last bits (BLAS thread count).
            for ha, hb in zip(ea.hard_clusters, eb.hard_clusters, strict=True):
                assert ha.indices.tolist() == hb.indices.tolist() and ha.sentences == hb.sentences
                np.testing.assert_allclose(ha.scores, hb.scores, atol=1e-9)


def test_cli_per_class(tmp_path):
    import json

    import pandas as pd
    from click.testing import CliRunner

    from lbee.cli import cli

    X, S, labels, preds, rel, sentences = per_class_world()
    np.save(tmp_path / "img.npy", X)
    np.save(tmp_path / "sen.npy", S)
    np.save(tmp_path / "rel.npy", rel)
    (tmp_path / "s.txt").write_text("\n".join(sentences) + "\n")
    probs = np.where(np.arange(2)[None, :] == preds[:, None], 0.8, 0.2)
    table = pd.DataFrame(
        {
            "image": [f"i{i}" for i in range(len(labels))],
            "label": labels,
            "prob_car": probs[:, 0],
            "prob_cow": probs[:, 1],
        }
    )
    table.to_csv(tmp_path / "pred.csv", index=False)
    args = [
        "describe",
        "--image-embeddings",
        str(tmp_path / "img.npy"),
        "--sentence-embeddings",
        str(tmp_path / "sen.npy"),
        "--sentences",
        str(tmp_path / "s.txt"),
        "--predictions",
        str(tmp_path / "pred.csv"),
        "--per-class",
        "--clusters",
        "2",
        "-k",
        "1",
        "--method",
        "pdiff",
        "--relevance",
        str(tmp_path / "rel.npy"),
        "--jobs",
        "2",
        "--out",
        str(tmp_path / "out"),
    ]
    r = CliRunner().invoke(cli, args, obj={})
    assert r.exit_code == 0, r.output
    assert "Per-class analysis of 2 classes" in r.output
    metrics = pd.read_csv(tmp_path / "out" / "per_class_metrics.csv")
    assert metrics["class_name"].tolist() == ["car", "cow"] and metrics["TPR"].round(3).tolist() == [0.667, 0.667]
    payload = json.loads((tmp_path / "out" / "per_class.json").read_text())
    assert payload["class_names"] == ["car", "cow"] and set(payload["classes"]) == {"0", "1"}
    # what to read next names files the run wrote (a twenty-second user was sent to a report.md never written)
    nxt = next(line for line in r.output.splitlines() if line.startswith("Next: read"))
    named = [w.strip(".,;()") for w in nxt.split() if w.strip(".,;()").endswith((".md", ".csv", ".json", ".html"))]
    assert named and all((tmp_path / "out" / n).is_file() for n in named if n != "report.html"), nxt
    # Labels outside the probability columns: a clear error naming the class.
    table.loc[0, "label"] = 5
    table.to_csv(tmp_path / "pred.csv", index=False)
    r = CliRunner().invoke(cli, [*args, "--overwrite"], obj={})  # --out holds the run above
    # (the predictions table reader catches it first, naming the file, row and column)
    assert r.exit_code == 1 and "column 'label'" in r.output and "received [5]" in r.output, r.output


@pytest.mark.parametrize("tau", [0.0, 0.9])
def test_a_batch_of_classes_selects_what_each_class_alone_selects(tau):
    """Classes are described a batch at a time (each describer's selections over the batch's stacked clusters).
    Each must get what `Partition.describe_methods` gives the class on its own: with few sentences and τ = 0,
    SetDiff leaves some clusters k candidates or fewer, which the batched path routes row by row."""
    from lbee.analyses.per_class import CLASS_BATCH, class_splits
    from lbee.core.partition import partition
    from lbee.core.rows import UnitRows

    rng = np.random.default_rng(11)
    n_classes = CLASS_BATCH + 6  # two batches
    labels = np.repeat(np.arange(n_classes), 12)
    X = rng.normal(size=(labels.size, 6)) + 2 * rng.normal(size=(n_classes, 6))[labels]
    S = np.round(rng.normal(size=(8, 6)), 1)  # rounded: some scores tie
    preds = np.where(rng.random(labels.size) < 0.4, rng.integers(0, n_classes, labels.size), labels)
    got = explain_per_class(X, S, labels=labels, preds=preds, n_clusters=3, k=3, tau=tau)
    images = UnitRows(X, "X")
    splits, _ = class_splits(labels, preds=preds)
    assert len(splits) == len(got.explanations) > CLASS_BATCH
    for cs in splits:
        part = partition(images.subset(cs.images), hard=cs.hard, easy=cs.easy, n_clusters=min(3, int(cs.hard.sum())))
        want = part.describe_methods(S, k=3, tau=tau)
        for m, e in want.items():
            mine = got.explanations[cs.label][m]
            assert [c.sentences for c in mine.hard_clusters] == [c.sentences for c in e.hard_clusters], (cs.label, m)
            for a, b in zip(mine.hard_clusters, e.hard_clusters, strict=True):
                assert a.indices.tolist() == cs.images[b.indices].tolist()
                np.testing.assert_allclose(a.scores, b.scores, atol=1e-12)


def test_the_collector_is_paused_only_inside_and_left_as_found():
    import gc

    from lbee._gc import collector_paused

    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():  # an inner block changes nothing
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()  # enabled again after an error
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # a caller's own choice is kept
    finally:
        gc.enable()
