"""Sweep 27 (on 6366d78): --overwrite deleted a FIFO or a device inside an output folder (loss), the client and the
embedding cache read what a hostile server or file gave without bound (hangs), stored blocks and rows that
contradict one another loaded (silently wrong), and a clause beside two subjects read as the last one's."""

import json
import os
import shutil
import threading
import zipfile

import numpy as np
import pandas as pd
import pytest

from tests.test_sweep25 import rewrite_digested, run_copy


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_overwrite_never_deletes_a_fifo_inside_an_output_folder(tmp_path):
    """L-1: `lbee describe --out DIR --overwrite` with DIR/report.md a FIFO replaced it with a file."""
    from lbee.io.staging import OutputExistsError, staged_entries
    from lbee.run.outputs import check_out_folder

    out = tmp_path / "run"
    out.mkdir()
    (out / "explanation.json").write_text("{}")
    os.mkfifo(out / "report.md")
    with pytest.raises(OutputExistsError, match="report.md' is a FIFO .* never this one, even with --overwrite"):
        check_out_folder(out, overwrite=True)
    with pytest.raises(OutputExistsError, match="is a FIFO"):
        with staged_entries(out, replaces=("*",)) as stage:
            (stage / "report.md").write_text("new")
    assert (out / "report.md").is_fifo() and (out / "explanation.json").read_text() == "{}"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_cache_entries_that_are_not_plain_npz_files_are_misses(tmp_path):
    """H: a FIFO named like a shard blocked `lbee embed`; a 3 MB deflated shard took 3 GB."""
    from lbee.io.cache import EmbeddingCache

    cache = EmbeddingCache({"encoder": "x"}, tmp_path)
    cache.put_images(["a"], np.ones((1, 4), np.float32))
    os.mkfifo(cache.root / "images" / "shard-fifo.npz")
    bomb = cache.root / "images" / "shard-bomb.npz"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("embeddings.npy", b"\0" * (8 << 20))
    assert bomb.stat().st_size < 100_000
    got = {}
    reader = threading.Thread(target=lambda: got.update(EmbeddingCache({"encoder": "x"}, tmp_path).get_images(["a"])))
    reader.start()
    reader.join(60)  # a hang bound, not a timing: the FIFO blocked forever
    assert not reader.is_alive() and set(got) == {"a"}
    sentences = ["s1", "s2"]
    cache.put_sentences(sentences, np.eye(2, dtype=np.float32))
    path = cache._sentence_path(sentences)
    path.unlink()
    os.mkfifo(path)
    assert EmbeddingCache({"encoder": "x"}, tmp_path).get_sentences(sentences) is None


def test_the_client_bounds_a_groups_bytes():
    """H-1: one 40 MB row a page took the client past 2.7 GB."""
    import lbee.service.client as client

    class Fake(client.Client):
        def __init__(self):
            pass

        def metrics(self, job_id, model=None):
            return {"id": 1}

        def _request(self, method, path, body=None, **kw):
            return {"n": 1000, "n_pages": 1000, "rows": [{"image": "x" * 1_000_000}]}

    old = client.MAX_GROUP_BYTES
    client.MAX_GROUP_BYTES = 5_000_000
    try:
        with pytest.raises(client.ServiceError, match="rows pass 5,000,000 bytes"):
            Fake().group_images("j", 0)
    finally:
        client.MAX_GROUP_BYTES = old


def _statement(j, **values):
    return lambda p: p["confirmation"]["statements"][j].update(values)


CONTRADICTIONS = {
    "an unconfirmed statement marked confirmed": (
        lambda p: _statement(
            next(j for j, s in enumerate(p["confirmation"]["statements"]) if not s["significant"]),
            confirmed=True,
        )(p),
        "confirmed' is True; expected false: q = ",
    ),
    "a lift that is not its rates' ratio": (_statement(0, lift=50.0), "lift' is 50.0; expected about"),
    "a statement tested on other images": (_statement(0, n_out=1016, errors_out=154), "different totals"),
    "a hypothesis failing otherwise than its group": (
        lambda p: p["hypotheses"][0].update(hypothesis_error_rate=0.5),
        "hypotheses\\[0\\].hypothesis_error_rate' is 0.5",
    ),
    "settings that say another share held out": (lambda p: p["params"].update(confirm=0.5), "params.confirm"),
    "an interval away from its rate": (_statement(0, ci=[0.1, 0.2]), "an interval around its error_rate_in"),
    "a rule no run applies": (lambda p: p["confirmation"].update(q_level=7), "confirmation.q_level"),
    "a τ beyond a cosine": (lambda p: p["params"].update(tau=5), "params.tau"),
    "a bound above its estimate": (
        lambda p: p["hypotheses"][0].update(lower_bound=0.99999, error_concentration=0.5),
        "lower_bound",
    ),
    "a group above a group that is not there": (
        lambda p: p["confirmation"]["groups"][1]["beyond"].update(groups_above=[99]),
        "beyond.groups_above",
    ),
}


@pytest.mark.parametrize("case", sorted(CONTRADICTIONS))
def test_blocks_that_contradict_one_another_are_refused(demo_run, tmp_path, case):
    """SW (digests recomputed): an unconfirmed statement (q 0.593) marked confirmed was the client's strongest; a
    lift against its rates, totals of other images, a hypothesis's rate against its group's, params against the
    confirmation all loaded."""
    from lbee.run.stored import load_explanations

    run = run_copy(demo_run, tmp_path)
    edit, said = CONTRADICTIONS[case]
    payload = json.loads((run / "explanation.json").read_text())
    if case == "an unconfirmed statement marked confirmed":  # ranked lists each confirmed statement
        j = next(j for j, s in enumerate(payload["confirmation"]["statements"]) if not s["significant"])
        rewrite_digested(run / "explanation.json", lambda p: (edit(p), p["confirmation"]["ranked"].append(j)))
    else:
        rewrite_digested(run / "explanation.json", edit)
    with pytest.raises(ValueError, match=said):
        load_explanations(run / "explanation.json")


def test_rows_that_contradict_the_confirmation_are_refused(demo_run, tmp_path):
    """SW (every digest recomputed): a held-out image's ω flipped in both tables, and a held-out row given a
    sentence, loaded."""
    from lbee.reports.browse import IMAGE_COLUMNS
    from lbee.reports.stored_table import stored_images_table
    from lbee.run.outputs import assignments_digest, table_digest

    run = run_copy(demo_run, tmp_path)
    payload = json.loads((run / "explanation.json").read_text())
    one = payload["confirmation"]["held_out"][0]
    table, assign = pd.read_parquet(run / "images.parquet"), pd.read_parquet(run / "assignments.parquet")

    def forge(edit_table, edit_assign=lambda f: None):
        t, a = table.copy(), assign.copy()
        edit_table(t)
        edit_assign(a)
        t.to_parquet(run / "images.parquet")
        a.to_parquet(run / "assignments.parquet")
        digests = {"images_sha256": table_digest(t, IMAGE_COLUMNS), "assignments_sha256": assignments_digest(a)}
        shutil.copy(demo_run[0] / "explanation.json", run / "explanation.json")
        rewrite_digested(run / "explanation.json", lambda p: p.update(digests))

    def flip(f):
        f.loc[one, "performance"] = 1.0 - f.loc[one, "performance"]

    forge(flip, flip)
    with pytest.raises(ValueError, match="held-out images fail .* times by their ω"):
        stored_images_table(run)
    forge(lambda t: t.__setitem__("sentence", t["sentence"].where(t.index != one, "An image with a circle")))
    with pytest.raises(ValueError, match=f"row {one + 1}: a sentence for an image in no hard group"):
        stored_images_table(run)
    # a label changed against the correctness ω records; a held-out image made hard in the assignments
    assert payload.get("performance") == "correctness"
    right = table.index[table["label"] == table["prediction"]][0]
    forge(lambda t: t.__setitem__("label", t["label"].where(t.index != right, "another class")))
    with pytest.raises(ValueError, match=f"row {right + 1}: label, prediction and performance disagree"):
        stored_images_table(run)
    forge(lambda t: None, lambda a: a.__setitem__("split", a["split"].where(a.index != one, "hard")))
    with pytest.raises(ValueError, match=f"assignments.parquet' row {one + 1} is \\('hard', -1\\)"):
        stored_images_table(run)


def test_a_clause_beside_two_subjects_names_its_own(tmp_path):
    """SW: 'with a box and a shipping label, partly hidden' stated box.state=hidden."""
    from lbee.grammar import load_grammar

    (tmp_path / "g.grammar.yaml").write_text(
        "name: belt\nlead: A parcel with\nbare: A parcel\nsubjects:\n  - id: box\n    noun: box\n    attributes:\n"
        "      - id: state\n        kind: clause\n        values: {hidden: partly hidden, open: wide open}\n"
        "  - id: label\n    noun: shipping label\n    deniable: true\n"
    )
    g = load_grammar(tmp_path / "g.grammar.yaml")
    both = g.render({("box", "state"): "hidden", ("label", "presence"): "true"})
    assert both == "A parcel with a box and a shipping label, the box partly hidden"
    assert g.render({("box", "state"): "hidden"}) == "A parcel with a box, partly hidden"
