"""Sweep 32as: one file name at two depths of a folder took for its other row, and label columns of other names."""

import numpy as np
import pandas as pd
import pytest


def test_an_ids_row_naming_two_images_of_the_run_by_its_end_is_refused(tmp_path):
    """B1: a folder holding i000.png and sub/i000.png, with embeddings whose ids.txt lists sub/ first, passed row by
    row (each listed id ends with the run's, or the run's with it, at a folder boundary), half its rows swapped. A
    row matches by its end only where it can name no other image of the run."""
    from lbee.io.row_ids import check_row_ids

    names = [f"i{k:03d}.png" for k in range(3)]
    run_ids = names + [f"sub/{n}" for n in names]  # the folder's sorted order
    np.save(tmp_path / "e.npy", np.zeros((6, 4), np.float32))
    (tmp_path / "ids.txt").write_text("".join(f"{i}\n" for i in [f"sub/{n}" for n in names] + names))
    with pytest.raises(ValueError, match=r"row 1 is the image 'sub/i000.png' .* row 1 of the folder is 'i000.png'"):
        check_row_ids(tmp_path / "e.npy", 6, run_ids, "image_embeddings", against="the folder", from_folder=True)
    # the same order passes; so do ids that name one image each by their end (an absolute path, a longer one)
    (tmp_path / "ids.txt").write_text("".join(f"/data/imgs/{i}\n" for i in run_ids))
    check_row_ids(tmp_path / "e.npy", 6, run_ids, "image_embeddings", against="the folder", from_folder=True)
    (tmp_path / "ids.txt").write_text("".join(f"{i}\n" for i in names + [f"sub/{n}" for n in names]))
    check_row_ids(tmp_path / "e.npy", 6, run_ids, "image_embeddings", against="the folder", from_folder=True)
    # a short id fitting both depths is refused even where it is listed in the run's order
    (tmp_path / "ids.txt").write_text("".join(f"{n}\n" for n in names + names))
    with pytest.raises(ValueError, match=r"row 4 is the image 'i000.png'"):
        check_row_ids(tmp_path / "e.npy", 6, run_ids, "image_embeddings", against="the folder", from_folder=True)


@pytest.mark.parametrize(
    "column",
    ["ground truth", "true class", "true labels", "gt_class", "target_label", "label_name", "groundtruth", "GT-Label"],
)
def test_a_label_column_under_another_name_is_refused_before_the_uncertainty_split(column):
    """B2: 'ground_truth' and 'true_class' were refused, 'ground truth', 'true class' and other names of the true
    classes were not: the run split by the model's uncertainty, exit 0, where confident errors look easy."""
    from lbee.io.label_lookalike import label_lookalike, refuse_unlabelled_lookalike

    table = pd.DataFrame({"image": ["a", "b"], "prob_cat": [0.9, 0.2], "prob_dog": [0.1, 0.8], column: ["cat", "dog"]})
    assert label_lookalike(table) == column
    with pytest.raises(ValueError, match=f"their '{column}' looks like one"):
        refuse_unlabelled_lookalike(label_lookalike(table), "auto", True, False)


@pytest.mark.parametrize("column", ["pred_class", "class_prob", "max_prob", "dataset", "split", "confidence_class"])
def test_columns_of_predictions_or_scores_are_not_taken_for_labels(column):
    from lbee.io.label_lookalike import label_lookalike

    table = pd.DataFrame({"image": ["a", "b"], "prob_cat": [0.9, 0.2], "prob_dog": [0.1, 0.8], column: ["x", "y"]})
    assert label_lookalike(table) is None
