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
