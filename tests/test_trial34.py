"""Trial 34 (an underwater net-pen fish audit): what a new user met, each fixed and kept so."""

import numpy as np
import pytest

GRAMMAR = """name: netpen
lead: An underwater photo of
bare: An underwater photo
max_conditions: 2
subjects:
  - id: bubbles
    noun: air bubbles
    deniable: true
settings:
  - id: water
    noun: water
    attributes:
      - id: tint
        kind: clause
        values: {green: in green water, blue: in blue water}
"""


def test_a_folder_in_another_order_than_its_embeddings_is_refused_and_a_manifest_runs(tmp_path):
    """Trial 34 asked that a folder be read in the order of the embeddings' ids.txt. It was, for one stop; then a Γ
    array, which has no ids, followed one order or the other unsaid (sweeps 32aq B2, 32ar B1 and B2). A folder is
    read in its sorted order only: embeddings in another order are refused, naming the manifest that runs."""
    import pandas as pd
    from conftest import generated_sentences
    from conftest import lbee_cli as run
    from PIL import Image

    generated_sentences(tmp_path, GRAMMAR, "netpen")
    rng = np.random.default_rng(0)
    n = 120
    ids = [f"cam{i % 3}/img_{i:04d}.png" for i in range(n)]  # the table's order: not the folder's sorted one
    for i, name in enumerate(ids):
        (tmp_path / "images" / name).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (8, 8), (i, 0, 0)).save(tmp_path / "images" / name)
    bubbles = rng.random(n) < 0.4
    tint = rng.choice(["green", "blue"], n)
    pd.DataFrame({"image": ids, "bubbles.presence": bubbles, "water.tint": tint}).to_csv(
        tmp_path / "a.csv", index=False
    )
    wrong = rng.random(n) < np.where(bubbles & (tint == "green"), 0.9, 0.03)
    pd.DataFrame({"image": ids, "confidence": np.where(wrong, 0.2, 0.9)}).to_csv(tmp_path / "p.csv", index=False)
    assert (
        run("simulate", tmp_path / "a.csv", "--sentences", tmp_path / "s.txt", "--out", tmp_path / "sim").exit_code == 0
    )
    sim = tmp_path / "sim"
    args = [
        "--predictions",
        tmp_path / "p.csv",
        "--sentences",
        tmp_path / "s.txt",
        "--method",
        "tops",
        "--clusters",
        "3",
    ]
    args += ["--image-embeddings", sim / "embeddings.npy", "--sentence-embeddings", sim / "sentence_embeddings.npy"]
    r = run("describe", tmp_path / "images", *args, "--relevance", sim / "relevance.npy", "--out", tmp_path / "run")
    assert r.exit_code != 0 and "give a manifest instead of the folder" in r.output, r.output
    assert not (tmp_path / "run").exists()
    pd.DataFrame({"path": [f"images/{i}" for i in ids]}).to_csv(tmp_path / "manifest.csv", index=False)
    r = run("describe", tmp_path / "manifest.csv", *args, "--relevance", sim / "relevance.npy", "--out", tmp_path / "m")
    assert r.exit_code == 0, r.output
    table = pd.read_parquet(tmp_path / "m" / "images.parquet")
    assert [str(i).removeprefix("images/") for i in table["image"]] == ids  # each row its own image


def test_logits_given_to_lbee_audit_are_named_with_the_library_s_own_parameter():
    """The message said "probabilities='logits' in the library", which `lbee.audit` did not take (a TypeError).
    `logits=True` applies the softmax, as the command line's --logits."""
    import lbee
    from lbee.scoring.confidence import softmax

    rng = np.random.default_rng(0)
    n, d = 600, 8
    X, S = rng.normal(size=(n, d)), np.eye(d)[:4]
    logits, labels = rng.normal(size=(n, 3)) * 3, rng.integers(0, 3, n)
    with pytest.raises(ValueError, match=r"logits=True in lbee\.audit"):
        lbee.audit(X, S, sentences=[f"s{i}" for i in range(4)], probs=logits, labels=labels, tau=0.2)
    kw = {"sentences": [f"s{i}" for i in range(4)], "labels": labels, "tau": 0.2}
    a = lbee.audit(X, S, probs=logits, logits=True, **kw)
    b = lbee.audit(X, S, probs=softmax(logits), **kw)
    assert np.array_equal(a.scores.confidence, b.scores.confidence)
    with pytest.raises(TypeError, match=r"`logits` is 'yes'; expected True or False"):
        lbee.audit(X, S, probs=logits, logits="yes", **kw)


def test_every_confirmed_entry_has_images_and_conditions():
    """A loop over `result.confirmed()` printing each entry's images met a KeyError on a companion (which holds for
    no images of its own): both keys are always there, empty for a companion."""
    from lbee.run.confirm_text import with_images

    listed = with_images(
        [
            {"text": "a", "adds_failure": True, "holds_for": [0, 2], "conditions": {"x": "needed"}},
            {"text": "b", "adds_failure": False, "goes_with": "a"},
        ],
        ["i0", "i1", "i2"],
    )
    assert [(e["images"], e["conditions"]) for e in listed] == [(["i0", "i2"], {"x": "needed"}), ([], {})]


def test_confirmation_skipped_below_its_floor_says_what_confirm_would_have_held_out():
    """`--confirm 0.3` on 300 images said the same as no option at all: the skip now says the floor holds whatever
    --confirm asks, and how few images its share would have held out."""
    import lbee

    rng = np.random.default_rng(0)
    n, d = 300, 8
    X, S = rng.normal(size=(n, d)), np.eye(d)[:4]
    phi = rng.random(n)
    result = lbee.audit(X, S, sentences=[f"s{i}" for i in range(4)], confidence=phi, performance=phi > 0.2, tau=0.2)
    reason = result.main.extra["confirmation"]["reason"]
    assert "300 images, under the 500 that confirmation needs, whatever share is held out" in reason
    assert "30% held out would be 90 images" in reason
