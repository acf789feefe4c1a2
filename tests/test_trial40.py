"""Trial 40 (a bottling line's glass inspection): with random weights, the groups are not merged by description."""

import json
import shutil

import numpy as np
from click.testing import CliRunner

from lbee.cli import cli

#: The identity an open_clip encoder with seeded random weights records (lbee.encoders._open_clip).
RANDOM_CLIP = {"encoder": "open_clip", "model": "ViT-B-32", "weights": "random:seed=0:0123456789abcdef01234567"}


def _describe(inputs, out, *extra):
    args = ["describe", "--image-embeddings", str(inputs / "image_embeddings.npy"), "--sentence-embeddings"]
    args += [str(inputs / "sentence_embeddings.npy"), "--sentences", str(inputs / "sentences.txt"), "--predictions"]
    args += [str(inputs / "predictions.csv"), "--clusters", "5", "--out", str(out), *extra]
    return CliRunner().invoke(cli, args, obj={}, catch_exceptions=False)


def test_random_weights_keep_the_clusterings_groups_instead_of_merging_by_meaningless_descriptions(demo_run, tmp_path):
    """A 700-image run on random weights merged its 9 groups by their descriptions, and 27 of the failure's 57 hard
    images fell in no hypothesis. The same inputs with the demo's own encoder are merged (test_first_day)."""
    from lbee.io.provenance import make_provenance, write_embeddings
    from lbee.run.identity import means_nothing

    inputs = tmp_path / "inputs"
    shutil.copytree(demo_run[0] / "inputs", inputs)
    sentences = [s for s in (inputs / "sentences.txt").read_text().splitlines() if not s.startswith("#")]
    X, S = np.load(inputs / "image_embeddings.npy"), np.load(inputs / "sentence_embeddings.npy")
    ids = (inputs / "image_embeddings.ids.txt").read_text().splitlines()
    record = make_provenance("image_embeddings", X, identity=RANDOM_CLIP, tau=0.25, row_ids=ids)
    write_embeddings(inputs / "image_embeddings.npy", X, record)
    record = make_provenance("sentence_embeddings", S, identity=RANDOM_CLIP, tau=0.25, sentences=sentences)
    write_embeddings(inputs / "sentence_embeddings.npy", S, record)
    assert means_nothing(RANDOM_CLIP)

    r = _describe(inputs, tmp_path / "random", "--html")
    assert r.exit_code == 0, r.output
    payload = json.loads((tmp_path / "random" / "explanation.json").read_text())
    params = payload["params"]
    assert params["unmerged"] is True and "n_slicer_groups" not in params
    assert params["n_hard_clusters_formed"] == 5
    assert "unassigned_hard" not in payload  # every hard image is in one of the clustering's groups
    said = " ".join(r.output.split())
    assert "5 hard groups (" in said and "not merged into hypotheses: the sentences mean nothing" in said
    html = (tmp_path / "random" / "report.html").read_text()
    assert "not merged into hypotheses (the sentences mean nothing)" in html


def test_describe_json_findings_name_their_images_by_id_as_confirmed_does():
    """`describe --json` gave a finding's images as row positions (``holds_for``) where `RunResult.confirmed()` and
    the client's give their ids (``images``)."""
    from types import SimpleNamespace

    from lbee.core.explanation import Explanation, HardCluster
    from lbee.run.confirm_text import ranked_statements, with_images
    from lbee.run.summary import summary_dict

    conf = {"status": "done", "ranked": [0], "statements": [{"text": "a fox", "n_in": 2, "holds_for": [1, 4]}]}
    hard = [HardCluster(np.arange(4), np.zeros(2), 0, [0], [1.0])]
    ids = [f"img_{i}.png" for i in range(6)]
    result = SimpleNamespace(
        explanations={"compose": Explanation(hard, [], "compose", {}, ["s"])},
        encoder={},
        extra={"confirmation": conf},
        image_ids=ids,
        failures=[],
    )
    (finding,) = summary_dict(result)["findings"]
    assert finding["holds_for"] == [1, 4] and finding["images"] == ["img_1.png", "img_4.png"]
    assert summary_dict(result)["findings"] == with_images(ranked_statements(conf), ids)  # as confirmed() gives them
