"""VQA pseudo ground truth: questions, parsing, combination, tiny real LLaVA / BLIP, caching, CLI."""

import numpy as np
import pandas as pd
import pytest
import torch
from click.testing import CliRunner
from PIL import Image
from vqa_tiny import tiny_blip, tiny_llava

import vqa
from lbee.cli import cli
from lbee.io.sentences import list_sentence_sets, load_sentence_set

QS = [
    "Was the image taken at night? Reply simply with 'yes' or 'no'.",
    "Does the image have a square?",
    "Is this a circle?",
]


def images(folder, n=3):
    rng = np.random.default_rng(0)
    paths = []
    for i in range(n):
        p = folder / f"im{i}.png"
        Image.fromarray((rng.random((30 + i, 40, 3)) * 255).astype("uint8")).save(p)
        paths.append(str(p))
    return paths


def rig(head, word_id, vocab):
    """Make an LM head always prefer one token (zero weights, a one-hot bias)."""
    new = torch.nn.Linear(head.in_features, vocab, bias=True)
    torch.nn.init.zeros_(new.weight)
    with torch.no_grad():
        new.bias.zero_()
        new.bias[word_id] = 10.0
    return new


# ---------------------------------------------------------------- questions and parsing
@pytest.mark.parametrize("name", list_sentence_sets())
def test_every_builtin_sentence_gets_a_question(name):
    sentences = load_sentence_set(name).sentences
    questions, missing = vqa.questions_for(sentences)
    assert missing == []
    assert all(q.endswith("Reply simply with 'yes' or 'no'.") and "?" in q for q in questions)


def test_question_rules_and_overrides(tmp_path):
    assert (
        vqa.sentence_to_question("An image taken at night")
        == "Was the image taken at night? Reply simply with 'yes' or 'no'."
    )
    assert vqa.sentence_to_question("An image of a tench", suffix="") == "Does the image show a tench?"
    assert vqa.sentence_to_question("An image with motion blur", suffix="") == "Does the image have motion blur?"
    assert vqa.sentence_to_question("A blurry image", suffix="") == "Is this a blurry image?"
    assert vqa.sentence_to_question("Cars everywhere") is None
    q, missing = vqa.questions_for(["Cars everywhere", "An image taken at dawn"])
    assert missing == ["Cars everywhere"] and q[0] is None
    f = tmp_path / "o.tsv"
    f.write_text("# mine\nCars everywhere\tAre there many cars?\n")
    q, missing = vqa.questions_for(["Cars everywhere"], f)
    assert q == ["Are there many cars?"] and missing == []
    with pytest.raises(ValueError, match="non-empty"):
        vqa.sentence_to_question("  ")
    f.write_text("Cars everywhere\t \n")
    with pytest.raises(ValueError, match="empty question"):
        vqa.questions_for(["Cars everywhere"], f)


@pytest.mark.parametrize(
    "text,value",
    [
        ("yes", True),
        ("Yes, it is.", True),
        ("NO.", False),
        (" no it isn't", False),
        ("maybe", None),
        ("", None),
        (None, None),
        ("The answer: yes", None),
    ],
)
def test_parse_answer(text, value):
    assert vqa.parse_answer(text) is value


# ---------------------------------------------------------------- combination and agreement
def test_combine_and_agreement_by_hand():
    a = np.array([[1, 1, 0, 0]], bool)
    b = np.array([[1, 0, 1, 0]], bool)
    c = np.array([[1, 0, 0, 0]], bool)
    assert vqa.combine({"a": a, "b": b}, "and").tolist() == [[True, False, False, False]]
    assert vqa.combine({"a": a, "b": b}, "or").tolist() == [[True, True, True, False]]
    assert vqa.combine({"a": a, "b": b, "c": c}, "majority").tolist() == [[True, False, False, False]]
    with pytest.raises(ValueError, match="`combine` must be one of"):
        vqa.combine({"a": a}, "xor")
    truth = np.array([[1, 1, 0, 0]], bool)
    s = vqa.agreement(b, truth)
    assert s == {"accuracy": 0.5, "TP": 0.5, "TN": 0.5, "FP": 0.5, "FN": 0.5}
    rows = vqa.agreement_table({"a": a, "b": b}, truth)
    assert [r["name"] for r in rows] == ["a", "b", "a & b", "a | b", "a maj b"]
    assert rows[0]["accuracy"] == 1.0 and rows[2]["FN"] == 0.5 and rows[3]["FP"] == 0.5


# ---------------------------------------------------------------- tiny real backends
def test_llava_backend_scores_yes_no_from_logits_and_text(tmp_path):
    model, proc = tiny_llava(tmp_path)
    imgs = [Image.open(p) for p in images(tmp_path)]
    backend = vqa.LlavaBackend("tiny", model_obj=model, processor=proc, device="cpu")
    p = backend.answer(imgs, QS)
    assert p.shape == (3,) and np.all((p > 0) & (p < 1))
    yes = proc.tokenizer.convert_tokens_to_ids("yes")
    no = proc.tokenizer.convert_tokens_to_ids("no")
    model.lm_head = rig(model.lm_head, yes, len(proc.tokenizer))
    assert np.all(backend.answer(imgs, QS) > 0.99)
    gen = vqa.LlavaBackend("tiny", model_obj=model, processor=proc, device="cpu", scoring="generate")
    assert gen.answer(imgs, QS).tolist() == [1.0, 1.0, 1.0]
    model.lm_head = rig(model.lm_head, no, len(proc.tokenizer))
    assert np.all(backend.answer(imgs, QS) < 0.01) and gen.answer(imgs, QS).tolist() == [0.0, 0.0, 0.0]


def test_blip_backend_scores_yes_no_from_logits_and_text(tmp_path):
    model, proc = tiny_blip(tmp_path)
    imgs = [Image.open(p) for p in images(tmp_path)]
    backend = vqa.BlipBackend("tiny", model_obj=model, processor=proc, device="cpu")
    p = backend.answer(imgs, QS)
    assert p.shape == (3,) and np.all((p > 0) & (p < 1))
    head = model.text_decoder.cls.predictions
    yes = proc.tokenizer.convert_tokens_to_ids("yes")
    head.decoder = rig(head.decoder, yes, len(proc.tokenizer))
    assert np.all(backend.answer(imgs, QS) > 0.99)
    gen = vqa.BlipBackend("tiny", model_obj=model, processor=proc, device="cpu", scoring="generate")
    assert gen.answer(imgs, QS).tolist() == [1.0, 1.0, 1.0]


def test_unknown_backend_ofa_and_out_of_memory(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="Unknown VQA backend 'gpt'; valid backends: blip, callable, llava"):
        vqa.create_backend("gpt")
    with pytest.raises(vqa.VQAError, match="OFA-Sys fork"):
        vqa.create_backend("ofa")
    model, proc = tiny_blip(tmp_path)
    backend = vqa.BlipBackend("tiny", model_obj=model, processor=proc, device="cpu")

    def boom(*a, **k):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20 GiB")

    monkeypatch.setattr(backend, "_first_token_logits", boom)
    with pytest.raises(vqa.VQAError, match="does not fit on device 'cpu'.*--device cpu"):
        backend.answer([Image.open(images(tmp_path, 1)[0])], QS[:1])


# ---------------------------------------------------------------- the runner: batching, cache, resume, bad input
def test_runner_end_to_end_with_cache_and_resume(tmp_path, monkeypatch):
    import vqa.runner as runner

    paths = images(tmp_path, 4)
    (tmp_path / "bad.png").write_bytes(b"not an image")
    m1, p1 = tiny_llava(tmp_path)
    m2, p2 = tiny_blip(tmp_path)
    backends = {
        "llava": vqa.LlavaBackend("tiny-l", model_obj=m1, processor=p1, device="cpu"),
        "blip": vqa.BlipBackend("tiny-b", model_obj=m2, processor=p2, device="cpu"),
    }
    sentences = ["An image taken at night", "An image with a square", "A photo of a circle"]
    with pytest.warns(UserWarning, match="Skipped 1 unreadable"):
        res = vqa.compute_relevance(
            paths + [str(tmp_path / "bad.png")], sentences, backends, cache_dir=tmp_path / "c", batch_size=5
        )
    assert res.relevance.shape == (4, 3) and len(res.failures) == 1 and res.n_computed == {"llava": 12, "blip": 12}
    assert np.array_equal(res.relevance, res.answers["llava"] & res.answers["blip"])
    frame = res.to_frame()
    assert list(frame.columns) == ["image", "sentence", "question", "llava_p", "llava", "blip_p", "blip", "relevant"]
    again = vqa.compute_relevance(paths, sentences, backends, cache_dir=tmp_path / "c")
    assert again.n_computed == {"llava": 0, "blip": 0}
    assert np.allclose(again.probabilities["llava"], res.probabilities["llava"])
    # an interrupted run keeps what it answered
    monkeypatch.setattr(runner, "FLUSH_EVERY", 1)
    calls = []
    real = backends["blip"].answer

    def dying(*a, **k):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(1)
        return real(*a, **k)

    backends["blip"].answer = dying
    with pytest.raises(KeyboardInterrupt):
        vqa.compute_relevance(paths, sentences, {"blip": backends["blip"]}, cache_dir=tmp_path / "c2", batch_size=2)
    backends["blip"].answer = real
    resumed = vqa.compute_relevance(
        paths, sentences, {"blip": backends["blip"]}, cache_dir=tmp_path / "c2", batch_size=2
    )
    assert resumed.n_computed == {"blip": 12 - 4}


def test_invalid_answers_are_counted_and_treated_as_no(tmp_path):
    paths = images(tmp_path, 2)
    answers = iter(["Yes, it is.", "maybe", "no", "purple"])
    backend = vqa.CallableBackend(lambda imgs, qs: [next(answers) for _ in qs])
    res = vqa.compute_relevance(
        paths, ["An image taken at night", "A blurry image"], {"mine": backend}, use_cache=False
    )
    assert res.invalid == {"mine": 2}
    assert res.relevance.tolist() == [[True, False], [False, False]]
    with pytest.raises(ValueError, match="question\\(s\\) are empty"):
        vqa.compute_relevance(paths, ["x"], {"mine": backend}, questions=[""], use_cache=False)
    with pytest.raises(ValueError, match="no question"):
        vqa.compute_relevance(paths, ["Cars everywhere"], {"mine": backend}, use_cache=False)


def test_metadata_backend_reproduces_spotcheck_relevance(tmp_path):
    from lbee.spotcheck import ATTRIBUTES, DatasetDefinition, relevance_matrix, render, spotcheck_sentences

    rng = np.random.default_rng(0)
    d = DatasetDefinition(
        ["background", "square", "circle", "text"],
        [k for k in ATTRIBUTES if k[0] in ("background", "square", "circle", "text")],
    )
    paths, attrs = [], {}
    for i in range(12):
        img, a = render(d.sample_attributes(rng), rng, 32)
        p = tmp_path / f"s{i}.png"
        Image.fromarray(img).save(p)
        paths.append(str(p))
        attrs[f"s{i}.png"] = a
    sents = spotcheck_sentences()
    conds = {s: c for s, c, _ in sents}
    backend = vqa.MetadataBackend(
        function=lambda image_id, s: all(attrs[image_id].get(k) == v for k, v in conds[s].items())
    )
    texts = [s for s, _, _ in sents]
    res = vqa.compute_relevance(
        paths, texts, {"metadata": backend}, image_ids=[f"s{i}.png" for i in range(12)], use_cache=False
    )
    assert np.array_equal(
        res.relevance, relevance_matrix([attrs[f"s{i}.png"] for i in range(12)], [c for _, c, _ in sents])
    )


# ---------------------------------------------------------------- CLI with locally saved tiny models
def test_cli_vqa_with_saved_models_and_agreement(tmp_path):
    folder = tmp_path / "imgs"
    folder.mkdir()
    images(folder, 3)
    for name, build in (("llava", tiny_llava), ("blip", tiny_blip)):
        model, proc = build(tmp_path)
        model.save_pretrained(tmp_path / name)
        proc.save_pretrained(tmp_path / name)
    (tmp_path / "s.txt").write_text("An image taken at night\nAn image with a square\n")
    out = tmp_path / "rel.parquet"
    args = [
        "--cache-dir",
        str(tmp_path / "c"),
        "--device",
        "cpu",
        "-q",
        "vqa",
        "--images",
        str(folder),
        "--sentences",
        str(tmp_path / "s.txt"),
        "--backend",
        "llava+blip",
        "--llava-model",
        str(tmp_path / "llava"),
        "--blip-model",
        str(tmp_path / "blip"),
        "--out",
        str(out),
    ]
    r = CliRunner().invoke(cli, args, obj={})
    assert r.exit_code == 0, r.output
    table = pd.read_parquet(out)
    assert len(table) == 6 and {"llava_p", "blip_p", "relevant"} <= set(table.columns)
    truth = table[["image", "sentence"]].assign(relevant=[True, False] * 3)
    truth.to_csv(tmp_path / "truth.csv", index=False)
    r = CliRunner().invoke(
        cli, ["vqa", "agreement", "--pseudo", str(out), "--truth", str(tmp_path / "truth.csv")], obj={}
    )
    assert r.exit_code == 0, r.output
    assert "llava & blip" in r.output and "Accuracy" in r.output
    r = CliRunner().invoke(cli, args[:-2] + ["--backend", "llava+nope"], obj={})
    assert r.exit_code == 1 and "Unknown VQA backend 'nope'" in r.output
    # lbee describe + lbee evaluate --relevance <the VQA output>
    rng = np.random.default_rng(0)
    np.save(tmp_path / "img.npy", rng.normal(size=(3, 8)))
    np.save(tmp_path / "sen.npy", rng.normal(size=(2, 8)))
    pd.DataFrame({"image": ["im0.png", "im1.png", "im2.png"], "confidence": [0.0, 0.5, 1.0]}).to_csv(
        tmp_path / "pred.csv", index=False
    )
    r = CliRunner().invoke(
        cli,
        [
            "describe",
            "--image-embeddings",
            str(tmp_path / "img.npy"),
            "--sentence-embeddings",
            str(tmp_path / "sen.npy"),
            "--sentences",
            str(tmp_path / "s.txt"),
            "--predictions",
            str(tmp_path / "pred.csv"),
            "--out",
            str(tmp_path / "run"),
            "-k",
            "1",
        ],
        obj={},
    )
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["evaluate", str(tmp_path / "run"), "--relevance", str(out)], obj={})
    assert r.exit_code == 0 and "fpdiff" in r.output, r.output


def test_cli_vqa_refuses_to_replace_an_existing_out_file(tmp_path, monkeypatch):
    """Sweep #11: an existing --out file was replaced without --overwrite."""
    folder = tmp_path / "imgs"
    folder.mkdir()
    images(folder, 2)
    (tmp_path / "s.txt").write_text("An image taken at night\n")
    pd.DataFrame(
        {"image": ["im0.png", "im1.png"], "sentence": ["An image taken at night"] * 2, "relevant": [1, 0]}
    ).to_csv(tmp_path / "meta.csv", index=False)
    out = tmp_path / "vq.parquet"
    out.write_text("precious")
    args = ["--cache-dir", str(tmp_path / "c"), "-q", "vqa", "--images", str(folder), "--sentences"]
    args += [
        str(tmp_path / "s.txt"),
        "--backend",
        "metadata",
        "--metadata",
        str(tmp_path / "meta.csv"),
        "--out",
        str(out),
    ]
    r = CliRunner().invoke(cli, args, obj={})
    assert r.exit_code == 2 and "vq.parquet' already exists" in r.output and "--overwrite" in r.output, r.output
    assert out.read_text() == "precious"
    r = CliRunner().invoke(cli, args[:-1] + [str(tmp_path / "meta.csv"), "--overwrite"], obj={})
    assert r.exit_code == 2 and "is the input file" in r.output, r.output  # never its own input
    r = CliRunner().invoke(cli, args[:-1] + [str(tmp_path / "s.txt"), "--overwrite"], obj={})  # ninth sweep L2
    assert r.exit_code == 2 and "is the input file" in r.output and "s.txt" in r.output, r.output
    assert (tmp_path / "s.txt").read_text() == "An image taken at night\n"
    r = CliRunner().invoke(cli, [*args, "--overwrite"], obj={})
    assert r.exit_code == 0, r.output
    assert pd.read_parquet(out)["relevant"].tolist() == [True, False]
