"""Sweep 32ap: another user's link as a sidecar, a table that contradicts its grammar, another user's killed writer."""

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

IDENTITY = {"encoder": "simulated", "model": "m", "weights": "seed-0"}
needs_root = pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to chown")

GRAMMAR = """name: smears
lead: A blood smear showing
bare: A blood smear
max_conditions: 2
subjects:
  - id: cell
    noun: white blood cell
    attributes:
      - id: type
        kind: noun
        values: {neutrophil: neutrophil, monocyte: monocyte}
  - id: artefact
    noun: stain artefact
    deniable: true
    attributes:
      - id: colour
        values: {red: red, blue: blue}
"""


@needs_root
def test_another_users_link_beside_an_input_is_not_its_sidecar(tmp_path):
    """B1: `nobody` linked `x.provenance.json` beside root's bare embeddings to a record of root's own: the link's
    target passed the owner rule, and the run took τ from the record nobody chose. The link itself is judged."""
    import pwd

    from lbee.io.provenance import make_provenance, read_provenance, write_embeddings

    x = np.eye(4, dtype=np.float32)
    (tmp_path / "mine").mkdir()
    write_embeddings(tmp_path / "mine" / "x.npy", x, make_provenance("image_embeddings", x, identity=IDENTITY, tau=0.1))
    np.save(tmp_path / "x.npy", x)  # the bare copy, beside which the link is planted
    link = tmp_path / "x.provenance.json"
    link.symlink_to(tmp_path / "mine" / "x.provenance.json")
    assert read_provenance(tmp_path / "x.npy", "image_embeddings")["tau"] == 0.1  # one's own link: one's own word
    os.lchown(link, pwd.getpwnam("nobody").pw_uid, -1)
    with pytest.raises(ValueError, match="is a symbolic link of user nobody and the input belongs to user root"):
        read_provenance(tmp_path / "x.npy", "image_embeddings")


def _simulate(tmp_path, table):
    from conftest import generated_sentences

    from lbee.bench.from_table import simulate_embeddings

    if not (tmp_path / "s.txt").exists():
        generated_sentences(tmp_path, GRAMMAR, "smears")
    return simulate_embeddings(table, tmp_path / "s.txt", quality=0.97)


def test_a_table_that_contradicts_its_grammar_is_refused(tmp_path):
    """B2: 'false' for a cell the grammar never denies, and a colour for an artefact the row says is absent, were
    taken in silence: Γ dropped the cell with its type, and the colour. Each is refused, naming column and row."""
    n = 40
    table = pd.DataFrame(
        {
            "image": [f"s{i}.png" for i in range(n)],
            "cell.type": ["neutrophil", "monocyte"] * (n // 2),
            "artefact.presence": [True, False] * (n // 2),
            "artefact.colour": ["red", ""] * (n // 2),
        }
    )
    sim = _simulate(tmp_path, table)  # as the grammar has it: fine
    assert sim.relevance.shape[0] == n
    bad = table.assign(**{"cell.presence": ["true"] * n})
    bad.loc[3, "cell.presence"] = "false"
    with pytest.raises(ValueError, match=r"column 'cell.presence', row 4: 'false' .* never says a white blood cell"):
        _simulate(tmp_path, bad)
    bad = table.copy()
    bad.loc[5, "artefact.colour"] = "blue"  # row 5 (0-based) says no artefact
    with pytest.raises(ValueError, match=r"column 'artefact.colour', row 6: 'blue' for a stain artefact the row says"):
        _simulate(tmp_path, bad)


@needs_root
def test_another_users_killed_writers_leftovers_refuse_the_folder_to_every_reader(tmp_path):
    """B3: a killed `lbee embed --overwrite` of nobody's left its folder half-swapped; nobody was refused, but root
    (and a service job, which reads other users' data) read the half-written rows. The folder owner's leftovers count
    for every reader."""
    import pwd

    from lbee.io.rollforward import refuse_interrupted

    nobody = pwd.getpwnam("nobody").pw_uid
    out = tmp_path / "emb"
    out.mkdir()
    np.save(out / "embeddings.npy", np.eye(3, dtype=np.float32))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    tag = f"{gone.stdout.strip()}-0123456789ab"  # a writer whose process has ended
    stage = tmp_path / f".emb.lbee-staging-{tag}"
    stage.mkdir()
    for p in (out, out / "embeddings.npy", stage):
        os.chown(p, nobody, -1)
    with pytest.raises(ValueError, match="was being rewritten by an lbee command that was killed"):
        refuse_interrupted(out / "embeddings.npy", "image_embeddings")
    os.chown(out, 0, -1)  # a third user's planted folder beside root's output does not count (only fails closed)
    refuse_interrupted(out / "embeddings.npy", "image_embeddings")


def test_report_check_refuses_embeddings_whose_recorded_ids_file_is_gone(tmp_path):
    """N1: `lbee report --check` said "no problem found" for embeddings whose provenance records an ids file that is
    gone; the run then refused them."""
    from click.testing import CliRunner

    from lbee.cli import cli
    from lbee.io.provenance import make_provenance, write_embeddings
    from lbee.io.row_ids import ids_bytes

    ids = [f"{i}.png" for i in range(6)]
    x, s = np.eye(6, 4, dtype=np.float32), np.eye(2, 4, dtype=np.float32)
    record = make_provenance("image_embeddings", x, identity=IDENTITY, tau=0.1, row_ids=ids)
    write_embeddings(tmp_path / "embeddings.npy", x, record)
    (tmp_path / "ids.txt").write_bytes(ids_bytes(ids))
    sent = make_provenance("sentence_embeddings", s, identity=IDENTITY, tau=0.1, sentences=["a dog", "a cat"])
    write_embeddings(tmp_path / "s.npy", s, sent)
    (tmp_path / "s.txt").write_text("a dog\na cat\n")
    # (confidences that differ: all equal, the check refuses the empty split as the run would)
    (tmp_path / "p.csv").write_text("image,confidence\n" + "".join(f"{i},0.{k + 1}\n" for k, i in enumerate(ids)))
    (tmp_path / "c.yaml").write_text(
        "datasets:\n  - name: d\n    image_embeddings: embeddings.npy\n    sentence_embeddings: s.npy\n"
        "    sentences: s.txt\n    models: [{name: m, predictions: p.csv}]\n"
    )
    r = CliRunner().invoke(cli, ["report", "--check", str(tmp_path / "c.yaml")], obj={})
    assert r.exit_code == 0, r.output
    (tmp_path / "ids.txt").unlink()
    r = CliRunner().invoke(cli, ["report", "--check", str(tmp_path / "c.yaml")], obj={})
    assert r.exit_code == 2 and "records the ids file written with it, but none is beside it" in r.output, r.output


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a device every write to fails, full)")
def test_a_full_tmpdir_is_said_as_the_checkpoint_copys_not_as_a_read_error(tmp_path, monkeypatch):
    """N2: with TMPDIR full, the checkpoint's private copy failed and lbee said "Checkpoint file ... cannot be read:
    No space left on device", naming neither the copy nor TMPDIR."""
    import tempfile
    from contextlib import contextmanager

    from lbee.encoders._base import EncoderLoadError
    from lbee.encoders._open_clip import _checkpoint

    ckpt = tmp_path / "model.pt"
    ckpt.write_bytes(b"\x00" * 4096)

    @contextmanager
    def full_folder(prefix=None, dir=None):  # the copy's file is /dev/full: every write fails with ENOSPC
        (tmp_path / "full").mkdir()
        (tmp_path / "full" / "checkpoint.pt").symlink_to("/dev/full")
        yield str(tmp_path / "full")

    monkeypatch.setattr(tempfile, "TemporaryDirectory", full_folder)
    with pytest.raises(EncoderLoadError) as info, _checkpoint(str(ckpt), "ViT-B-32"):
        pass
    said = str(info.value)
    assert "private copy" in said and "TMPDIR" in said and "No space left" in said and "cannot be read" not in said
