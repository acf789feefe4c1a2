"""A real user's first day (issue 34): labels lead the split, reports say what they are, one line each."""

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from lbee.cli import cli


def run(args, **kw):
    return CliRunner().invoke(cli, args, obj={}, catch_exceptions=False, **kw)


@pytest.fixture
def confident_errors(tmp_path):
    """300 images of two classes with labels; 40 planted failures the model gets wrong with confidence.

    The planted images share a direction of the embedding space (the "dark image with a red blob"); the
    model gives their wrong class 0.97, so their entropy is low: an entropy split puts them in easy.
    """
    rng = np.random.default_rng(0)
    n, d, planted = 300, 16, np.arange(40)
    X = rng.normal(size=(n, d))
    X[planted] += 4.0 * np.eye(d)[0]
    labels = rng.integers(0, 2, n)
    p_true = rng.uniform(0.55, 0.99, n)  # right, and more or less sure
    p_true[planted] = 0.03  # wrong, and sure of it
    probs = np.where(labels == 1, p_true, 1 - p_true)
    np.save(tmp_path / "img.npy", X)
    np.save(tmp_path / "sen.npy", np.eye(d))
    (tmp_path / "sents.txt").write_text("\n".join(f"sentence {j}" for j in range(d)) + "\n")
    table = pd.DataFrame({"image": [f"{i:03d}.png" for i in range(n)], "prob_cat": 1 - probs, "prob_dog": probs})
    table.assign(label=np.where(labels == 1, "dog", "cat")).to_csv(tmp_path / "pred.csv", index=False)
    table.to_csv(tmp_path / "pred_unlabelled.csv", index=False)
    return tmp_path, planted


def _describe(p, predictions, out, *extra):
    args = ["describe", "--image-embeddings", str(p / "img.npy"), "--sentence-embeddings", str(p / "sen.npy")]
    args += ["--sentences", str(p / "sents.txt"), "--predictions", str(p / predictions), "--method", "tops"]
    return run([*args, "--clusters", "3", "-k", "1", "--out", str(p / out), *extra])


def test_labels_lead_to_the_label_aware_split_and_the_planted_failures_all_land_in_hard(confident_errors):
    p, planted = confident_errors
    r = _describe(p, "pred.csv", "labelled")
    assert r.exit_code == 0, r.output
    assert "Split by the probability of the true class, because the predictions carry labels" in r.output
    split = pd.read_parquet(p / "labelled" / "assignments.parquet")["split"].to_numpy()
    assert (split[planted] == "hard").all(), split[planted]
    payload = json.loads((p / "labelled" / "explanation.json").read_text())
    assert payload["confidence_from"] == "true_class"
    assert "because the predictions carry labels" in payload["split_criterion"]

    # without labels the confidence-only criterion stays (and the confident errors look easy: why labels matter)
    r = _describe(p, "pred_unlabelled.csv", "unlabelled")
    assert r.exit_code == 0, r.output
    assert "Split by the model's −entropy (its uncertainty), because the predictions carry no labels" in r.output
    split = pd.read_parquet(p / "unlabelled" / "assignments.parquet")["split"].to_numpy()
    assert not (split[planted] == "hard").any()

    # asked for explicitly, entropy is used even with labels, and the run says it was asked for
    r = _describe(p, "pred.csv", "entropy", "--confidence-from", "entropy")
    assert "Split by the −entropy (asked for: confidence_from 'entropy')" in r.output
    assert not (pd.read_parquet(p / "entropy" / "assignments.parquet")["split"].to_numpy()[planted] == "hard").any()


def test_the_default_is_one_constant_for_the_api_the_cli_and_the_yaml():
    from lbee.reports.config_schema import config_schema
    from lbee.run.settings import RunSettings
    from lbee.scoring.confidence import DEFAULT_CONFIDENCE

    assert RunSettings().confidence_from == DEFAULT_CONFIDENCE == "auto"
    option = next(o for o in cli.commands["describe"].params if o.name == "confidence_from")
    assert option.default == DEFAULT_CONFIDENCE
    assert "auto" in json.dumps(config_schema())


#: The identity an open_clip encoder with seeded random weights records (lbee.encoders._open_clip).
RANDOM_CLIP = {"encoder": "open_clip", "model": "ViT-B-32", "weights": "random:seed=0:0123456789abcdef01234567"}


def write_random_weight_embeddings(folder, X, S, sentences):
    """Embeddings whose provenance says: open_clip ViT-B-32 with random weights (as `lbee embed` writes them)."""
    from lbee.io.provenance import make_provenance, write_embeddings

    unit = lambda a: (a / np.linalg.norm(a, axis=1, keepdims=True)).astype(np.float32)  # noqa: E731
    X, S = unit(X), unit(S)
    write_embeddings(folder / "img.npy", X, make_provenance("image_embeddings", X, identity=RANDOM_CLIP, tau=0.25))
    record = make_provenance("sentence_embeddings", S, identity=RANDOM_CLIP, tau=0.25, sentences=sentences)
    write_embeddings(folder / "sen.npy", S, record)


def test_random_weights_show_the_banner_in_the_terminal_the_html_and_report_md(confident_errors):
    from lbee.run.identity import RANDOM_WEIGHTS_BANNER

    p, _ = confident_errors
    sentences = (p / "sents.txt").read_text().splitlines()
    write_random_weight_embeddings(p, np.load(p / "img.npy"), np.load(p / "sen.npy"), sentences)
    r = _describe(p, "pred.csv", "random", "--html")
    assert r.exit_code == 0, r.output
    banner = RANDOM_WEIGHTS_BANNER.format(encoder="open_clip ViT-B-32")
    assert banner[:60] in r.output  # framed and wrapped to the terminal, but there
    assert "Encoder open_clip ViT-B-32, weights @random (seed 0); τ = 0.25." in r.output
    html = (p / "random" / "report.html").read_text()
    assert f'<div class="banner" id="random-weights" role="alert">{banner}</div>' in html.replace("&#39;", "'")
    assert "<dt>weights</dt><dd>@random (seed 0)</dd>" in html
    md = (p / "random" / "report.md").read_text()
    assert banner in md and "weights @random (seed 0)" in md

    # pretrained weights: no banner, the tag named
    from lbee.run.identity import random_weights_banner, weights_words

    tagged = dict(RANDOM_CLIP, weights="tag:laion2b_s34b_b79k")
    assert random_weights_banner(tagged) is None and weights_words(tagged) == "pretrained tag laion2b_s34b_b79k"
    assert weights_words({"weights": "sha256:" + "ab" * 32}) == "checkpoint sha256:abababababab…"
