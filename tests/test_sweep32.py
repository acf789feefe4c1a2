"""Sweep 32: an output named through a folder that does not exist yet is checked where it will land."""

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from lbee.cli import cli


@pytest.mark.parametrize("via", ["a/..", "a/b/../.."])
def test_an_output_through_a_missing_folder_and_back_replaces_nothing(tmp_path, monkeypatch, via):
    """`--out a/../notes.txt` with no `a/` passed the check (the path as written did not exist); the writer then
    made `a/`, and its file replaced ./notes.txt, the input grammar or the class list without --overwrite."""
    import shutil
    from pathlib import Path

    grammar = Path("sentence_sets/object_photos.grammar.yaml").resolve()
    monkeypatch.chdir(tmp_path)
    shutil.copy(grammar, tmp_path / "g.grammar.yaml")
    (tmp_path / "notes.txt").write_text("mine\n")
    (tmp_path / "classes.txt").write_text("cat\ndog\n")
    runs = {
        "notes.txt": ["spotcheck", "--max-conditions", "1"],
        "g.grammar.yaml": ["g.grammar.yaml", "--max-conditions", "1"],
        "classes.txt": ["object_photos", "--classes", "classes.txt", "--max-conditions", "1"],
    }
    for target, head in runs.items():
        before = (tmp_path / target).read_bytes()
        r = CliRunner().invoke(cli, ["sentences", "generate", *head, "--out", f"{via}/{target}"])
        assert r.exit_code != 0 and ("already exists" in r.output or "input file" in r.output), (target, r.output)
        assert "Traceback" not in r.output and (tmp_path / target).read_bytes() == before, target


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\x85", "\r"])
def test_a_unicode_line_separator_inside_a_line_is_refused_not_split(tmp_path, sep):
    """Sentence and class files were split with str.splitlines: 'An image<U+2028>with a cat' became two sentences,
    and 'cat<U+2028>dog' two classes, in silence; grammar words refuse these characters. Lines are what `wc -l`
    counts, and the character is named with its line."""
    from lbee.io.sentences import parse_sentences

    with pytest.raises(ValueError, match=rf"s.txt: line 2 holds the character U\+{ord(sep):04X}"):
        parse_sentences(f"An image of a bird\nAn image{sep}with a cat\nAn image of a dog\n", "s.txt")
    assert parse_sentences("An image of a cat\r\nAn image of a bird\r\n", "s.txt")[0] == [
        "An image of a cat",
        "An image of a bird",
    ]
    (tmp_path / "classes.txt").write_text(f"bird\ncat{sep}dog\n", encoding="utf-8")
    r = CliRunner().invoke(
        cli,
        [
            "sentences",
            "generate",
            "object_photos",
            "--classes",
            str(tmp_path / "classes.txt"),
            "--out",
            str(tmp_path / "x.txt"),
        ],
    )
    assert r.exit_code != 0 and "line 2" in r.output and "Traceback" not in r.output, r.output


def test_a_killed_writers_temp_file_is_removed_by_the_next_write(tmp_path):
    """Sweep 31: `lbee vqa --out F` killed before its rename left `.tmp-*.parquet` beside F for good. The temp
    name carries the host and the process id; the next write of F removes the leftovers of processes that no
    longer run, and never those of a live one."""
    import os
    import subprocess
    import sys

    from lbee._files import _start_time, process_tag
    from lbee.io.cache import _temp_beside, atomic_write_bytes

    out = tmp_path / "answers.parquet"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    left, me = _temp_beside(out), process_tag()
    stale = left.with_name(left.name.replace(f"-{me}-", f"-{int(dead.stdout)}.0-"))
    live = left.with_name(left.name.replace(f"-{me}-", f"-{os.getppid()}.{_start_time(os.getppid()) or 0}-"))
    reused = left.with_name(left.name.replace(f"-{me}-", f"-{os.getpid()}.1-"))  # this pid, an earlier process
    reused.write_bytes(b"half")
    stale.write_bytes(b"half")
    live.write_bytes(b"half")
    (tmp_path / ".tmp-other.parquet-x-1-y.parquet").write_bytes(b"not ours")
    atomic_write_bytes(out, b"whole")
    assert out.read_bytes() == b"whole"
    assert not stale.exists() and not reused.exists() and live.exists()
    assert (tmp_path / ".tmp-other.parquet-x-1-y.parquet").exists()


def test_server_folders_with_a_space_or_a_colon_are_hidden_whole(tmp_path):
    """The path pattern of `redact_paths` stops at a space or a ':': with `--root '/srv/odd root:x/data'` a job's
    error showed '…/odd root:x/data/bad.txt' and a log '…/odd out dir/svc/jobs/…' to any read token. The server's
    own folders are replaced literally first."""
    from types import SimpleNamespace

    from lbee.service.paths import redact_paths

    root, out = tmp_path / "odd root:x" / "data", tmp_path / "odd out dir" / "svc"
    settings = SimpleNamespace(root=root, output=out, cache_dir=out / "cache")
    text = (
        f"bad: {root}/bad.txt: line 2 holds a NUL; [ok] wrote {out}/jobs/7/attempt-1/report.html; "
        f"cache {out}/cache/x.npy; the root {root} itself; {root}data.txt is another folder"
    )
    shown = redact_paths(text, settings)
    assert shown == (
        "bad: bad.txt: line 2 holds a NUL; [ok] wrote <output>/jobs/7/attempt-1/report.html; "
        "cache <cache>/x.npy; the root . itself; …/datadata.txt is another folder"
    ), shown
    assert str(tmp_path) not in shown and "odd" not in shown
    # a file beside the server's folders, in folders of its own: its name alone, once (sweep 32c: '……/real.yaml')
    beside = tmp_path / "other dir" / "deeper" / "real.grammar.yaml"
    assert redact_paths(f"grammar '{beside}' leads outside", settings) == "grammar '…/real.grammar.yaml' leads outside"


def test_the_spotcheck_bench_tables_are_replaced_as_a_pair(tmp_path, monkeypatch):
    """bench.csv and bench.md were written in place one after the other: a kill between them left a csv of 3 ECs
    beside a md of 2, a full disk a cut md beside a new csv. A failure while writing now leaves the old pair."""
    import pathlib

    from lbee import bench

    rows = [{"metric": "DR", "method": "ward", "mean": 0.5, "ci95": 0.1, "n": 2}]
    bench.write_tables(rows, tmp_path)
    before = {n: (tmp_path / n).read_bytes() for n in ("bench.csv", "bench.md")}
    real = pathlib.Path.write_text

    def full_disk(self, *args, **kwargs):
        if self.name == "bench.md":
            raise OSError(27, "File too large")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "write_text", full_disk)
    with pytest.raises(OSError, match="too large"):
        bench.write_tables([dict(rows[0], mean=0.9, n=3)], tmp_path)
    assert {n: (tmp_path / n).read_bytes() for n in before} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.csv", "bench.md"]  # no stage left
    monkeypatch.setattr(pathlib.Path, "write_text", real)
    bench.write_tables([dict(rows[0], mean=0.9, n=3)], tmp_path)
    assert "0.900" in (tmp_path / "bench.md").read_text() and ",3" in (tmp_path / "bench.csv").read_text()


def test_bare_sentence_embeddings_are_checked_against_the_sentences_file_beside_them(tmp_path, monkeypatch):
    """Sweep 32c S-1: `lbee embed`'s sentence embeddings without their provenance sidecar, given with the same
    sentences in another order, were paired row by row in silence (group 0's sentence changed). The
    sentences.txt `lbee embed` writes beside them names their rows: another order is refused, naming the row."""
    import numpy as np
    from PIL import Image

    monkeypatch.chdir(tmp_path)
    (tmp_path / "imgs").mkdir()
    rng = np.random.default_rng(0)
    rows = []
    for i in range(30):
        Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(tmp_path / "imgs" / f"{i:02d}.png")
        rows.append(f"{i:02d}.png,{rng.random():.3f}")
    (tmp_path / "preds.csv").write_text("image,confidence\n" + "\n".join(rows) + "\n")
    texts = [f"An image of thing {i}" for i in range(6)]
    (tmp_path / "emb").mkdir()
    np.save(tmp_path / "emb" / "x.npy", rng.normal(size=(30, 5)))
    np.save(tmp_path / "emb" / "s.npy", rng.normal(size=(6, 5)))
    (tmp_path / "emb" / "sentences.txt").write_text("\n".join(texts) + "\n")
    (tmp_path / "shuffled.txt").write_text("\n".join(texts[::-1]) + "\n")
    (tmp_path / "same.txt").write_text("\n".join(texts) + "\n")
    base = ["describe", "imgs", "--image-embeddings", "emb/x.npy", "--sentence-embeddings", "emb/s.npy"]
    base += ["--predictions", "preds.csv", "--clusters", "2", "--confirm", "0", "--tau", "0.2"]
    r = CliRunner().invoke(cli, [*base, "--sentences", "shuffled.txt", "--out", "r1"], obj={})
    assert r.exit_code == 1 and "row 1 is 'An image of thing 0' where the run's sentence 1 is" in r.output, r.output
    assert not (tmp_path / "r1").exists()
    r = CliRunner().invoke(cli, [*base, "--sentences", "same.txt", "--out", "r2"], obj={})
    assert r.exit_code == 0, r.output


def test_a_tilde_a_file_names_under_a_data_root_is_said_to_be_a_tilde(tmp_path):
    """Sweep 32c: `# grammar: ~/x.grammar.yaml` under `lbee serve` was refused as leading out "through a symbolic
    link"; there was no link."""
    from lbee.io.confinement import PathEscape, confined_to, resolve_named_path

    with confined_to(tmp_path), pytest.raises(PathEscape, match="'~' is not expanded") as err:
        resolve_named_path("~/x.grammar.yaml", tmp_path, key="# grammar:", source="s.conditions.tsv")
    assert "symbolic link" not in str(err.value)


def test_an_absolute_path_written_through_the_roots_link_is_inside_the_root(tmp_path):
    """Sweep 32c: with `--root` given through a symbolic link, an absolute path written in the link's form was
    refused as "outside the data root" although it lies inside; one that leads out is still refused."""
    from lbee.io.confinement import PathEscape, confine

    real = tmp_path / "real root"
    real.mkdir()
    (real / "bad.txt").write_text("x")
    (tmp_path / "outside.txt").write_text("x")
    (tmp_path / "ln root").symlink_to(real)
    link = tmp_path / "ln root"
    assert confine(str(link / "bad.txt"), link, "sentences") == (real / "bad.txt").resolve()
    with pytest.raises(PathEscape, match="outside the data root"):
        confine(str(tmp_path / "outside.txt"), link, "sentences")
    (real / "out").symlink_to(tmp_path / "outside.txt")
    with pytest.raises(PathEscape, match="leads outside the data root"):
        confine(str(link / "out"), link, "sentences")


def test_an_image_the_embeddings_ids_file_does_not_list_is_named(tmp_path, monkeypatch):
    """A twenty-second user's folder held one image more than the precomputed embeddings ('has shape (1600, 64);
    expected (1601, d)'); the ids file beside the rows says which one is not among them."""
    import numpy as np
    from PIL import Image

    monkeypatch.chdir(tmp_path)
    (tmp_path / "imgs").mkdir()
    rows = []
    for i in range(12):
        Image.new("RGB", (8, 8), (i * 20, 0, 0)).save(tmp_path / "imgs" / f"{i:02d}.png")
        rows.append(f"{i:02d}.png,0.{i:02d}")
    (tmp_path / "preds.csv").write_text("image,confidence\n" + "\n".join(rows) + "\n")
    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(11, 4)))
    (tmp_path / "x.ids.txt").write_text("".join(f"{i:02d}.png\n" for i in range(12) if i != 7))
    np.save(tmp_path / "s.npy", np.random.default_rng(1).normal(size=(2, 4)))
    (tmp_path / "s.txt").write_text("An image of a\nAn image of b\n")
    args = ["describe", "imgs", "--image-embeddings", "x.npy", "--sentence-embeddings", "s.npy", "--sentences"]
    r = CliRunner().invoke(cli, [*args, "s.txt", "--predictions", "preds.csv", "--out", "o"], obj={})
    assert r.exit_code == 1 and "not in x.ids.txt: '07.png'" in r.output, r.output


def test_a_jobs_skipped_images_are_recorded_relative_to_the_data_root(tmp_path):
    """Sweep 32d S-1: a job over a folder with one unreadable file kept its absolute server path in
    explanation.json's skipped_images and in the report, both served to every read token. Under a data root a
    run records them as the job named them, and no reason quotes the root."""
    from PIL import Image

    from lbee.io.confinement import confined_to
    from lbee.run.inputs import _skipped_as_given

    root = tmp_path / "root"
    (root / "imgs").mkdir(parents=True)
    Image.new("RGB", (8, 8)).save(root / "imgs" / "a.png")
    bad = root / "imgs" / "b.png"
    bad.write_text("garbage")
    why = f"cannot identify image file '{bad}'"
    with confined_to(root):
        shown, said = _skipped_as_given(str(bad), why)
    assert shown == "imgs/b.png" and str(root) not in said and "imgs/b.png" in said
    assert _skipped_as_given(str(bad), why) == (str(bad), why)  # the command line: as the user gave it


def test_a_killed_writers_leftovers_under_a_reused_pid_are_settled_before_a_new_run(tmp_path):
    """Sweep 32d L-1: leftovers were judged by their writer's pid alone. A later process with that pid (a container
    starts lbee with the same pid) took them for its own or a live writer's, wrote a whole run beside them, and a
    later command finished the old swap over the newer run: a mixture. The writer is its pid and its start time."""
    import os

    from lbee.io.staging import recover_leftovers, staged_entries

    out = tmp_path / "run"
    out.mkdir()
    (out / "a.txt").write_text("old")
    stage = tmp_path / f".run.lbee-staging-{os.getpid()}.1-aaaaaaaaaaaa"  # this pid, an earlier process's stage
    stage.mkdir()
    (stage / "a.txt").write_text("killed run")
    assert recover_leftovers(out) == [f"{os.getpid()}.1-aaaaaaaaaaaa"]  # not committed: the old output stays
    assert not stage.exists() and (out / "a.txt").read_text() == "old"
    with staged_entries(out) as new:
        (new / "a.txt").write_text("new")
    assert (out / "a.txt").read_text() == "new" and not [p for p in tmp_path.iterdir() if "lbee-" in p.name]


def test_a_dead_writers_leftovers_are_dropped_once_a_newer_output_replaced_them(tmp_path):
    """Sweep 32e L-1: a writer killed mid-swap but not yet reaped (a zombie) counted as alive; the next writer left
    its leftovers alone and replaced the output whole, and a later command finished the old swap over the newer
    output. A zombie is dead, and a writer drops dead writers' leftovers once its own swap is done."""
    import subprocess
    import time

    from lbee._files import _start_time, tag_alive
    from lbee.io.staging import staged_entries

    out = tmp_path / "run"
    out.mkdir()
    (out / "a.txt").write_text("old")
    zombie = subprocess.Popen(["sleep", "0"])
    time.sleep(0.3)  # exited, not reaped: a zombie
    tag = f"{zombie.pid}.{_start_time(zombie.pid) or 0}"
    try:
        assert not tag_alive(tag)
    finally:
        zombie.wait()
    # the same leftovers of a writer that passes for alive when the next one starts, and is dead once it is done
    stage = tmp_path / f".run.lbee-staging-{tag}-aaaaaaaaaaaa"
    aside = tmp_path / f".run.lbee-replaced-{tag}-aaaaaaaaaaaa"
    stage.mkdir()
    aside.mkdir()
    (stage / "b.txt").write_text("killed run")
    (stage / ".lbee-complete.json").write_text('{"new": ["a.txt", "b.txt"], "old": ["a.txt"]}')
    import lbee.io.staging as staging

    real = staging.recover_leftovers
    staging.recover_leftovers = lambda *a, **k: []  # as if it passed for alive when this writer started
    try:
        with staged_entries(out) as new:
            (new / "a.txt").write_text("new")
    finally:
        staging.recover_leftovers = real
    assert not stage.exists() and not aside.exists() and real(out) == []
    # its committed entry this writer did not write goes in, as their swap would have put it (sweep 32f)
    assert {p.name: p.read_text() for p in out.iterdir()} == {"a.txt": "new", "b.txt": "killed run"}


def test_a_dead_writers_swap_of_other_entries_is_finished_not_dropped(tmp_path):
    """Sweep 32f: dropping a dead writer's leftovers after a swap lost entries the surviving writer never wrote:
    `lbee embed` of images (killed mid-swap, its old embeddings.npy set aside) and of sentences into one folder
    left no image embeddings at all. Entries the survivor did not write are moved in as the dead one's swap would."""
    import lbee.io.staging as staging
    from lbee.io.staging import staged_entries

    out = tmp_path / "emb"
    out.mkdir()
    for name, text in (("embeddings.npy", "old images"), ("ids.txt", "old ids"), ("sentences.txt", "old s")):
        (out / name).write_text(text)
    tag = "999999.0"  # a writer that is gone
    stage = tmp_path / f".emb.lbee-staging-{tag}-aaaaaaaaaaaa"
    aside = tmp_path / f".emb.lbee-replaced-{tag}-aaaaaaaaaaaa"
    stage.mkdir()
    aside.mkdir()
    (out / "embeddings.npy").rename(aside / "embeddings.npy")  # killed after moving the old one aside
    (stage / "embeddings.npy").write_text("new images")
    (stage / "ids.txt").write_text("new ids")
    mark = '{"new": ["embeddings.npy", "ids.txt"], "old": ["embeddings.npy", "ids.txt"]}'
    (stage / ".lbee-complete.json").write_text(mark)
    real = staging.recover_leftovers
    staging.recover_leftovers = lambda *a, **k: []  # passed for alive when the next writer started
    try:
        with staged_entries(out, replaces=("sentences.txt",)) as new:
            (new / "sentences.txt").write_text("new s")
    finally:
        staging.recover_leftovers = real
    got = {p.name: p.read_text() for p in out.iterdir()}
    assert got == {"embeddings.npy": "new images", "ids.txt": "new ids", "sentences.txt": "new s"}, got
    assert not [p for p in tmp_path.iterdir() if ".lbee-" in p.name]


def test_a_dead_writers_entries_that_this_run_replaces_are_dropped_not_moved_in(tmp_path):
    """Sweep 32g L-1: a describe killed after its commit, beside one that had started before, had its run's
    slicer_domino/ moved into the survivor's run: one folder held two runs. An entry the survivor's swap replaces
    (a run's: `RUN_ENTRIES`) is dropped; an entry outside them is still moved in (sweep 32f)."""
    import lbee.io.staging as staging
    from lbee.io.staging import staged_entries
    from lbee.run.outputs import RUN_ENTRIES

    out = tmp_path / "m"
    out.mkdir()
    (out / "explanation.json").write_text("old run")
    tag = "999999.0"  # a writer that is gone
    stage = tmp_path / f".m.lbee-staging-{tag}-aaaaaaaaaaaa"
    stage.mkdir()
    for name in ("explanation.json", "slicer_domino", "theirs.txt"):
        (stage / name).write_text(f"killed run's {name}")
    mark = '{"new": ["explanation.json", "slicer_domino", "theirs.txt"], "old": ["explanation.json"]}'
    (stage / ".lbee-complete.json").write_text(mark)
    real = staging.recover_leftovers
    staging.recover_leftovers = lambda *a, **k: []  # passed for alive when the next writer started
    try:
        with staged_entries(out, replaces=RUN_ENTRIES) as new:
            (new / "explanation.json").write_text("new run")
    finally:
        staging.recover_leftovers = real
    got = {p.name: p.read_text() for p in out.iterdir()}
    assert got == {"explanation.json": "new run", "theirs.txt": "killed run's theirs.txt"}, got
    assert not [p for p in tmp_path.iterdir() if ".lbee-" in p.name]


def test_a_writer_of_another_process_table_is_left_alone_and_a_removed_stage_stops_the_writer(tmp_path):
    """Sweep 32g L-2: a live writer in another pid namespace (a container sharing the folder) looked dead from
    here: its stage was deleted under it, and it re-created the stage and swapped in a partial run over the old
    one. A tag names its process table and boot: another table's writer is alive here, an earlier boot's is gone,
    and a writer whose stage was removed stops without replacing anything."""
    from lbee._files import process_tag, tag_alive
    from lbee.io.staging import recover_leftovers, staged_entries

    pid, start, table, boot = process_tag().split(".")
    assert tag_alive(process_tag())
    assert tag_alive(f"999999.1.{'0' * 8 if table != '0' * 8 else '1' * 8}.{boot}")  # another table's: alive
    assert not tag_alive(f"{pid}.{start}.{table}.{'0' * 8 if boot != '0' * 8 else '1' * 8}")  # an earlier boot's
    assert not tag_alive(f"999999.1.{table}.{boot}") and not tag_alive("999999.1")
    out = tmp_path / "p"
    out.mkdir()
    (out / "explanation.json").write_text("old run")
    foreign = tmp_path / f".p.lbee-staging-1.5.{'0' * 8 if table != '0' * 8 else '1' * 8}.{boot}-aaaaaaaaaaaa"
    foreign.mkdir()
    assert recover_leftovers(out) == [] and foreign.exists()  # a container's live writer: left alone
    import shutil

    with pytest.raises(OSError, match="was removed while lbee wrote into it.*nothing was replaced"):
        with staged_entries(out) as new:
            shutil.rmtree(new)  # as another host's lbee did
            new.mkdir()
            (new / "report.md").write_text("the part written after")
    assert {p.name: p.read_text() for p in out.iterdir()} == {"explanation.json": "old run"}


def test_an_output_folder_that_is_a_link_is_staged_beside_its_target(tmp_path):
    """Sweep 32g U-1: an --out that is a symbolic link to a folder on another file system could never be written
    ("Invalid cross-device link"), and its leftovers wedged every later run. The stage lies beside the target."""
    import tempfile

    from lbee.io.staging import staged_entries

    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(dir=shm) as elsewhere:
        target = Path(elsewhere) / "run"
        target.mkdir()
        (target / "a.txt").write_text("old")
        link = tmp_path / "lrun"
        link.symlink_to(target, target_is_directory=True)
        for text in ("new", "newer"):
            with staged_entries(link) as stage:
                assert stage.parent == Path(elsewhere)
                (stage / "a.txt").write_text(text)
            assert (target / "a.txt").read_text() == text and link.is_symlink()
        assert not [p for p in [*tmp_path.iterdir(), *Path(elsewhere).iterdir()] if ".lbee-" in p.name]


def test_a_npy_with_a_huge_header_is_said_to_be_one_not_a_pickle(tmp_path):
    """Sweep 32g U-4: a valid .npy whose header is padded past numpy's 10,000 bytes was refused as "lbee never loads
    pickled Python objects": nothing was pickled. The reason is the header's size."""
    import struct

    import numpy as np

    from lbee.io.arrays import load_npy

    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }" + " " * 20000 + "\n"
    data = b"\x93NUMPY" + bytes([2, 0]) + struct.pack("<I", len(header)) + header.encode() + np.zeros(6).tobytes()
    (tmp_path / "big.npy").write_bytes(data)
    with pytest.raises(ValueError, match="its header is 20060 bytes, more than numpy reads safely") as info:
        load_npy(tmp_path / "big.npy", "image_embeddings")
    assert "pickle" not in str(info.value)


def test_the_demo_refreshes_only_a_demo_folder_without_overwrite(tmp_path):
    """Sweep 32h L-5: `lbee demo --out .` in a project deleted its inputs/train.csv and report.md, with no
    --overwrite. A folder that holds files and is not a demo's (no ec/ec.json, no demo.txt) is refused first."""
    proj = tmp_path / "proj"
    (proj / "inputs").mkdir(parents=True)
    (proj / "inputs" / "train.csv").write_text("keep")
    (proj / "report.md").write_text("mine")
    r = CliRunner().invoke(cli, ["demo", "--out", str(proj)], obj={})
    assert r.exit_code == 1 and "holds files and is not a demo's folder (inputs, report.md)" in r.output, r.output
    assert "--overwrite" in r.output and (proj / "inputs" / "train.csv").read_text() == "keep"
    from lbee.cli.demo import DEMO_FIRST_LINE, _check_demo_folder

    (proj / "demo.txt").write_text("my notes on the demo")  # sweep 32i: a file of that name is not a demo's folder
    (proj / "ec").mkdir()
    (proj / "ec" / "ec.json").write_text("{}")  # sweep 32j: nor is a report's SpotCheck dataset (its world)
    with pytest.raises(Exception, match="is not a demo's folder"):
        _check_demo_folder(proj, overwrite=False)
    (proj / "demo.txt").write_text(DEMO_FIRST_LINE + "\n  (the demo's small world ...)\n")
    _check_demo_folder(proj, overwrite=False)  # a demo's folder (its world and its story): refreshed
    _check_demo_folder(proj, overwrite=True)
    _check_demo_folder(tmp_path / "new", overwrite=False)


def test_another_outputs_stage_is_never_taken_for_a_leftover_of_this_one(tmp_path):
    """Sweep 32i L-2: a report into `pp` took over the live stage of a report into `pp.lbee-report-staging-99999`
    ("99999.lbee" read as a dead writer's pid) and moved it into `pp`. A leftover's writer is parsed strictly."""
    from lbee.io.staged_tree import recover_tree
    from lbee.io.staging import recover_leftovers

    out = tmp_path / "pp"
    out.mkdir()
    tag = "99999.1-aaaaaaaaaaaa"
    others = [
        tmp_path / f".pp.lbee-staging-99999.lbee-staging-{tag}",  # the stage of output "pp.lbee-staging-99999"
        tmp_path / f".pp.lbee-report-staging-99999.lbee-report-staging-{tag}",
    ]
    for other in others:
        other.mkdir()
        (other / ".lbee-complete.json").write_text('{"new": [], "old": []}')
    assert recover_leftovers(out) == [] and recover_tree(out) == []
    assert all(other.is_dir() for other in others)
    mine = tmp_path / f".pp.lbee-staging-{tag}"  # this output's, of a writer that is gone: settled
    mine.mkdir()
    assert recover_leftovers(out) == [tag] and not mine.exists()


def test_a_run_started_beside_another_into_one_new_folder_replaces_nothing(tmp_path):
    """Sweep 32i L-4: two `describe --out dd` started at once without --overwrite both succeeded, the later one
    replacing the earlier run. The no-replace check is made again under the lock, at the commit."""
    from lbee.io.staging import OutputExistsError
    from lbee.run.outputs import staged_run_folder

    out = tmp_path / "dd"
    with pytest.raises(OutputExistsError, match="written by another lbee while this one ran; nothing was replaced"):
        with staged_run_folder(out, overwrite=False) as stage:
            (stage / "explanation.json").write_text("mine")
            out.mkdir()
            (out / "explanation.json").write_text("the other run's")  # committed by the other one meanwhile
    assert (out / "explanation.json").read_text() == "the other run's"
    assert not [p for p in tmp_path.iterdir() if ".lbee-" in p.name]
    with staged_run_folder(out, overwrite=True) as stage:  # asked for: replaced whole
        (stage / "explanation.json").write_text("mine")
    assert (out / "explanation.json").read_text() == "mine"


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to plant as another user")
def test_a_leftover_planted_by_another_user_is_never_settled(tmp_path):
    """Sweep 32j S-1: another local user planted a committed "leftover" in a shared folder; the victim's next run
    settled it: it deleted the victim's files (a mark replacing '*') and moved the attacker's file in. Only this
    user's leftovers are settled, and a report's leftover's replaced entries are the caller's, never the file's."""
    from lbee.io.staged_tree import recover_tree
    from lbee.io.staging import recover_leftovers

    shared = tmp_path / "shared"
    (shared / "proj").mkdir(parents=True)
    (shared / "proj" / "notes.md").write_text("precious")
    planted = [
        shared / ".proj.lbee-staging-99999-aaaaaaaaaaaa",
        shared / ".proj.lbee-report-staging-99999-bbbbbbbbbbbb",
    ]
    for p in planted:
        p.mkdir()
    (planted[0] / ".lbee-complete.json").write_text('{"new": ["evil.html"], "old": ["notes.md"]}')
    (planted[0] / "evil.html").write_text("<script>")
    (planted[1] / ".lbee-complete.json").write_text('{"folders": {".": {"new": [], "old": [], "replaces": ["*"]}}}')
    for p in [*planted, *planted[0].iterdir(), *planted[1].iterdir()]:
        os.chown(p, 65534, 65534)  # nobody's
    assert recover_leftovers(shared / "proj") == [] and recover_tree(shared / "proj") == []
    assert {p.name for p in (shared / "proj").iterdir()} == {"notes.md"} and all(p.is_dir() for p in planted)
    for p in [*planted, *planted[0].iterdir(), *planted[1].iterdir()]:
        os.chown(p, os.getuid(), os.getgid())  # this user's own (killed) report: settled, with the caller's patterns
    (planted[1] / ".lbee-complete.json").write_text('{"folders": {".": {"new": [], "old": [], "run": true}}}')
    assert recover_tree(shared / "proj", replaces=("explanation.json",)) == ["99999-bbbbbbbbbbbb"]
    assert (shared / "proj" / "notes.md").read_text() == "precious"
    # sweep 32k S-2: this user's killed stage, beside another user's planted "replaced" half of the same writer
    (shared / "proj2").mkdir()
    (shared / "proj2" / "notes.md").write_text("precious")
    mine = shared / ".proj2.lbee-staging-99999-cccccccccccc"
    mine.mkdir()
    theirs = shared / ".proj2.lbee-replaced-99999-cccccccccccc"
    theirs.mkdir()
    (theirs / "notes.md").write_text("the attacker's")
    for p in (theirs, theirs / "notes.md"):
        os.chown(p, 65534, 65534)
    assert recover_leftovers(shared / "proj2") == [] and mine.is_dir()
    assert (shared / "proj2" / "notes.md").read_text() == "precious"


def test_a_report_that_dies_while_a_run_works_in_its_folder_is_settled_before_the_runs_commit(tmp_path):
    """Sweep 32j L-1r: a report died while a `describe --out` into one of its run folders was working; the next
    report finished the dead one's swap over the newer run. The run settles the report again at its commit."""
    from lbee.run.outputs import staged_run_folder

    root = tmp_path / "rr"
    (root / "a").mkdir(parents=True)
    (root / "index.html").write_text("the report's index")
    (root / "a" / "explanation.json").write_text("old report's")
    with staged_run_folder(root / "a", overwrite=True) as stage:
        (stage / "explanation.json").write_text("describe's")
        dead = tmp_path / ".rr.lbee-report-staging-99999.0-aaaaaaaaaaaa"  # committed, then its writer died
        (dead / "a").mkdir(parents=True)
        (dead / "a" / "explanation.json").write_text("new report's")
        (dead / ".lbee-complete.json").write_text(
            '{"folders": {"a": {"new": ["explanation.json"], "old": ["explanation.json"], "run": true}}}'
        )
    assert (root / "a" / "explanation.json").read_text() == "describe's"  # the newer run, whole
    from lbee.io.staged_tree import recover_tree
    from lbee.run.outputs import RUN_ENTRIES

    recover_tree(root, RUN_ENTRIES)  # what any later report into rr does: its part in a/ is not done again
    assert (root / "a" / "explanation.json").read_text() == "describe's"
    assert not [p for p in tmp_path.iterdir() if ".lbee-" in p.name]


def test_a_demo_story_that_is_a_fifo_is_not_read(tmp_path):
    """Sweep 32k H-1: `lbee demo --out DIR` hung for ever on a FIFO named demo.txt (its folder check read it)."""
    import threading

    from lbee.cli.demo import _is_demo_folder

    (tmp_path / "ec").mkdir()
    (tmp_path / "ec" / "ec.json").write_text("{}")
    os.mkfifo(tmp_path / "demo.txt")
    answer = []
    t = threading.Thread(target=lambda: answer.append(_is_demo_folder(tmp_path)), daemon=True)
    t.start()
    t.join(10)
    assert answer == [False]


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to plant as another user")
def test_a_half_planted_while_the_settler_waits_for_the_lock_is_never_settled(tmp_path, monkeypatch):
    """Sweep 32l S-3: the ownership check ran before the output's lock; another user who held the lock planted the
    "replaced" half meanwhile, and it was settled. The check is made again under the lock."""
    import lbee.io.staging as staging

    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "notes.md").write_text("precious")
    mine = tmp_path / ".proj.lbee-staging-99999-dddddddddddd"  # this user's killed writer's stage
    mine.mkdir()
    real = staging.lock_output

    def lock_then_plant(folder):
        fd = real(folder)
        theirs = tmp_path / ".proj.lbee-replaced-99999-dddddddddddd"
        theirs.mkdir()
        (theirs / "notes.md").write_text("the attacker's")
        for p in (theirs, theirs / "notes.md"):
            os.chown(p, 65534, 65534)
        return fd

    monkeypatch.setattr(staging, "lock_output", lock_then_plant)
    staging.recover_leftovers(tmp_path / "proj")
    assert (tmp_path / "proj" / "notes.md").read_text() == "precious" and mine.is_dir()


def test_a_report_killed_but_still_running_is_finished_in_a_runs_folder_before_the_runs_commit(tmp_path):
    """Sweep 32l L-1: a report killed mid-swap was briefly still "running" (state R) after its lock was released; a
    run waiting for that folder's lock took it for alive, committed, and a later report finished the dead one's part
    over the newer run. Under the folder's lock a committed part is finished whether its writer looks alive or not
    (a live report swaps a folder only under that lock, and skips a part already finished)."""
    from lbee._files import process_tag
    from lbee.io.staged_tree import recover_tree
    from lbee.run.outputs import RUN_ENTRIES, staged_run_folder

    root = tmp_path / "rr"
    (root / "a").mkdir(parents=True)
    (root / "index.html").write_text("the report's index")
    (root / "a" / "explanation.json").write_text("old report's")
    alive = f"{process_tag()}-aaaaaaaaaaaa"  # a writer that passes for alive: this very process
    with staged_run_folder(root / "a", overwrite=True) as stage:
        (stage / "explanation.json").write_text("describe's")
        dying = tmp_path / f".rr.lbee-report-staging-{alive}"
        (dying / "a").mkdir(parents=True)
        (dying / "a" / "explanation.json").write_text("new report's")
        (dying / ".lbee-complete.json").write_text(
            '{"folders": {"a": {"new": ["explanation.json"], "old": ["explanation.json"], "run": true}}}'
        )
    assert (root / "a" / "explanation.json").read_text() == "describe's"
    assert not (dying / "a").exists()  # its part is done: never again, over the run
    recover_tree(root, RUN_ENTRIES)  # a later report into rr, the dying one's writer now gone (and taken for gone)
    assert (root / "a" / "explanation.json").read_text() == "describe's"
    assert not [p for p in tmp_path.iterdir() if ".lbee-" in p.name]


def test_a_writer_killed_but_still_running_has_its_committed_swap_settled_under_the_lock(tmp_path):
    """Sweep 32l, the same for one output: a committed stage seen under the output's lock is a writer's that died
    in its swap (a live one swaps only under that lock), so the surviving writer settles it and no later writer
    finishes it over the newer output."""
    from lbee._files import process_tag
    from lbee.io.staging import recover_leftovers, staged_entries

    out = tmp_path / "run"
    out.mkdir()
    (out / "a.txt").write_text("old")
    alive = f"{process_tag()}-bbbbbbbbbbbb"
    with staged_entries(out) as new:
        (new / "a.txt").write_text("new")
        stage = tmp_path / f".run.lbee-staging-{alive}"
        stage.mkdir()
        (stage / "a.txt").write_text("killed run")
        (stage / "b.txt").write_text("killed run's other")
        (stage / ".lbee-complete.json").write_text('{"new": ["a.txt", "b.txt"], "old": ["a.txt"]}')
    assert {p.name: p.read_text() for p in out.iterdir()} == {"a.txt": "new", "b.txt": "killed run's other"}
    assert not stage.exists() and recover_leftovers(out) == []
    # an uncommitted stage of a live writer is left alone: it is still writing
    live = tmp_path / f".run.lbee-staging-{process_tag()}-cccccccccccc"
    live.mkdir()
    with staged_entries(out) as new:
        (new / "a.txt").write_text("newer")
    assert live.is_dir() and (out / "a.txt").read_text() == "newer"


def test_an_output_folder_locked_by_another_process_is_waited_for_then_given_up(tmp_path, monkeypatch, caplog):
    """Sweep 32l H-1: another user who can read an output folder held its lock, and every writer waited for ever
    without a word. It says what it waits for, then gives up with nothing written."""
    import fcntl
    import logging

    import lbee.io.output_lock as output_lock
    import lbee.io.staging as staging

    out = tmp_path / "run"
    out.mkdir()
    (out / "a.txt").write_text("old")
    monkeypatch.setattr(output_lock, "LOCK_NOTICE_S", 0.1)
    monkeypatch.setattr(output_lock, "LOCK_PATIENCE_S", 0.6)
    fd = os.open(out, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with caplog.at_level(logging.INFO, logger="lbee"), pytest.raises(output_lock.OutputBusyError, match="fuser"):
            with staging.staged_entries(out) as new:
                (new / "a.txt").write_text("new")
        assert "Waiting for another process's lock" in caplog.text
    finally:
        os.close(fd)
    assert (out / "a.txt").read_text() == "old" and not [p for p in tmp_path.iterdir() if ".lbee-" in p.name]
    with staging.staged_entries(out) as new:  # once it is released, the same write goes through
        (new / "a.txt").write_text("new")
    assert (out / "a.txt").read_text() == "new"


def test_every_spelling_of_an_output_folder_names_the_same_leftovers(tmp_path, monkeypatch):
    """Sweep 32m F1: `--out .` left a killed writer's leftovers where no other spelling of the folder looked; a
    newer run through its absolute path did not settle them, and a later `--out .` finished the dead swap over it."""
    import subprocess
    import sys

    from lbee.io.staging import staged_entries

    out = tmp_path / "dot"
    out.mkdir()
    (out / "a.txt").write_text("first")
    killed = (
        "from lbee.io.staging import staged_entries\n"
        "with staged_entries('.') as s:\n"
        "    (s / 'a.txt').write_text('killed'); (s / 'b.txt').write_text('killed')\n"
    )
    env = {**os.environ, "LBEE_TEST_KILL_AT": "swapping"}
    proc = subprocess.run([sys.executable, "-c", killed], cwd=out, env=env)
    assert proc.returncode == -9
    assert not [p for p in out.iterdir() if ".lbee-" in p.name]  # beside the folder, as every other spelling
    with staged_entries(out) as new:  # the newer run, by its absolute path: the dead swap is settled first
        (new / "a.txt").write_text("newer")
    monkeypatch.chdir(out)
    with staged_entries(Path(".")) as new:  # and a later one spelled '.' finds nothing left to finish
        (new / "c.txt").write_text("latest")
    assert {p.name: p.read_text() for p in out.iterdir()} == {"a.txt": "newer", "b.txt": "killed", "c.txt": "latest"}
    assert not [p for p in tmp_path.iterdir() if ".lbee-" in p.name]
    with pytest.raises(ValueError, match="root"):
        with staged_entries("/"):
            pass


def test_the_old_entries_never_go_aside_into_a_planted_link(tmp_path):
    """Sweep 32m F2: the folder the old entries go aside into was made only at the swap, with exist_ok; a link
    planted under its name (its writer read from the stage's visible name) took them wherever it pointed. It is made
    with the stage, by this writer alone, and checked to be this user's real folder before anything moves into it."""
    import shutil

    from lbee.io.staging import staged_entries

    out, victim = tmp_path / "run", tmp_path / "victim"
    out.mkdir()
    victim.mkdir()
    (out / "report.md").write_text("old run")
    (victim / "report.md").write_text("the victim's")
    with pytest.raises(OSError, match="not lbee's own folder"):
        with staged_entries(out) as new:
            (new / "report.md").write_text("new run")
            (aside,) = tmp_path.glob(".run.lbee-replaced-*")  # made with the stage: its name is taken
            shutil.rmtree(aside)  # (in a sticky /tmp another user cannot; here, to try the check behind it)
            aside.symlink_to(victim)
    assert (victim / "report.md").read_text() == "the victim's"
    assert (out / "report.md").read_text() == "old run"


def test_a_run_folder_a_killed_report_half_swapped_is_settled_before_it_is_checked(tmp_path):
    """Sweep 32m N3: a `describe --out` into a report's run folder that a killed report had half swapped named the
    one file the report had moved in as "a run"; the report's swap is now settled before the folder is looked at."""
    from lbee.run.outputs import check_out_folder

    root = tmp_path / "rr"
    (root / "a").mkdir(parents=True)
    (root / "index.html").write_text("the report's index")
    dead = tmp_path / ".rr.lbee-report-staging-99999.0-aaaaaaaaaaaa"  # committed, then its writer died
    (dead / "a").mkdir(parents=True)
    for name in ("explanation.json", "report.md"):
        (dead / "a" / name).write_text("the report's run")
    (dead / ".lbee-complete.json").write_text(
        '{"folders": {"a": {"new": ["explanation.json", "report.md"], "old": [], "run": true}}}'
    )
    with pytest.raises(ValueError, match=r"already holds a run \(explanation.json, report.md\)"):
        check_out_folder(root / "a")
    assert not dead.exists()


def test_an_output_given_through_a_link_repointed_meanwhile_is_written_where_it_pointed_at_the_start(tmp_path):
    """Sweep 32n L1: `--out latest` (latest -> A) repointed to B while the run worked: the swap went into B through
    the link, its leftovers named after A, and a later command into A finished it there: two runs mixed. The folder
    is resolved once and every step goes through that folder."""
    from lbee.io.staging import staged_entries

    a, b = tmp_path / "A", tmp_path / "B"
    for folder in (a, b):
        folder.mkdir()
        (folder / "run.txt").write_text(f"{folder.name}'s run")
    latest = tmp_path / "latest"
    latest.symlink_to(a)
    with staged_entries(latest) as stage:
        (stage / "run.txt").write_text("the new run")
        latest.unlink()
        latest.symlink_to(b)
    assert (a / "run.txt").read_text() == "the new run" and (b / "run.txt").read_text() == "B's run"


def test_an_output_folder_replaced_by_a_link_while_lbee_runs_is_refused(tmp_path):
    """Sweep 32n S1: another user who owned the `--out` folder in /tmp renamed it away and put a link to a folder
    of the victim's in its place once the stage appeared; the swap followed the link and replaced the victim's
    files. The commit opens the folder without following a link and checks it is the one the writer started with."""
    from lbee.io.output_lock import OutputReplacedError
    from lbee.io.staging import staged_entries

    out, victim = tmp_path / "R", tmp_path / "victim"
    out.mkdir()
    victim.mkdir()
    (victim / "report.md").write_text("the victim's")
    for swap in ("link", "folder"):
        with pytest.raises(OutputReplacedError, match="no longer the folder|is a link"):
            with staged_entries(out) as stage:
                (stage / "report.md").write_text("the new run")
                out.rename(tmp_path / f"R.{swap}")
                if swap == "link":
                    out.symlink_to(victim)
                else:
                    out.mkdir()  # another folder of the same name: not the one this writer started with
        assert (victim / "report.md").read_text() == "the victim's" and not (
            tmp_path / f"R.{swap}" / "report.md"
        ).exists()
        out.unlink() if out.is_symlink() else out.rmdir()
        (tmp_path / f"R.{swap}").rename(out)
    assert not [p for p in tmp_path.iterdir() if ".lbee-" in p.name]


def test_a_reports_output_folder_replaced_by_a_link_while_it_runs_is_refused(tmp_path):
    """Sweep 32n S1, for `lbee report`: the report's folder renamed away and a link put in its place."""
    from lbee.io.output_lock import OutputReplacedError
    from lbee.io.staged_tree import staged_tree

    root, victim = tmp_path / "R", tmp_path / "victim"
    (root / "a").mkdir(parents=True)
    (victim / "a").mkdir(parents=True)
    (victim / "index.html").write_text("the victim's")
    with pytest.raises(OutputReplacedError):
        with staged_tree(root, [root / "a"], replaces=("*.md",)) as stage:
            (stage / "a").mkdir()
            (stage / "a" / "report.md").write_text("new")
            (stage / "index.html").write_text("new index")
            root.rename(tmp_path / "R.old")
            root.symlink_to(victim)
    assert (victim / "index.html").read_text() == "the victim's" and not (victim / "a" / "report.md").exists()


def test_a_report_into_a_relative_folder_or_one_through_a_link_is_written(tmp_path, monkeypatch):
    """A report's folder is used by its real path (sweep 32n): its run folders, named relative to the folder as
    given (`--out runs/small`, or through a link), are found inside it."""
    from lbee.io.staged_tree import staged_tree

    monkeypatch.chdir(tmp_path)
    (tmp_path / "real").mkdir()
    (tmp_path / "via").symlink_to(tmp_path / "real")
    for given in (Path("runs/small"), Path("via")):
        with staged_tree(given, [given / "shapes"], replaces=("*.md",)) as stage:
            (stage / "shapes").mkdir()
            (stage / "shapes" / "report.md").write_text("the run")
            (stage / "index.html").write_text("the index")
        assert (given / "shapes" / "report.md").read_text() == "the run" and (given / "index.html").is_file()
    assert (tmp_path / "real" / "index.html").is_file() and not [p for p in tmp_path.iterdir() if ".lbee-" in p.name]


def test_an_output_folder_swapped_for_a_link_during_the_work_is_refused_at_the_end(tmp_path):
    """Sweep 32o B1: the output was resolved only when the write began, after the work (a describe's embedding, the
    demo's world): another user who owned `/tmp/R` swapped it for a link to a folder of the victim's meanwhile, and
    the run replaced the victim's files. The command pins its output when it checks it, at its start."""
    from lbee.io.output_lock import OutputReplacedError, check_pinned, clear_pins, pin_output
    from lbee.io.staging import staged_entries

    out, victim = tmp_path / "R", tmp_path / "victim"
    out.mkdir()
    victim.mkdir()
    (victim / "report.md").write_text("the victim's")
    try:
        pin_output(out, command=True)  # as the CLI's output check does
        out.rename(tmp_path / "R.old")  # ... the work ...
        out.symlink_to(victim)
        with pytest.raises(OutputReplacedError):
            with staged_entries(out) as stage:
                (stage / "report.md").write_text("the new run")
        with pytest.raises(OutputReplacedError, match="no longer the folder"):
            check_pinned(out)  # a single file written beside (evaluate --out, export spotlight --out)
    finally:
        clear_pins()
    assert (victim / "report.md").read_text() == "the victim's" and not list((tmp_path / "R.old").iterdir())


def test_a_run_settles_a_report_above_its_folder_as_it_found_it_not_through_a_link_repointed(tmp_path):
    """Sweep 32o B2: at the commit, a run settled a killed report above `out` as spelled (`latest`, repointed from
    rp/a to rp/b meanwhile), moving the report's b part into a/. It settles through the folder it holds."""
    from lbee.run.outputs import staged_run_folder

    root = tmp_path / "rp"
    for name in ("a", "b"):
        (root / name).mkdir(parents=True)
        (root / name / "report.md").write_text(f"{name}'s old run")
    (root / "index.html").write_text("the report's index")
    latest = tmp_path / "latest"
    latest.symlink_to(root / "a")
    with staged_run_folder(latest, overwrite=True) as stage:
        (stage / "report.md").write_text("describe's")
        dead = tmp_path / ".rp.lbee-report-staging-99999.0-aaaaaaaaaaaa"  # a report that died mid-swap
        for name in ("a", "b"):
            (dead / name).mkdir(parents=True)
            (dead / name / "report.md").write_text(f"the dead report's {name}")
        (dead / ".lbee-complete.json").write_text(
            '{"folders": {"a": {"new": ["report.md"], "old": ["report.md"], "run": true}, '
            '"b": {"new": ["report.md"], "old": ["report.md"], "run": true}}}'
        )
        latest.unlink()
        latest.symlink_to(root / "b")
    assert (root / "a" / "report.md").read_text() == "describe's"
    assert (root / "b" / "report.md").read_text() == "b's old run"  # its part is left to the next report
    assert (dead / "b" / "report.md").is_file() and not (dead / "a").exists()


def test_a_folder_inside_a_pinned_output_is_refused_when_the_output_is_swapped_for_a_link(tmp_path):
    """Sweep 32p B3: `spotcheck bench --worlds W` pinned W, but each world's folder W/ec_0001 was resolved when it
    was written: W swapped for a link during the bench sent every world into the victim's folder."""
    from lbee.io.output_lock import MAX_PINS, OutputReplacedError, clear_pins, pin_output
    from lbee.io.staging import staged_entries

    worlds, victim = tmp_path / "W", tmp_path / "victim"
    worlds.mkdir()
    victim.mkdir()
    try:
        pin_output(worlds, command=True)
        worlds.rename(tmp_path / "W.old")
        worlds.symlink_to(victim)
        with pytest.raises(OutputReplacedError, match="no longer the folder"):
            with staged_entries(worlds / "ec_0001", replaces=("*",)) as stage:
                (stage / "model.pt").write_text("a world")
        assert list(victim.iterdir()) == []
        for i in range(MAX_PINS + 5):  # a long-lived process (lbee serve) keeps a bounded table
            pin_output(tmp_path / f"job{i}")
        from lbee.io import output_lock

        assert len(output_lock._PINS) <= MAX_PINS
    finally:
        clear_pins()


def test_a_folder_the_command_made_is_removed_at_its_end_only_while_it_is_that_folder(tmp_path):
    """Sweep 32p B6: a failed command's clean-up removed the folders it had made by path, through a link put in
    their place meanwhile (a victim's empty folder was deleted)."""
    import click

    from lbee.cli._base import check_writable_folder

    victim = tmp_path / "victim" / "run"
    victim.mkdir(parents=True)
    with click.Context(click.Command("x")) as ctx:
        check_writable_folder(tmp_path / "vp" / "run", "--out")
        (tmp_path / "vp").rename(tmp_path / "vp.old")
        (tmp_path / "vp").symlink_to(tmp_path / "victim")
        ctx.close()
    assert victim.is_dir()  # not the folder it made: left alone


def test_a_file_written_beside_a_run_goes_to_the_folder_pinned_not_where_a_link_points_now(tmp_path):
    """Sweep 32q B8: `evaluate --out latest/m.json` (and the Spotlight and VQA --out) checked the pinned folder, then
    wrote by the path as typed: with `latest` repointed from A to B meanwhile, the file went into B."""
    from lbee.io.output_lock import clear_pins, pin_output, pinned_file
    from lbee.run.outputs import run_digest, write_beside_run

    a, b = tmp_path / "A", tmp_path / "B"
    for folder in (a, b):
        folder.mkdir()
        (folder / "explanation.json").write_text("{}")
    latest = tmp_path / "latest"
    latest.symlink_to(a)
    try:
        pin_output(latest, command=True)
        read = run_digest(latest)
        latest.unlink()
        latest.symlink_to(b)
        assert pinned_file(latest / "m.json") == a / "m.json"
        write_beside_run(latest, latest / "metrics.json", b"{}", read)
    finally:
        clear_pins()
    assert (a / "metrics.json").is_file() and not (b / "metrics.json").exists()
