"""Sweep 32av's blocking cases: Ray's 'local' and 'auto' addresses, the SpotCheck encoder's caveat kept with the
embeddings and not lifted by another user's ec.json, and true-label columns that slipped past the look-alike check."""

import os

import pytest


def test_ray_local_is_lbees_own_private_ray(monkeypatch):
    """B1: `--ray-address local` started Ray in the shared TMPDIR/ray, a folder another user owned."""
    import lbee.ray_pool as rp

    calls = []

    class FakeRay:
        @staticmethod
        def is_initialized():
            return False

        @staticmethod
        def init(**kwargs):
            calls.append(kwargs)

    monkeypatch.setattr(rp, "import_ray", lambda: FakeRay)
    monkeypatch.setattr(rp, "_private_local_ray", lambda: {"_temp_dir": "private"})
    for address in (None, "", "local"):
        rp.ensure_ray(address)
        assert calls[-1]["address"] == "local" and calls[-1]["_temp_dir"] == "private"
    rp.ensure_ray("10.0.0.5:6379")  # a cluster the user named: theirs, as given
    assert calls[-1]["address"] == "10.0.0.5:6379" and "_temp_dir" not in calls[-1]


def test_ray_auto_reads_only_an_address_file_no_other_user_can_change(tmp_path, monkeypatch):
    """B1: `--ray-address auto` joined the cluster another user wrote into TMPDIR/ray/ray_current_cluster."""
    import ray._private.utils as ray_utils

    from lbee.ray_pool import _joined_address

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    folder = tmp_path / "ray"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    path = folder / "ray_current_cluster"
    monkeypatch.setattr(ray_utils, "get_ray_address_file", lambda temp_dir: str(path))
    with pytest.raises(ValueError, match="no cluster address in .*ray_current_cluster"):
        _joined_address("auto")
    path.write_text("127.0.0.1:6379\n")
    os.chmod(path, 0o644)
    assert _joined_address("auto") == "127.0.0.1:6379"
    os.chmod(path, 0o666)
    with pytest.raises(ValueError, match="another user can change it.* give the cluster's address"):
        _joined_address("auto")
    os.chmod(path, 0o644)
    os.chmod(folder, 0o777)  # a folder anyone may write in: the file can be swapped
    with pytest.raises(ValueError, match="is not safe"):
        _joined_address("auto")
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.7:6379")  # the user's own environment decides
    assert _joined_address("auto") == "auto"


def _world(folder, definition='{"version": 2, "dataset": {"layers": []}}'):
    (folder / "images" / "test").mkdir(parents=True)
    (folder / "ec.json").write_text(definition)
    (folder / "metadata.parquet").write_bytes(b"")
    (folder / "model.pt").write_bytes(b"")
    from PIL import Image

    Image.new("RGB", (8, 8)).save(folder / "images" / "test" / "0.png")  # a world's render (none: no images)
    return folder / "images" / "test"


def test_only_a_whole_saved_world_of_this_user_lifts_the_spotcheck_caveat(tmp_path):
    """B3: any file named ec.json above the images lifted the caveat: another user's empty /tmp/ec.json, for every
    run under /tmp."""
    from lbee.encoders import encoder_caveat

    images = _world(tmp_path / "world")
    assert encoder_caveat("spotcheck", images) is None
    assert encoder_caveat("spotcheck", tmp_path / "world") is None  # the world itself
    (tmp_path / "world" / "ec.json").write_text("")  # an empty (or any non-definition) ec.json
    assert encoder_caveat("spotcheck", images) is not None
    (tmp_path / "world" / "ec.json").write_text('{"version": 2, "dataset": {"layers": []}}')
    os.chmod(tmp_path / "world" / "ec.json", 0o666)  # another user could write it
    assert encoder_caveat("spotcheck", images) is not None
    os.chmod(tmp_path / "world" / "ec.json", 0o644)
    (tmp_path / "world" / "model.pt").unlink()  # not a whole world
    assert encoder_caveat("spotcheck", images) is not None
    (tmp_path / "ec.json").write_text("{}")  # an ec.json above a folder that is no world's images
    (tmp_path / "photos").mkdir()
    assert encoder_caveat("spotcheck", tmp_path / "photos") is not None


def test_the_spotcheck_caveat_is_kept_with_the_embeddings(tmp_path):
    """B2: `lbee embed --encoder spotcheck` warned, but wrote no caveat: a describe of those embeddings, and
    `lbee.audit(provenance=)`, said nothing of it."""
    import json

    import numpy as np
    from click.testing import CliRunner
    from PIL import Image

    from lbee.cli import cli
    from lbee.run.identity import means_nothing

    photos = tmp_path / "photos"
    photos.mkdir()
    rng = np.random.default_rng(0)
    for k in range(4):
        Image.fromarray(rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)).save(photos / f"p{k}.png")
    r = CliRunner().invoke(cli, ["embed", str(photos), "--encoder", "spotcheck", "--out", str(tmp_path / "e")])
    assert r.exit_code == 0, r.output
    record = json.loads((tmp_path / "e" / "embeddings.provenance.json").read_text())
    assert "trained on SpotCheck renders only" in record["encoder"]["caveat"] and means_nothing(record["encoder"])
    images = _world(tmp_path / "world")
    for k in range(4):
        Image.fromarray(rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)).save(images / f"p{k}.png")
    r = CliRunner().invoke(cli, ["embed", str(images), "--encoder", "spotcheck", "--out", str(tmp_path / "w")])
    assert r.exit_code == 0, r.output
    record = json.loads((tmp_path / "w" / "embeddings.provenance.json").read_text())
    assert "caveat" not in record["encoder"] and not means_nothing(record["encoder"])


def _preds(rng, n=60, classes=("sports", "politics", "science")):
    import numpy as np
    import pandas as pd

    probs = rng.dirichlet(np.ones(len(classes)), size=n)
    top = probs.argmax(1)
    truth = np.where(rng.random(n) < 0.8, top, rng.integers(0, len(classes), n))  # right on about 85 %
    table = pd.DataFrame({"image": [f"i{k}.png" for k in range(n)]})
    for j, c in enumerate(classes):
        table[f"prob_{c}"] = probs[:, j]
    return table, truth


@pytest.mark.parametrize("column", ["topic", "confirmed_label", "problem_type", "hatch_class", "maximum_label"])
def test_words_that_only_begin_like_the_models_do_not_hide_a_label_column(column):
    """B4: 'topic' was read as 'top', 'confirmed' as 'conf', 'problem' as 'prob': the true classes slipped past."""
    import numpy as np

    from lbee.io.label_lookalike import label_lookalike

    table, truth = _preds(np.random.default_rng(0))
    table[column] = np.asarray(["sports", "politics", "science"])[truth]
    assert label_lookalike(table) == column


def test_the_classes_in_another_case_or_as_indices_read_as_the_labels():
    """B4: 'SPORTS' against prob_sports, and class indices against prob_0..prob_2, slipped past."""
    import numpy as np

    from lbee.io.label_lookalike import label_lookalike

    rng = np.random.default_rng(1)
    table, truth = _preds(rng)
    table["category"] = np.asarray(["SPORTS", "Politics", "science"])[truth]
    assert label_lookalike(table) == "category"
    table["category"] = np.asarray(["sports", "politics", "art"])[truth]  # a class without a prob_ column
    table.loc[table["category"] == "art", "category"] = "sports"
    table.loc[0, "category"] = "art"
    assert label_lookalike(table) == "category"
    table, truth = _preds(rng, classes=("0", "1", "2"))
    table["Category"] = truth
    assert label_lookalike(table) == "Category"
    table["Category"] = np.where(np.arange(len(truth)) < 3, np.nan, truth)  # a blank cell: read as floats
    assert label_lookalike(table) == "Category"
    # whole numbers that are not the labels: a fold, a seed, the model's own argmax, the predicted class
    table, truth = _preds(rng, n=300, classes=("0", "1", "2"))
    table["fold"] = rng.integers(0, 3, 300)
    table["seed"] = 1
    table["argmax_class"] = table[["prob_0", "prob_1", "prob_2"]].to_numpy().argmax(1)
    table["epoch"] = table["argmax_class"]
    assert label_lookalike(table) is None
