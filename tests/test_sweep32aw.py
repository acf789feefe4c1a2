"""Sweep 32aw: the SpotCheck caveat judged by where the images are, table ids that are paths of other files, and
class indices of named classes in a column named otherwise."""

import os

import numpy as np
import pandas as pd
import pytest
from PIL import Image


def _world(folder):
    (folder / "images" / "test").mkdir(parents=True)
    (folder / "ec.json").write_text('{"version": 2, "dataset": {"layers": []}}')
    (folder / "metadata.parquet").write_bytes(b"")
    (folder / "model.pt").write_bytes(b"")
    Image.new("RGB", (8, 8)).save(folder / "images" / "test" / "0.png")
    return folder


def test_a_manifest_in_a_world_lifts_the_caveat_only_for_the_worlds_own_images(tmp_path):
    """B1: a manifest kept in a saved world's images folder, listing photos outside the world, lifted the caveat;
    so did the world folder with its photos in another of its folders."""
    from lbee.encoders import encoder_caveat

    world = _world(tmp_path / "world")
    (tmp_path / "photos").mkdir()
    Image.new("RGB", (8, 8), "red").save(tmp_path / "photos" / "p0.png")
    manifest = world / "images" / "m.csv"
    pd.DataFrame({"path": [str(tmp_path / "photos" / "p0.png")]}).to_csv(manifest, index=False)
    assert "trained on SpotCheck renders only" in encoder_caveat("spotcheck", manifest)
    pd.DataFrame({"path": ["test/0.png"]}).to_csv(manifest, index=False)  # the world's own render
    assert encoder_caveat("spotcheck", manifest) is None
    assert encoder_caveat("spotcheck", world) is None
    (world / "holiday").mkdir()
    Image.new("RGB", (8, 8), "red").save(world / "holiday" / "p1.png")
    assert encoder_caveat("spotcheck", world) is not None  # a photo in the world, outside its images
    (world / "holiday" / "p1.png").unlink()
    assert encoder_caveat("spotcheck", world) is None
    (world / "images" / "out.png").symlink_to(tmp_path / "photos" / "p0.png")  # a link to a photo: that photo
    assert encoder_caveat("spotcheck", world) is not None
    (world / "images" / "out.png").unlink()
    os.chmod(world / "images", 0o777)  # another user could plant images there
    assert encoder_caveat("spotcheck", world) is not None
    os.chmod(world / "images", 0o755)
    assert encoder_caveat("spotcheck", world) is None


def test_an_absolute_id_of_another_existing_file_names_that_file(tmp_path):
    """B2: '/w/photos2/p000.png' matched the image 'p000.png' of /w/photos by its end: another folder's predictions
    were applied in silence. A path that exists names that file; one that does not (a table written on another
    machine) still matches by its end."""
    from lbee.io.matching import match_table_rows
    from lbee.run.scores import align_scores

    for folder in ("photos", "photos2"):
        (tmp_path / folder).mkdir()
        Image.new("RGB", (8, 8)).save(tmp_path / folder / "p0.png")
    ids, paths = ["p0.png"], [str(tmp_path / "photos" / "p0.png")]
    rows, unmatched = match_table_rows([str(tmp_path / "photos2" / "p0.png")], ids, paths)
    assert rows.tolist() == [-1] and unmatched == [str(tmp_path / "photos2" / "p0.png")]
    with pytest.raises(ValueError, match=r"have no row .* Its ids are paths of other files, first: '.*photos2/p0"):
        align_scores(ids, paths, [str(tmp_path / "photos2" / "p0.png")])
    assert match_table_rows([str(tmp_path / "photos" / "p0.png")], ids, paths)[0].tolist() == [0]  # itself
    assert match_table_rows(["/elsewhere/machine/p0.png"], ids, paths)[0].tolist() == [0]
    (tmp_path / "link.png").symlink_to(tmp_path / "photos" / "p0.png")  # another name of the same file
    assert match_table_rows([str(tmp_path / "link.png")], ["link.png"], paths)[0].tolist() == [0]


def _binary(rng, n, column, values, classes=("cat", "dog")):
    p = rng.random(n)
    return pd.DataFrame(
        {"image": [f"{i}.png" for i in range(n)], f"prob_{classes[0]}": 1 - p, f"prob_{classes[1]}": p, column: values}
    )


def test_class_indices_of_named_classes_under_another_name_are_refused():
    """B3: 'annotation' of 0/1 beside prob_cat / prob_dog (indices, as 'label' reads them) agreeing with the argmax
    on 72 % of the rows was not refused; the same classes written as names were."""
    from lbee.io.label_lookalike import label_lookalike

    rng = np.random.default_rng(0)
    n = 200
    table = _binary(rng, n, "annotation", np.zeros(n, int))
    top = (table["prob_dog"] > 0.5).astype(int).to_numpy()
    table["annotation"] = np.where(rng.random(n) < 0.72, top, 1 - top)
    assert label_lookalike(table) == "annotation"
    table["annotation"] = np.array(["cat", "dog"])[table["annotation"]]
    assert label_lookalike(table) == "annotation"
    table["annotation"] = top  # the model's own classes on every row: its predictions, not labels
    assert label_lookalike(table) is None


def test_a_library_table_with_a_repeated_index_is_judged_by_row():
    """Review of stop 60: a table whose index repeats (pd.concat of two frames) raised pandas' "Can only compare
    identically-labeled Series objects"; its rows are compared by position now."""
    from lbee.io.label_lookalike import label_lookalike

    rng = np.random.default_rng(1)
    table = _binary(rng, 200, "annotation", np.zeros(200, int))
    top = (table["prob_dog"] > 0.5).astype(int).to_numpy()
    table["annotation"] = np.where(rng.random(200) < 0.72, top, 1 - top)
    assert label_lookalike(table.set_axis([0] * 200)) == "annotation"
    table["annotation"] = top
    assert label_lookalike(pd.concat([table.iloc[:100], table.iloc[100:].reset_index(drop=True)])) is None
    # indices out of range name no class, and huge unsigned ones are no error
    table["annotation"] = np.array([2**63 + 5] * 100 + [1] * 100, dtype=np.uint64)
    assert label_lookalike(table) is None


def test_a_binary_models_fold_column_is_not_taken_for_labels():
    """N2: a 0/1 'fold' beside prob_0 / prob_1 agrees with the argmax on about half of the rows by chance, and was
    refused as the labels about half the time; agreement must now be beyond chance."""
    from lbee.io.label_lookalike import label_lookalike

    refused = sum(
        label_lookalike(_binary(rng, 300, "fold", rng.integers(0, 2, 300), ("0", "1"))) is not None
        for rng in (np.random.default_rng(s) for s in range(40))
    )
    assert refused <= 5, refused  # about 5 % by design (CHANCE_ALPHA); it was about half


def test_an_oversized_seed_is_quoted_short(tmp_path):
    """N1: a YAML seed of 500,000 digits came back whole in the error (a 500 KB 422); an int of over 4,300 digits
    given to the library could not even be written (Python's limit) and raised its own ValueError."""
    from click.testing import CliRunner

    from lbee._validation import check_seed
    from lbee.cli import cli

    entry = tmp_path / "job.yaml"
    entry.write_text("name: x\nspotcheck: {seed: " + "9" * 50_000 + "}\n")
    r = CliRunner().invoke(cli, ["report", "--check", str(entry)], obj={})
    assert r.exit_code == 2 and "(50,000 characters); expected an integer seed" in r.output and len(r.output) < 1000
    with pytest.raises(ValueError, match=r"^`seed` is an integer of about 5,001 digits; expected an integer seed"):
        check_seed(10**5000, "seed")
    # a minus sign is no digit (review of stop 60)
    with pytest.raises(ValueError, match=r"^`seed` is a negative integer of about 5,001 digits"):
        check_seed(-(10**5000), "seed")


@pytest.mark.parametrize("text", ["auto\n", "LOCAL", "", "1.2.3.4:1\n5.6.7.8:2"])
def test_ray_auto_refuses_an_address_file_that_holds_no_address(tmp_path, monkeypatch, text):
    """N3: a ray_current_cluster holding 'auto' sent Ray to any cluster it saw running (another user's), 'local' to
    a shared session."""
    import os

    ray_utils = pytest.importorskip("ray._private.utils")
    from lbee.ray_pool import _joined_address

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    (tmp_path / "ray").mkdir()
    os.chmod(tmp_path / "ray", 0o755)
    path = tmp_path / "ray" / "ray_current_cluster"
    path.write_text(text)
    os.chmod(path, 0o644)
    monkeypatch.setattr(ray_utils, "get_ray_address_file", lambda temp_dir: str(path))
    with pytest.raises(ValueError, match=r"holds no cluster address \(HOST:PORT\)"):
        _joined_address("auto")
