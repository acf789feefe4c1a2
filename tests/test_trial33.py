"""Trial 33 (a wind-turbine blade audit): what a new user met, each fixed and kept so."""

import pytest


def test_an_undecodable_image_is_said_in_words_not_as_a_file_object(tmp_path):
    """The skipped image's reason quoted Pillow's "cannot identify image file <_io.BytesIO object at 0x7f..>"."""
    from lbee.io.cache import file_sha256
    from lbee.io.images import open_rgb

    bad = tmp_path / "blade_0010.png"
    bad.write_bytes(b"not a picture at all")
    for sha256 in (None, file_sha256(bad)):  # read by path, and from the bytes hashed (the embedding's way)
        with pytest.raises(ValueError) as info:
            open_rgb(str(bad), sha256=sha256)
        said = str(info.value)
        assert "blade_0010.png" in said and "not an image file Pillow can decode" in said
        assert "BytesIO" not in said and "0x" not in said


def test_a_class_column_renamed_with_a_suffix_is_named_when_the_probabilities_do_not_add_up(tmp_path):
    """'prob_crack' renamed 'crack_prob' read as "rows summing to 0.92 ... if some class was left out": the column
    that was left out is named, with the name lbee reads. A 'max_prob' column of a table that adds up is no error."""
    import numpy as np
    import pandas as pd

    from lbee.io.predictions import validate_predictions
    from lbee.io.table_reader import read_table

    rng = np.random.default_rng(0)
    p = rng.dirichlet([1, 1, 1], 20)
    table = pd.DataFrame({"image": [f"{i}.png" for i in range(20)], "prob_clean": p[:, 0], "prob_erosion": p[:, 1]})
    table["crack_prob"] = p[:, 2]
    table.to_csv(tmp_path / "preds.csv", index=False)
    with pytest.raises(
        ValueError, match=r"'crack_prob' are not read as class probabilities \(did you mean 'prob_crack'"
    ):
        validate_predictions(read_table(tmp_path / "preds.csv"))
    table = table.rename(columns={"crack_prob": "prob_crack"})
    table["max_prob"] = p.max(axis=1)
    table.to_csv(tmp_path / "ok.csv", index=False)
    assert validate_predictions(read_table(tmp_path / "ok.csv")).probs.shape == (20, 3)


def test_report_check_says_what_the_run_will_assume(tmp_path):
    """`lbee report --check` said "no problem found" for bare embeddings; the run then warned that their rows follow
    the predictions' order and that CLIP's τ was assumed. --check says both first; ids and tau: silence them."""
    import numpy as np
    import pandas as pd
    from click.testing import CliRunner

    from lbee.cli import cli

    rng = np.random.default_rng(0)
    np.save(tmp_path / "img.npy", rng.normal(size=(12, 4)).astype(np.float32))
    np.save(tmp_path / "sen.npy", rng.normal(size=(3, 4)).astype(np.float32))
    (tmp_path / "s.txt").write_text("An image of a\nAn image of b\nAn image of c\n")
    ids = [f"i{i}" for i in range(12)]
    pd.DataFrame({"image": ids, "confidence": rng.random(12)}).to_csv(tmp_path / "p.csv", index=False)
    r = tmp_path
    entry = (
        f"datasets:\n  - name: blades\n    image_embeddings: {r}/img.npy\n    sentence_embeddings: {r}/sen.npy\n"
        f"    sentences: {r}/s.txt\n    predictions: {r}/p.csv\n"
    )
    (tmp_path / "c.yaml").write_text(entry)
    r = CliRunner().invoke(cli, ["report", "--check", str(tmp_path / "c.yaml")], obj={})
    text = " ".join(r.output.split())
    assert r.exit_code == 0 and "no problem found" in text, r.output
    assert "The run will assume" in text and "τ = 0.25 (CLIP's) will be assumed" in text
    assert "'img.npy' has no row ids beside it (img.ids.txt or ids.txt)" in text
    (tmp_path / "img.ids.txt").write_text("\n".join(ids) + "\n")
    (tmp_path / "c.yaml").write_text(entry.replace("datasets:\n", "defaults: {tau: 0.05}\ndatasets:\n"))
    r = CliRunner().invoke(cli, ["report", "--check", str(tmp_path / "c.yaml")], obj={})
    assert r.exit_code == 0 and "no problem found" in r.output and "assume" not in r.output, r.output
