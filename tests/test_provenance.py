"""Issue 23, provenance: the encoder and τ travel with the embeddings (lbee.io.provenance).

A stub encoder (registered as ``stubtest``) stands in for open_clip / SpotCheck: it declares its own τ, as the
SpotCheck encoder does (0.0816), so a run that forgot the encoder would fall back to CLIP's 0.25 and show it.
"""

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import planted_world
from PIL import Image

from lbee.cli import cli
from lbee.encoders import register_encoder
from lbee.encoders._base import Encoder, unit_float32
from lbee.io.provenance import (
    ProvenanceWarning,
    check_pair,
    load_embeddings,
    make_provenance,
    sidecar_path,
    write_embeddings,
)

STUB_TAU = 0.0816


class StubEncoder(Encoder):
    """Embeds an image as its mean colour (3-d) and a sentence by its first three letters."""

    name = "stubtest"
    default_tau = STUB_TAU

    def __init__(self, model=None, pretrained=None, **kwargs):
        self.weights = pretrained or "w1"

    def identity(self):
        return {"encoder": "stubtest", "model": "stub", "weights": f"tag:{self.weights}", "preprocess": "mean"}

    def preprocess(self, image):
        import torch

        return torch.tensor(np.asarray(image, dtype=np.float32).mean(axis=(0, 1)) + 1.0)

    def encode_image_batch(self, batch):
        return unit_float32(batch.numpy())

    def encode_text(self, sentences, batch_size=256):
        rows = [[ord(c) for c in (s + "xyz")[:3]] for s in sentences]
        return unit_float32(np.asarray(rows, dtype=np.float32))


register_encoder("stubtest")(StubEncoder)


def run(args):
    return CliRunner().invoke(cli, args, obj={}, catch_exceptions=False)


@pytest.fixture
def world(tmp_path):
    """Planted embeddings written by lbee with provenance (τ 0.0816), a predictions table and a sentence file."""
    X, S, phi, sentences = planted_world(noise=0.01)
    enc = StubEncoder()
    (tmp_path / "sents.txt").write_text("\n".join(sentences) + "\n")
    write_embeddings(tmp_path / "img.npy", X, make_provenance("image_embeddings", X, encoder=enc, spec="stubtest"))
    write_embeddings(
        tmp_path / "sen.npy",
        S,
        make_provenance("sentence_embeddings", S, encoder=enc, spec="stubtest", sentences=sentences),
    )
    pd.DataFrame({"image": [f"i{i}.png" for i in range(24)], "confidence": phi}).to_csv(
        tmp_path / "pred.csv", index=False
    )
    rel = np.zeros((24, 8), bool)
    rel[12:18, 2] = rel[18:24, 3] = True
    np.save(tmp_path / "rel.npy", rel)
    return tmp_path


def describe(p, *extra):
    return run(
        [
            "describe",
            "--image-embeddings",
            str(p / "img.npy"),
            "--sentence-embeddings",
            str(p / "sen.npy"),
            "--sentences",
            str(p / "sents.txt"),
            "--predictions",
            str(p / "pred.csv"),
            "--clusters",
            "2",
            "-k",
            "1",
            "--out",
            str(p / "out"),
            *extra,
        ]
    )


# ---------------------------------------------------------------- the library: one validating reader


def test_round_trip_keeps_encoder_and_tau(world):
    emb, prov = load_embeddings(world / "sen.npy", "sentence_embeddings", kind="sentence_embeddings")
    assert emb.dtype == np.float32 and emb.shape == (8, 8)
    assert prov["tau"] == STUB_TAU and prov["encoder"]["encoder"] == "stubtest" and prov["n_sentences"] == 8
    assert sidecar_path(world / "sen.npy").name == "sen.provenance.json"
    assert check_pair(load_embeddings(world / "img.npy", "i")[1], prov) == STUB_TAU


def test_replaced_npy_is_refused(world):
    np.save(world / "img.npy", np.ones((24, 8), np.float32))  # overwritten by something else after lbee wrote it
    with pytest.raises(ValueError, match=r"does not match its provenance img.provenance.json \('data_sha256' differs"):
        load_embeddings(world / "img.npy", "--image-embeddings")  # sweep #29: the differing field is named
    np.save(world / "img.npy", np.ones((23, 8), np.float32))
    with pytest.raises(ValueError, match=r"\('shape' differs: the array is \(23, 8\), the record says \(24, 8\)\)"):
        load_embeddings(world / "img.npy", "--image-embeddings")


def test_wrong_kind_is_refused(world):
    with pytest.raises(ValueError, match="holds sentence embeddings .*expected image embeddings"):
        load_embeddings(world / "sen.npy", "--image-embeddings", kind="image_embeddings")


def test_two_encoders_are_refused(world):
    img = load_embeddings(world / "img.npy", "i")[1]
    other = dict(img, encoder=dict(img["encoder"], weights="tag:w2"), encoder_spec="stubtest@w2")
    with pytest.raises(
        ValueError,
        match="image embeddings come from stubtest:stub \\(weights tag:w1, spec 'stubtest'\\) but sentence embeddings "
        "from stubtest:stub \\(weights tag:w2, spec 'stubtest@w2'\\) \\(weights 'tag:w1' vs 'tag:w2'\\).*one encoder",
    ):
        check_pair(img, dict(other, kind="sentence_embeddings"))


def test_sentences_of_another_list_are_refused(world):
    prov = load_embeddings(world / "sen.npy", "s")[1]
    with pytest.raises(ValueError, match="embed another sentence list \\(8 sentences\\) than the run's 8"):
        check_pair(None, prov, sentences=["road"] * 8)


def test_garbled_sidecar_is_named(world):
    sidecar_path(world / "img.npy").write_text(json.dumps({"lbee_provenance": 1, "kind": "x", "tau": 7}))
    with pytest.raises(
        ValueError, match="img.provenance.json is not a valid provenance record.*'kind' is 'x'.*'tau' is 7"
    ):
        load_embeddings(world / "img.npy", "--image-embeddings")


def test_a_sidecar_key_written_twice_is_refused(world):
    """Sweep #19: `"tau": 0.5, "tau": 0.0924` was accepted; json kept the last value in silence."""
    side = sidecar_path(world / "img.npy")
    text = side.read_text()
    assert text.count('"tau": ') == 1
    side.write_text(text.replace('"tau": ', '"tau": 0.5, "tau": ', 1))
    with pytest.raises(
        ValueError, match=r"img.provenance.json is not a provenance record .*the key 'tau' is written tw"
    ):
        load_embeddings(world / "img.npy", "--image-embeddings")


# ---------------------------------------------------------------- consumers: describe, sweep, report config


def test_describe_takes_tau_from_provenance(world):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProvenanceWarning)
        r = describe(world)
    assert r.exit_code == 0, r.output
    payload = json.loads((world / "out" / "explanation.json").read_text())
    assert payload["params"]["tau"] == STUB_TAU  # not CLIP's 0.25
    assert payload["encoder"]["encoder"] == "stubtest"


def test_explicit_tau_still_wins(world):
    assert describe(world, "--tau", "0.3").exit_code == 0
    assert json.loads((world / "out" / "explanation.json").read_text())["params"]["tau"] == 0.3


def test_bare_arrays_warn_which_tau_is_assumed(world):
    for f in ("img", "sen"):
        sidecar_path(world / f"{f}.npy").unlink()
    r = describe(world)
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split())  # warnings are wrapped to the terminal's width
    assert "carry no provenance" in said and "τ = 0.25 (CLIP's) is assumed" in said
    assert json.loads((world / "out" / "explanation.json").read_text())["params"]["tau"] == 0.25
    r = describe(world, "--tau", "0.08", "--overwrite")
    assert "carry no provenance" not in r.output


def test_describe_refuses_sentence_embeddings_of_another_list(world):
    (world / "sents.txt").write_text("\n".join(f"s{i}" for i in range(8)) + "\n")
    r = CliRunner().invoke(
        cli,
        [
            "describe",
            "--image-embeddings",
            str(world / "img.npy"),
            "--sentence-embeddings",
            str(world / "sen.npy"),
            "--sentences",
            str(world / "sents.txt"),
            "--predictions",
            str(world / "pred.csv"),
        ],
        obj={},
    )
    assert r.exit_code == 1 and "embed another sentence list" in r.output and "Traceback" not in r.output


def test_describe_refuses_mixed_encoders(world):
    X = np.load(world / "img.npy")
    other = StubEncoder(pretrained="w2")
    write_embeddings(world / "img.npy", X, make_provenance("image_embeddings", X, encoder=other, spec="stubtest@w2"))
    r = CliRunner().invoke(
        cli,
        [
            "describe",
            "--image-embeddings",
            str(world / "img.npy"),
            "--sentence-embeddings",
            str(world / "sen.npy"),
            "--sentences",
            str(world / "sents.txt"),
            "--predictions",
            str(world / "pred.csv"),
        ],
        obj={},
    )
    assert r.exit_code == 1 and "one encoder" in r.output and "stubtest@w2" in r.output


def test_sweep_takes_tau_from_provenance(world, monkeypatch):
    import lbee.analyses.sweep as sweep_mod

    seen = {}
    real = sweep_mod.sensitivity_sweep

    def spy(*args, **kw):
        seen["tau"] = kw["tau"]
        return real(*args, **kw)

    monkeypatch.setattr(sweep_mod, "sensitivity_sweep", spy)
    r = run(
        [
            "sweep",
            "--image-embeddings",
            str(world / "img.npy"),
            "--sentence-embeddings",
            str(world / "sen.npy"),
            "--sentences",
            str(world / "sents.txt"),
            "--predictions",
            str(world / "pred.csv"),
            "--relevance",
            str(world / "rel.npy"),
            "--k-grid",
            "1",
            "--clusters-grid",
            "2",
            "--o-grid",
            "",
            "--clusters",
            "2",
            "-k",
            "1",
            "--method",
            "fpdiff",
            "--out",
            str(world / "sweep"),
        ]
    )
    assert r.exit_code == 0, r.output
    assert seen["tau"] == STUB_TAU


def test_sweep_refuses_to_replace_its_outputs_without_overwrite(world, monkeypatch):
    """Sweep #9: a second `lbee sweep` into the same folder replaced sweep.csv and sweep.png in silence."""
    import lbee.analyses.sweep as sweep_mod

    args = ["sweep", "--image-embeddings", str(world / "img.npy"), "--sentence-embeddings", str(world / "sen.npy")]
    args += ["--sentences", str(world / "sents.txt"), "--predictions", str(world / "pred.csv")]
    args += ["--relevance", str(world / "rel.npy"), "--k-grid", "1", "--clusters-grid", "", "--o-grid", ""]
    args += ["--clusters", "2", "-k", "1", "--method", "fpdiff", "--out", str(world / "sweep")]
    assert run(args).exit_code == 0
    before = (world / "sweep" / "sweep.csv").read_bytes()

    def no_work(*a, **kw):
        raise AssertionError("the refusal comes before any work")

    monkeypatch.setattr(sweep_mod, "sensitivity_sweep", no_work)
    r = CliRunner().invoke(cli, [*args, "--k-grid", "2"], obj={})
    assert r.exit_code == 2 and "sweep.csv' already exists" in r.output and "--overwrite" in r.output, r.output
    assert (world / "sweep" / "sweep.csv").read_bytes() == before
    monkeypatch.undo()
    assert run([*args, "--k-grid", "2", "--overwrite"]).exit_code == 0
    assert (world / "sweep" / "sweep.csv").read_bytes() != before


# ---------------------------------------------------------------- lbee embed writes it (images and sentence sets)


@pytest.fixture
def images(tmp_path):
    from PIL import Image

    folder = tmp_path / "imgs"
    folder.mkdir()
    for i in range(4):
        Image.fromarray(np.full((8, 8, 3), 40 * i + 10, np.uint8)).save(folder / f"f{i}.png")
    return folder


def test_embed_writes_provenance_for_images_and_sentences(images, tmp_path):
    out = tmp_path / "emb"
    r = run(
        [
            "--cache-dir",
            str(tmp_path / "cache"),
            "embed",
            str(images),
            "--sentences",
            str(_sentences(tmp_path)),
            "--encoder",
            "stubtest",
            "--out",
            str(out),
        ]
    )
    assert r.exit_code == 0, r.output
    img, prov = load_embeddings(out / "embeddings.npy", "embeddings", kind="image_embeddings")
    assert img.shape == (4, 3) and prov["tau"] == STUB_TAU and prov["encoder_spec"] == "stubtest"
    sen, sprov = load_embeddings(out / "sentence_embeddings.npy", "s", kind="sentence_embeddings")
    assert sen.shape == (2, 3) and sprov["n_sentences"] == 2
    assert (out / "sentences.txt").read_text().splitlines() == ["A dog", "A cat"]
    assert check_pair(prov, sprov, sentences=["A dog", "A cat"]) == STUB_TAU


def test_embed_sentences_only(tmp_path):
    out = tmp_path / "emb"
    r = run(["embed", "--sentences", str(_sentences(tmp_path)), "--encoder", "stubtest", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == [
        "sentence_embeddings.npy",
        "sentence_embeddings.provenance.json",
        "sentences.txt",
    ]


def test_embed_needs_images_or_sentences(tmp_path):
    r = CliRunner().invoke(cli, ["embed", "--out", str(tmp_path / "e")], obj={})
    assert r.exit_code == 2 and "Give IMAGES, --sentences SET, or both." in r.output


def test_embed_is_atomic_on_a_full_disk(images, tmp_path, monkeypatch):
    """Case 14: a failed write leaves the previous embeddings.npy whole (np.save used to truncate it first)."""
    out = tmp_path / "emb"
    assert run(["embed", str(images), "--encoder", "stubtest", "--out", str(out)]).exit_code == 0
    before = (out / "embeddings.npy").read_bytes()

    def full_disk(fh, arr, **kw):
        fh.write(b"\x93NUMPY partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "save", full_disk)
    args = ["embed", str(images), "--encoder", "stubtest", "--out", str(out), "--overwrite"]
    r = CliRunner().invoke(cli, args, obj={})
    assert r.exit_code == 1 and "No space left on device" in r.output
    assert (out / "embeddings.npy").read_bytes() == before
    assert not [p for p in out.iterdir() if p.name.startswith(".tmp-")]


@pytest.mark.parametrize("step", ["staged", "swapping"])
def test_embed_killed_leaves_each_array_with_its_ids(images, tmp_path, killed_lbee, step):
    """Issue 32: a SIGKILL during the sentence phase left new rows beside the old ids.txt."""
    from pathlib import Path

    from lbee.io.staging import recover_leftovers

    out, cache = tmp_path / "emb", ["--cache-dir", str(tmp_path / "cache")]
    args = ["embed", images, "--sentences", _sentences(tmp_path), "--encoder", "stubtest", "--out", out]
    assert run([*cache, *map(str, args)]).exit_code == 0
    old = {p.name: p.read_bytes() for p in out.iterdir()}
    for i in range(4, 6):  # two more images, three sentences
        Image.fromarray(np.full((8, 8, 3), 30 * i, np.uint8)).save(images / f"f{i}.png")
    (tmp_path / "two.txt").write_text("A dog\nA cat\nA bird\n")
    setup = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import test_provenance"
    killed_lbee([*cache, *args, "--overwrite"], step, setup=setup)
    if step == "staged":  # the new arrays were all in the stage: the folder is the old one
        assert {p.name: p.read_bytes() for p in out.iterdir()} == old
    else:  # half swapped: a reader refuses it until a writer settles it (sweep 32ao R2: read mispaired, exit 0)
        with pytest.raises(ValueError, match="was being rewritten by an lbee command that was killed"):
            load_embeddings(out / "embeddings.npy", "embeddings", kind="image_embeddings")
    r = run([*cache, *map(str, args)])  # refused without --overwrite, it still settles the kill (sweep 32h U-4)
    assert r.exit_code != 0 and "--overwrite" in r.output, r.output
    assert not [p for p in tmp_path.iterdir() if ".lbee-" in p.name] and recover_leftovers(out) == []
    img, _ = load_embeddings(out / "embeddings.npy", "embeddings", kind="image_embeddings")
    sen, _ = load_embeddings(out / "sentence_embeddings.npy", "s", kind="sentence_embeddings")
    ids, texts = (out / "ids.txt").read_text().split(), (out / "sentences.txt").read_text().splitlines()
    assert (len(img), len(ids), len(sen), len(texts)) == ((4, 4, 2, 2) if step == "staged" else (6, 6, 3, 3))
    again = ["embed", "--sentences", tmp_path / "two.txt", "--encoder", "stubtest", "--out", out, "--overwrite"]
    r = run([*cache, *map(str, again)])
    assert r.exit_code == 0 and (out / "ids.txt").read_text().split() == ids  # another part's files stay


def test_embed_refuses_to_replace_arrays_without_overwrite(images, tmp_path, monkeypatch):
    """Sweep #8: a second embed into the same folder replaced 2000 rows by 5, with no --overwrite and no word."""
    import lbee.run.embed as embed_mod

    out = tmp_path / "emb"
    assert run(["embed", str(images), "--encoder", "stubtest", "--out", str(out)]).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    # a sentences-only embed into a folder holding only the images' part replaces nothing: allowed, images' files stay
    r = run(["embed", "--sentences", str(_sentences(tmp_path)), "--encoder", "stubtest", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert all((out / name).read_bytes() == data for name, data in before.items())
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def no_work(*args, **kwargs):
        raise AssertionError("the refusal comes before any work")

    monkeypatch.setattr(embed_mod, "load_encoder", no_work)
    for extra in (["--sentences", str(_sentences(tmp_path))], [str(images)]):
        r = CliRunner().invoke(cli, ["embed", *extra, "--encoder", "stubtest", "--out", str(out)], obj={})
        assert r.exit_code == 2 and "already exists" in r.output and "--overwrite" in r.output, r.output
        assert ("sentence_embeddings.npy" if "--sentences" in extra else "embeddings.npy") in r.output
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    monkeypatch.undo()
    r = run(["embed", str(images), "--encoder", "stubtest", "--out", str(out), "--overwrite"])
    assert r.exit_code == 0, r.output
    assert (out / "sentences.txt").read_bytes() == before["sentences.txt"]  # the other part stays


def test_encoder_typo_fails_before_any_work(tmp_path):
    """Case 12: the spec is checked from the registry and open_clip's config files, without loading torch."""
    r = CliRunner().invoke(
        cli,
        ["embed", "--sentences", "conditions", "--encoder", "open_clip:ViT-B-3", "--out", str(tmp_path / "e")],
        obj={},
    )
    assert r.exit_code == 2 and "unknown open_clip model 'ViT-B-3' (did you mean 'ViT-B-32'?)" in r.output
    r = CliRunner().invoke(
        cli, ["embed", "--sentences", "conditions", "--encoder", "open_clp", "--out", str(tmp_path / "e")], obj={}
    )
    assert r.exit_code == 2 and "unknown encoder 'open_clp' (did you mean 'open_clip'?)" in r.output


def _sentences(tmp_path):
    path = tmp_path / "two.txt"
    path.write_text("A dog\nA cat\n")
    return path


def test_service_says_which_tau_it_assumed_for_bare_arrays():
    from lbee.service.explain import explain_request

    X, S, phi, _ = planted_world(noise=0.01)
    body = {"image_embeddings": X.tolist(), "sentence_embeddings": S.tolist(), "confidence": phi.tolist()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = explain_request(dict(body, settings={"clusters": 2}))
        assert any("τ = 0.25 (CLIP's) was assumed" in w for w in out["warnings"])
        out = explain_request(dict(body, settings={"clusters": 2, "tau": 0.08}))
    assert not any("was assumed" in w for w in out["warnings"]) and out["settings"]["tau"] == 0.08


def test_encoders_that_cannot_describe_photos_are_named(tmp_path):
    """Item 3: --encoder spotcheck on images that are not renders, and @random weights, are said plainly."""
    from lbee.encoders._registry import encoder_caveat

    assert "trained on SpotCheck renders only" in encoder_caveat("spotcheck", tmp_path)
    (tmp_path / "ec.json").write_text('{"version": 2, "dataset": {"layers": []}}')
    (tmp_path / "images").mkdir()
    (tmp_path / "metadata.parquet").write_bytes(b"")
    (tmp_path / "model.pt").write_bytes(b"")  # a whole world: an ec.json alone lifted it (sweep 32av B3)
    from PIL import Image

    Image.new("RGB", (8, 8)).save(tmp_path / "images" / "0.png")
    assert encoder_caveat("spotcheck", tmp_path / "images") is None  # a saved SpotCheck world's renders
    assert "the encoder open_clip:ViT-B-32 was never trained" in encoder_caveat("open_clip:ViT-B-32@random")
    assert encoder_caveat("open_clip:ViT-B-32@laion2b_s34b_b79k") is None


def test_embed_warns_once_for_spotcheck_on_photos(images, tmp_path, monkeypatch):
    import lbee.encoders._registry as reg

    monkeypatch.setitem(reg._REGISTRY, "spotcheck", StubEncoder)  # no model load: only the warning matters
    r = run(["embed", str(images), "--encoder", "spotcheck", "--out", str(tmp_path / "e")])
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split())
    assert said.count("trained on SpotCheck renders only") == 1
    assert "unless they are SpotCheck renders" in said  # sweep #43: renders copied out of a world are not blamed


def test_library_explain_names_the_tau_it_assumes_for_bare_arrays():
    import lbee

    rng = np.random.default_rng(0)
    X, S, phi = rng.normal(size=(60, 8)), rng.normal(size=(20, 8)), rng.random(60)
    with pytest.warns(ProvenanceWarning, match="τ = 0.25 \\(CLIP's\\) is assumed") as caught:
        e = lbee.explain(X, S, confidence=phi, n_clusters=3)
    assert e.params["tau"] == 0.25
    # the second new user: it pointed inside lbee (core/explain.py) and gave the CLI's advice to a Python caller
    (w,) = [w for w in caught if issubclass(w.category, ProvenanceWarning)]
    assert w.filename == __file__ and "Pass τ explicitly (tau=)" in str(w.message), (w.filename, str(w.message))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProvenanceWarning)
        assert lbee.explain(X, S, confidence=phi, n_clusters=3, tau=0.3).params["tau"] == 0.3


# ---------------------------------------------------------------- issue 32: a sidecar is evidence, not trust


def _edit_sidecar(path, **changes):
    side = sidecar_path(path)
    record = json.loads(side.read_text())
    for key, value in changes.items():
        if key == "encoder_model":
            record["encoder"]["model"] = value
        else:
            record[key] = value
    side.write_text(json.dumps(record))


def test_sidecars_disagreeing_on_tau_are_refused(world):
    _edit_sidecar(world / "sen.npy", tau=0.25)  # the image sidecar says 0.0816: which one was used went unsaid
    r = CliRunner().invoke(cli, ["describe", *_describe_args(world)], obj={})
    said = " ".join(r.output.split())
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert f"image_embeddings '{world / 'img.npy'}' declare τ = 0.0816 but sentence_embeddings" in said
    assert f"'{world / 'sen.npy'}' τ = 0.25" in said
    # the encoder used now is a side too: its τ against a sidecar's
    with pytest.raises(ValueError, match="sentence embeddings declare τ = 0.25 but the encoder used now τ = 0.0816"):
        check_pair(
            None,
            load_embeddings(world / "sen.npy", "s")[1],
            encoder_identity=StubEncoder().identity(),
            encoder_tau=STUB_TAU,
        )


def test_a_null_tau_beside_a_number_is_refused(world):
    """Sweep 30: `tau: null` in one sidecar (CLIP's 0.25 applies) and 0.0816 in the other: the number was used
    without a word."""
    _edit_sidecar(world / "sen.npy", tau=None)
    r = CliRunner().invoke(cli, ["describe", *_describe_args(world)], obj={})
    said = " ".join(r.output.split())
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert "declare τ = 0.0816 but sentence_embeddings" in said and "τ = None (null: none" in said


def test_a_missing_data_digest_is_refused(world):
    _edit_sidecar(world / "img.npy", data_sha256=None)
    np.save(world / "img.npy", np.ones((24, 8), np.float32))  # replaced: the null digest let it pass
    with pytest.raises(ValueError, match="img.provenance.json is not a valid provenance record.*'data_sha256' is None"):
        load_embeddings(world / "img.npy", "--image-embeddings")


def test_a_tampered_encoder_is_named_by_what_differs(world):
    _edit_sidecar(world / "sen.npy", encoder_model="other")  # encoder_spec still says 'stubtest'
    r = CliRunner().invoke(cli, ["describe", *_describe_args(world)], obj={})
    said = " ".join(r.output.split())
    assert r.exit_code == 1, r.output
    assert "come from stubtest:stub (weights tag:w1, spec 'stubtest') but sentence_embeddings" in said
    assert "from stubtest:other (weights tag:w1, spec 'stubtest') (model 'stub' vs 'other')" in said


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, " " * (2 << 20) + "{}"])
def test_a_deeply_nested_or_huge_sidecar_is_a_clear_error(world, text):
    sidecar_path(world / "img.npy").write_text(text)  # the first: "maximum recursion depth exceeded"
    with pytest.raises(ValueError, match="img.provenance.json.*(nested too deep|bytes\\) is not a provenance record)"):
        load_embeddings(world / "img.npy", "--image-embeddings")


def _describe_args(p):
    return [
        "--image-embeddings",
        str(p / "img.npy"),
        "--sentence-embeddings",
        str(p / "sen.npy"),
        "--sentences",
        str(p / "sents.txt"),
        "--predictions",
        str(p / "pred.csv"),
        "--clusters",
        "2",
        "-k",
        "1",
        "--out",
        str(p / "out"),
    ]


@pytest.fixture
def embedded(tmp_path):
    """``lbee embed`` of 24 images (embeddings.npy + ids.txt) and of two sentences, by the stub encoder."""
    from PIL import Image

    folder = tmp_path / "imgs"
    folder.mkdir()
    for i in range(24):
        Image.fromarray(np.full((4, 4, 3), (10 * i, 240 - 10 * i, (i % 4) * 60), np.uint8)).save(
            folder / f"f{i:02d}.png"
        )
    r = run(
        [
            "--cache-dir",
            str(tmp_path / "cache"),
            "embed",
            str(folder),
            "--sentences",
            str(_sentences(tmp_path)),
            "--encoder",
            "stubtest",
            "--out",
            str(tmp_path / "emb"),
        ]
    )
    assert r.exit_code == 0, r.output
    return tmp_path


def _describe_embedded(p, ids, extra=()):
    pd.DataFrame({"image": ids, "confidence": np.linspace(0, 1, len(ids))}).to_csv(p / "pred.csv", index=False)
    return CliRunner().invoke(
        cli,
        [
            "describe",
            "--image-embeddings",
            str(p / "emb" / "embeddings.npy"),
            "--sentence-embeddings",
            str(p / "emb" / "sentence_embeddings.npy"),
            "--sentences",
            str(p / "emb" / "sentences.txt"),
            "--predictions",
            str(p / "pred.csv"),
            "--clusters",
            "2",
            "-k",
            "1",
            "--out",
            str(p / "out"),
            *extra,
        ],
        obj={},
    )


def test_embedding_rows_are_checked_against_the_predictions_ids(embedded):
    ids = (embedded / "emb" / "ids.txt").read_text().splitlines()
    r = _describe_embedded(embedded, ids[::-1])  # another row order than ids.txt: rows were mispaired in silence
    said = " ".join(r.output.split())
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert "row 1 is the image 'f00.png' (ids.txt, line 1) but row 1 of the predictions table" in said
    assert "is 'f23.png'; expected the same images in the same order" in said
    r = _describe_embedded(embedded, [f"/data/imgs/{i}" for i in ids])  # the same images, as paths: accepted
    assert r.exit_code == 0, r.output
    r = _describe_embedded(embedded, ids[:-1], ["--overwrite"])  # a row short
    assert r.exit_code == 1
    assert re.search(r"has 24 rows \(ids.txt\) for \d+ images \(the predictions table", " ".join(r.output.split()))


def test_an_ids_file_of_another_array_is_refused(embedded):
    (embedded / "emb" / "ids.txt").write_text("f00.png\nf01.png\n")  # written apart from the 24-row array
    r = _describe_embedded(embedded, [f"f{i:02d}.png" for i in range(24)])
    assert r.exit_code == 1
    assert "ids.txt is not the row ids file written with image_embeddings" in " ".join(r.output.split()), r.output
    # a record without the digest (an older lbee's): the ids are still counted against the rows
    import json

    side = embedded / "emb" / "embeddings.provenance.json"
    side.write_text(json.dumps({k: v for k, v in json.loads(side.read_text()).items() if k != "ids_sha256"}))
    r = _describe_embedded(embedded, [f"f{i:02d}.png" for i in range(24)], ["--overwrite"])
    assert r.exit_code == 1 and "ids.txt lists 2 image ids but image_embeddings" in " ".join(r.output.split())


def test_the_ids_file_of_another_embedding_run_of_the_same_images_is_refused(embedded):
    """Sweep 32ak B5: ids.txt was bound to nothing. Another `lbee embed` of the same images in another order wrote
    its ids.txt; copied beside these rows, with the predictions in its order, every row was read as another image's
    embedding without a word (131 of 200 images in another group)."""
    ids = (embedded / "emb" / "ids.txt").read_text().splitlines()
    assert _describe_embedded(embedded, ids).exit_code == 0
    (embedded / "emb" / "ids.txt").write_text("".join(f"{i}\n" for i in ids[::-1]))
    r = _describe_embedded(embedded, ids[::-1], ["--overwrite"])
    assert r.exit_code == 1, r.output
    said = " ".join(r.output.split())
    assert "ids.txt is not the row ids file written with image_embeddings" in said and "put back the ids.txt" in said


def test_two_row_ids_files_that_disagree_are_refused(embedded):
    """Sixth sweep W7: with embeddings.ids.txt (right) and ids.txt (two rows swapped) beside the array, the first
    won and the other was ignored in silence."""
    ids = (embedded / "emb" / "ids.txt").read_text().splitlines()
    (embedded / "emb" / "embeddings.ids.txt").write_text("\n".join(ids) + "\n")
    assert _describe_embedded(embedded, ids).exit_code == 0  # the same ids twice: fine
    swapped = [ids[1], ids[0], *ids[2:]]
    (embedded / "emb" / "ids.txt").write_text("\n".join(swapped) + "\n")
    r = _describe_embedded(embedded, ids, ["--overwrite"])
    said = " ".join(r.output.split())
    assert r.exit_code == 1 and "two row ids files that disagree, embeddings.ids.txt and ids.txt" in said, said


def test_embeddings_of_same_named_images_from_another_folder_are_refused(embedded):
    """Sixth sweep W4: `lbee embed data/val`, then predictions naming data/test/0000N.png (same file names, other
    images): ids.txt's bare names matched by their end and the val embeddings were used for the test images."""
    import json
    import shutil

    from PIL import Image

    p = embedded
    prov = json.loads((p / "emb" / "embeddings.provenance.json").read_text())
    assert prov["images_folder"] == str((p / "imgs").resolve())
    ids = (p / "emb" / "ids.txt").read_text().splitlines()
    other = p / "test"
    other.mkdir()
    for name in ids:  # the same names, other pictures
        Image.fromarray(np.full((4, 4, 3), 7, np.uint8)).save(other / name)
    r = _describe_embedded(p, [str(other / i) for i in ids])
    said = " ".join(r.output.split())
    assert r.exit_code == 1 and "row 1 was embedded from" in said and "another image (the two files differ)" in said
    copy = p / "copy"
    shutil.copytree(p / "imgs", copy)  # the same pictures in another folder: the same images
    assert _describe_embedded(p, [str(copy / i) for i in ids], ["--overwrite"]).exit_code == 0
    assert _describe_embedded(p, [f"/data/imgs/{i}" for i in ids], ["--overwrite"]).exit_code == 0  # unreadable


def test_describe_with_spotcheck_on_photos_carries_the_banner_once(images, tmp_path, monkeypatch):
    """The second new user: only stderr said that the spotcheck encoder's sentences mean nothing on their photos;
    the shared HTML page and report.md looked like a real audit. Now the banner (as for random weights) says so,
    once."""
    import lbee.encoders._registry as reg

    monkeypatch.setitem(reg._REGISTRY, "spotcheck", StubEncoder)
    names = sorted(p.name for p in images.iterdir() if p.suffix == ".png")
    pd.DataFrame({"image": names, "confidence": np.linspace(0, 1, len(names))}).to_csv(tmp_path / "p.csv", index=False)
    args = ["describe", str(images), "--encoder", "spotcheck", "--predictions", str(tmp_path / "p.csv")]
    r = run(args + ["--sentences", str(_sentences(tmp_path)), "--clusters", "2", "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split())
    assert said.count("trained on SpotCheck renders only") == 1 and "Meaningless sentences" in said, said
    assert "Meaningless sentences: the encoder 'spotcheck'" in (tmp_path / "o" / "report.md").read_text()


def test_embeddings_without_row_ids_say_which_images_their_first_and_last_rows_are_taken_as(embedded):
    """An eleventh user's bare .npy had its rows in generation order: nothing could check it, and nothing said so."""
    ids = (embedded / "emb" / "ids.txt").read_text().splitlines()
    (embedded / "emb" / "ids.txt").unlink()
    r = _describe_embedded(embedded, ids)  # lbee embed recorded the ids file: gone, the rows are refused (32ao R2)
    assert r.exit_code == 1 and "records the ids file written with it, but none is beside it" in r.output, r.output
    record = embedded / "emb" / "embeddings.provenance.json"
    record.write_text(json.dumps({k: v for k, v in json.loads(record.read_text()).items() if k != "ids_sha256"}))
    r = _describe_embedded(embedded, ids)  # a record of rows with no ids file: bare rows, said
    said = " ".join(r.output.split())
    assert r.exit_code == 0, r.output
    assert "'embeddings.npy' has no row ids beside it (embeddings.ids.txt or ids.txt)" in said, said
    assert f"(row 1 is '{ids[0]}', row 24 '{ids[-1]}')" in said and said.count("has no row ids") == 1


def test_rows_in_another_order_than_a_folder_s_suggest_a_manifest(tmp_path):
    """A twelfth user was told to reorder a folder of images, which is read in sorted order and cannot be."""
    from lbee.io.row_ids import check_row_ids

    np.save(tmp_path / "x.npy", np.zeros((2, 3), np.float32))
    (tmp_path / "x.ids.txt").write_text("b.png\na.png\n")
    with pytest.raises(ValueError, match="give a manifest instead of the folder") as err:
        check_row_ids(tmp_path / "x.npy", 2, ["a.png", "b.png"], "x", against="the images of 'imgs'", from_folder=True)
    assert "reorder" not in str(err.value)
    # embeddings of other images are likelier than a reordering (trial 41): re-embedding is offered first
    assert "re-embed the folder with `lbee embed`, or give a manifest" in str(err.value)
    with pytest.raises(ValueError, match="reorder the predictions table"):
        check_row_ids(tmp_path / "x.npy", 2, ["a.png", "b.png"], "x", against="the predictions table 'p.csv'")


def test_a_record_of_another_identity_is_refused_when_written():
    """A thirteenth user wrote a record with 'backend' that load_embeddings then refused."""
    from lbee.io.provenance import make_provenance

    with pytest.raises(ValueError, match=r"text under \['encoder', 'weights'\].*received \['backend'\]"):
        make_provenance("image_embeddings", np.zeros((2, 3)), identity={"backend": "x"})
    record = make_provenance("image_embeddings", np.zeros((2, 3)), identity={"encoder": "e", "weights": "w"})
    assert record["encoder"]["encoder"] == "e"


def test_a_bare_array_beside_one_with_its_record_is_warned(tmp_path):
    """A twenty-first user's bare sentence embeddings beside image embeddings written with their record ran
    without a word, though nothing checked their sentences or their encoder (docs: bare arrays warn). Said once
    per run, from the records as read (sweep 32d: twice in a job's log, and of an embed folder that has one)."""
    import warnings

    import numpy as np

    from lbee.io.bare_arrays import warn_one_bare
    from lbee.io.provenance import ProvenanceWarning, make_provenance

    x = np.eye(3, 4)
    ident = {"encoder": "mine", "model": "m", "weights": "w"}
    image = make_provenance("image_embeddings", x, identity=ident, tau=0.2)
    with pytest.warns(ProvenanceWarning, match="run's sentences, in order, nor that they come from mine"):
        warn_one_bare(image, None, "image embeddings", "sentence embeddings")
    with pytest.warns(ProvenanceWarning, match="cannot check that they come from mine") as said:
        warn_one_bare(image, None, "image embeddings", "sentence embeddings", rows_checked=True)
    assert "in order" not in str(said[0].message)
    with pytest.warns(ProvenanceWarning, match="image embeddings carry no provenance"):
        warn_one_bare(None, {**image, "kind": "sentence_embeddings"}, "image embeddings", "sentence embeddings")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_one_bare(None, None, "a", "b")  # both bare: the assumed τ is warned where it is assumed
        warn_one_bare(image, image, "a", "b")


def test_an_embed_folder_beside_its_sentence_embeddings_is_not_called_bare(tmp_path, monkeypatch):
    """Sweep 32d: `--image-embeddings FOLDER` (lbee embed's) beside that folder's sentence embeddings was warned as
    carrying no provenance, though its record is read and used."""
    import warnings

    import numpy as np
    from click.testing import CliRunner
    from PIL import Image

    from lbee.cli import cli
    from lbee.io.provenance import make_provenance, write_embeddings

    monkeypatch.chdir(tmp_path)
    (tmp_path / "imgs").mkdir()
    for i in range(20):
        Image.new("RGB", (8, 8), (i * 10, 0, 0)).save(tmp_path / "imgs" / f"{i:02d}.png")
    (tmp_path / "preds.csv").write_text("image,confidence\n" + "".join(f"{i:02d}.png,0.{i:02d}\n" for i in range(20)))
    texts = ["An image of a", "An image of b"]
    (tmp_path / "s.txt").write_text("\n".join(texts) + "\n")
    rng = np.random.default_rng(0)
    x, s = rng.normal(size=(20, 4)), rng.normal(size=(2, 4))
    ident = {"encoder": "mine", "model": "m", "weights": "w"}
    (tmp_path / "emb").mkdir()
    write_embeddings(
        tmp_path / "emb" / "embeddings.npy", x, make_provenance("image_embeddings", x, identity=ident, tau=0.2)
    )
    (tmp_path / "emb" / "ids.txt").write_text("".join(f"{i:02d}.png\n" for i in range(20)))
    sp = make_provenance("sentence_embeddings", s, identity=ident, tau=0.2, sentences=texts)
    write_embeddings(tmp_path / "emb" / "sentence_embeddings.npy", s, sp)
    args = ["describe", "imgs", "--image-embeddings", "emb", "--sentence-embeddings", "emb/sentence_embeddings.npy"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = CliRunner().invoke(cli, [*args, "--sentences", "s.txt", "--predictions", "preds.csv", "--out", "r"], obj={})
    assert r.exit_code == 0, r.output
    assert "carry no provenance" not in r.output and not [w for w in caught if "no provenance" in str(w.message)]


def test_embed_carries_a_generated_sets_conditions_and_grammar(tmp_path):
    """Trial 40: `lbee embed --sentences bottles.txt` wrote emb/sentences.txt alone, and describe / lbee.audit read
    it as a plain set (no compose, no merging) without a word. The conditions and a grammar copy go with it now,
    and a plain set embedded over it with --overwrite takes them away."""
    from lbee.grammar import load_grammar
    from lbee.io.sentences import load_sentence_set

    grammar = tmp_path / "g" / "bottles.grammar.yaml"
    grammar.parent.mkdir()
    grammar.write_text(
        "name: bottles\nlead: A bottle\nsubjects:\n  - id: cap\n    noun: cap\n    deniable: true\n"
        "    attributes: []\nsettings:\n  - id: light\n    preposition: under\n    noun: backlight\n"
        "    attributes:\n      - {id: level, kind: adjective, values: {dim: dim, bright: bright}}\n"
    )
    sentences = tmp_path / "g" / "bottles.txt"
    assert run(["sentences", "generate", str(grammar), "--out", str(sentences)]).exit_code == 0
    given = load_sentence_set(sentences)
    out = tmp_path / "emb"
    r = run(["embed", "--sentences", str(sentences), "--encoder", "stubtest", "--out", str(out)])
    assert r.exit_code == 0, r.output
    grammar.unlink()  # the copy beside the embeddings is what is read: the set travels whole
    embedded = load_sentence_set(out / "sentences.txt")
    assert embedded.sentences == given.sentences and embedded.conditions == given.conditions
    assert embedded.grammar.digest == load_grammar(out / "sentences.grammar.yaml").digest
    plain = _sentences(tmp_path)
    r = run(["embed", "--sentences", str(plain), "--encoder", "stubtest", "--out", str(out), "--overwrite"])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == [
        "sentence_embeddings.npy",
        "sentence_embeddings.provenance.json",
        "sentences.txt",
    ]


def test_an_empty_split_is_refused_before_any_image_is_embedded(images, tmp_path, monkeypatch):
    """Trial 40: `--a 5` was refused ("The hard split is empty") only after every image had been embedded, and
    without the threshold; φ comes from the predictions, so it is refused first now, with both."""
    import lbee.encoders.embedding as embedding

    rng = np.random.default_rng(0)
    p = rng.random(4)
    pd.DataFrame(
        {"image": [f"f{i}.png" for i in range(4)], "prob_a": p, "prob_b": 1 - p, "label": ["a", "b", "a", "b"]}
    ).to_csv(tmp_path / "preds.csv", index=False)

    def no_embedding(*args, **kwargs):
        raise AssertionError("embedded before the split was checked")

    monkeypatch.setattr(embedding, "embed_images", no_embedding)
    args = ["describe", str(images), "--predictions", str(tmp_path / "preds.csv"), "--encoder", "stubtest"]
    r = CliRunner().invoke(cli, [*args, "--a", "5", "--out", str(tmp_path / "o")], obj={})
    assert r.exit_code == 1 and "The hard split is empty" in r.output and "smaller --a" in r.output, r.output
    assert "hard is φ < μ − aσ = " in r.output and "φ runs from" in r.output and "embedded before" not in r.output
    r = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "o2")], obj={})  # a = 0.2 passes the check
    assert "embedded before the split was checked" in str(r.exception), r.output
