"""Trial 36 (a ceramic-tile defect audit): what a new user met in the library, each fixed and kept so."""

import json
import warnings

import numpy as np
import pytest


def _arrays(n=120, d=16, n_sentences=6, seed=0):
    rng = np.random.default_rng(seed)
    X, S = rng.normal(size=(n, d)), rng.normal(size=(n_sentences, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    S /= np.linalg.norm(S, axis=1, keepdims=True)
    probs = rng.dirichlet(np.ones(3), size=n)
    return X, S, probs, rng.integers(0, 3, n)


def test_a_library_run_keeps_its_sentence_sets_name_not_the_last_image_id(tmp_path):
    """The sentence set of `lbee.audit(..., image_ids=ids)` was named after the last image ('tile_0699.png'): the
    ids' check reused the set's name for its loop."""
    import lbee
    from lbee.io.sentences import load_sentence_set

    X, S, probs, labels = _arrays()
    (tmp_path / "tiles.txt").write_text("".join(f"A tile of kind {i}\n" for i in range(6)))
    sset = load_sentence_set(tmp_path / "tiles.txt")
    ids = [f"tile_{i:04d}.png" for i in range(len(X))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = lbee.audit(X, S, sentences=sset, probs=probs, labels=labels, image_ids=ids, tau=0.1)
    out = lbee.write_run_folder(result, tmp_path / "run", html=False)
    payload = json.loads((out / "explanation.json").read_text())
    assert sset.name == "tiles" and payload["sentence_set"] == "tiles"
    assert "tile_0119.png" not in (out / "report.md").read_text().split("## ")[0]


def test_a_library_run_carries_the_embeddings_provenance_into_its_reports(tmp_path):
    """`lbee.audit` took no provenance: its reports said "encoder unknown", and a run on random weights carried no
    banner, where the command line reading the same files shows both. The record's τ is the default τ."""
    import lbee
    from lbee.io.provenance import array_digest

    X, S, probs, labels = _arrays()
    record = {
        "lbee_provenance": 1,
        "kind": "image_embeddings",
        "encoder": {"encoder": "open_clip", "model": "ViT-B-32", "weights": "random:seed=0:abcdef"},
        "tau": 0.123,
        "shape": list(X.shape),
        "data_sha256": array_digest(X),
    }
    sentences = [f"s{i}" for i in range(len(S))]
    with pytest.warns(UserWarning, match="Random weights: the encoder open_clip ViT-B-32 was never trained"):
        result = lbee.audit(X, S, sentences=sentences, probs=probs, labels=labels, provenance=record)
    assert result.main.explanations["fpdiff"].params["tau"] == pytest.approx(0.123)
    report = (lbee.write_run_folder(result, tmp_path / "run", html=False) / "report.md").read_text()
    assert "open_clip ViT-B-32" in report and "@random (seed 0)" in report and "unknown" not in report.split("\n\n")[1]
    assert "random weights" in report.lower()
    with warnings.catch_warnings():  # τ given beside the record: the one given
        warnings.simplefilter("ignore")
        given = lbee.audit(X, S, sentences=sentences, probs=probs, labels=labels, provenance=record, tau=0.2)
    assert given.main.explanations["fpdiff"].params["tau"] == pytest.approx(0.2)
    with pytest.raises(ValueError, match=r"records embeddings of shape \(99, 16\)"):
        lbee.audit(X, S, sentences=sentences, probs=probs, labels=labels, provenance={**record, "shape": [99, 16]})
    with pytest.raises(ValueError, match="a record of sentence_embeddings"):
        lbee.audit(X, S, sentences=sentences, probs=probs, provenance={**record, "kind": "sentence_embeddings"})
    with pytest.raises(TypeError, match="`provenance` is str; expected the record"):
        lbee.audit(X, S, sentences=sentences, probs=probs, provenance="emb/embeddings.provenance.json")
    with pytest.raises(TypeError, match="a dict without an 'encoder' record"):
        lbee.audit(X, S, sentences=sentences, probs=probs, provenance={"tau": 0.2})


def test_evaluate_of_a_run_on_random_weights_says_so_beside_its_scores(tmp_path):
    """`lbee evaluate` of a run on random weights printed its AHR table with no word of them."""
    from conftest import lbee_cli

    import lbee

    X, S, probs, labels = _arrays()
    encoder = {"encoder": "open_clip", "model": "ViT-B-32", "weights": "random:seed=0:abcdef"}
    record = {"lbee_provenance": 1, "kind": "image_embeddings", "encoder": encoder, "tau": 0.1}
    from lbee.io.provenance import array_digest

    record.update(shape=list(X.shape), data_sha256=array_digest(X))
    gamma = np.random.default_rng(1).random((len(X), len(S))) < 0.3
    np.save(tmp_path / "gamma.npy", gamma)
    for name, prov in (("random", record), ("trained", {**record, "encoder": {**encoder, "weights": "tag:x"}})):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = lbee.audit(
                X, S, sentences=[f"s{i}" for i in range(len(S))], probs=probs, labels=labels, provenance=prov
            )
        out = lbee.write_run_folder(result, tmp_path / name, html=False)
        r = lbee_cli("evaluate", out, "--relevance", tmp_path / "gamma.npy")
        assert r.exit_code == 0, r.output
        assert ("Random weights: the encoder open_clip ViT-B-32 was never trained" in r.output) == (name == "random")


def test_simulate_suggests_the_value_or_column_meant(tmp_path):
    """`lbee simulate` said "'speckeld' is none of the grammar's values" and "has no column 'light.kind'" (for a
    column named 'light') without the "did you mean" the rest of lbee gives."""
    import pandas as pd
    from conftest import generated_sentences
    from test_sweep32aq import GRAMMAR

    from lbee.bench.from_table import simulate_embeddings

    s = generated_sentences(tmp_path, GRAMMAR, "belts")
    table = pd.DataFrame({"image": ["a", "b"], "box.colour": ["white", "whte"], "belt.lighting": ["glare", "normal"]})
    with pytest.raises(ValueError, match=r"row 2: 'whte' is none of the grammar's values .* Did you mean 'white'\?"):
        simulate_embeddings(table, s, quality=0.97)
    table = pd.DataFrame({"image": ["a", "b"], "box.colour": ["white", "brown"], "lighting": ["glare", "normal"]})
    with pytest.raises(ValueError, match=r"no column 'belt.lighting'.* Did you mean the column 'lighting'\?"):
        simulate_embeddings(table, s, quality=0.97)
    for column in ("Belt.Lighting", "BELT_LIGHTING", "Belt.Lightng"):  # sweep 32au N5: no hint for the case
        table = pd.DataFrame({"image": ["a", "b"], "box.colour": ["white", "brown"], column: ["glare", "normal"]})
        with pytest.raises(ValueError, match=rf"no column 'belt.lighting'.* Did you mean the column '{column}'\?"):
            simulate_embeddings(table, s, quality=0.97)
    table = pd.DataFrame({"image": ["a", "b"], "box.colour": ["white", "brown"], "weather": ["sun", "rain"]})
    with pytest.raises(ValueError, match="no column 'belt.lighting'") as info:
        simulate_embeddings(table, s, quality=0.97)
    assert "Did you mean" not in str(info.value)


def test_a_misnamed_probability_column_is_said_with_the_first_row_it_fixes(tmp_path):
    """After "did you mean 'prob_cracked'?", five rows and "and 15 more" that do not sum to 1 followed: noise once
    the rename that fixes them all is said."""
    import pandas as pd

    from lbee.io.images import read_table
    from lbee.scoring.confidence import scores_from_table

    p = np.random.default_rng(0).dirichlet(np.ones(3), size=20)
    table = {"image": [f"i{i}.png" for i in range(20)], "prob_ok": p[:, 0], "p_cracked": p[:, 1]}
    pd.DataFrame({**table, "prob_chipped": p[:, 2], "label": "ok"}).to_csv(tmp_path / "p.csv", index=False)
    with pytest.raises(ValueError, match=r"did you mean 'prob_cracked'\? .*do not sum to 1 \(row 1 \(line 2") as info:
        scores_from_table(read_table(tmp_path / "p.csv"))
    assert "more" not in str(info.value) and "row 2" not in str(info.value)
