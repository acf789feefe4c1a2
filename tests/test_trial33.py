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


GRAMMAR = """name: blades
lead: A drone photo of
bare: A drone photo
max_conditions: 2
subjects:
  - id: glare
    noun: sun glare
    deniable: true
settings:
  - id: sky
    noun: sky
    attributes:
      - id: colour
        kind: clause
        values: {grey: against a grey overcast sky, blue: against a blue sky}
"""


def test_lbee_simulate_embeds_an_attribute_table_without_weights(tmp_path):
    """The no-CLIP route took a 40-line script on lbee.bench's internals; `lbee simulate` writes what describe
    reads: the images' and sentences' embeddings with their provenance, and Γ from the table."""
    import json

    import numpy as np
    import pandas as pd
    from conftest import generated_sentences
    from conftest import lbee_cli as run

    generated_sentences(tmp_path, GRAMMAR, "blades")
    rng = np.random.default_rng(0)
    n = 300
    glare = rng.random(n) < 0.3
    table = pd.DataFrame({"image": [f"b{i}.png" for i in range(n)], "glare.presence": glare})
    table["sky.colour"] = rng.choice(["grey", "blue"], n)
    table.to_csv(tmp_path / "attributes.csv", index=False)
    out = tmp_path / "emb"
    r = run("simulate", tmp_path / "attributes.csv", "--sentences", tmp_path / "s.txt", "--out", out)
    assert r.exit_code == 0, r.output
    assert "300 images and" in r.output and "Next: lbee describe" in r.output
    x, s, gamma = (np.load(out / f) for f in ("embeddings.npy", "sentence_embeddings.npy", "relevance.npy"))
    texts = [t for t in (tmp_path / "s.txt").read_text().splitlines() if t and not t.startswith("#")]
    assert x.shape[0] == n and s.shape == (len(texts), x.shape[1]) and gamma.shape == (n, len(texts))
    assert (out / "ids.txt").read_text().split() == table["image"].tolist()
    record = json.loads((out / "embeddings.provenance.json").read_text())
    assert record["encoder"]["encoder"] == "simulated" and record["tau"] > 0
    # Γ is the table's truth: "... of sun glare, against a grey overcast sky" holds where both do
    j = texts.index("A drone photo of a sun glare, against a grey overcast sky")
    assert (gamma[:, j] == (glare & (table["sky.colour"] == "grey"))).all()
    r = run("simulate", tmp_path / "attributes.csv", "--sentences", tmp_path / "s.txt", "--out", out)
    assert r.exit_code != 0 and "--overwrite" in r.output  # nothing replaced in silence
    table.loc[7, "sky.colour"] = "green"
    table.to_csv(tmp_path / "bad.csv", index=False)
    r = run("simulate", tmp_path / "bad.csv", "--sentences", tmp_path / "s.txt", "--out", tmp_path / "e2")
    said = " ".join(r.output.split())
    assert (
        r.exit_code == 1
        and "bad.csv" in said
        and "column 'sky.colour', row 8: 'green'" in said
        and "row 1 is the file's first data row" in said
    ), r.output
    for bad, said in (("b1.png", "repeats the image id 'b1.png'"), ("", "has missing cell(s) at row 1")):
        table.loc[0, "image"] = bad  # a repeated or a blank id: its rows could not be told apart in ids.txt
        table.loc[7, "sky.colour"] = "grey"
        table.to_csv(tmp_path / "ids.csv", index=False)
        r = run("simulate", tmp_path / "ids.csv", "--sentences", tmp_path / "s.txt", "--out", tmp_path / "e2")
        assert r.exit_code == 1 and said in " ".join(r.output.split()), r.output
    (tmp_path / "plain.txt").write_text("A drone photo\n")
    r = run("simulate", tmp_path / "attributes.csv", "--sentences", tmp_path / "plain.txt", "--out", tmp_path / "e3")
    assert r.exit_code == 1 and "has no grammar" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "e2").exists() and not (tmp_path / "e3").exists()


def test_the_terminal_says_when_the_other_describers_agree_on_another_first_sentence():
    """compose said "against a grey overcast sky"; setdiff, pdiff, fpdiff and domino all put "of sun glare, against a
    grey overcast sky" first, which the terminal showed only with -v. Now one line says it; not when they agree
    with compose, nor when fewer than most of them agree."""
    from types import SimpleNamespace

    import numpy as np

    from lbee.core.explanation import Explanation, HardCluster
    from lbee.run.text import terminal_blocks

    texts = ["grey sky", "sun glare, grey sky", "blue sky", "blur"]

    def exp(method, first):
        return Explanation([HardCluster(np.arange(20), np.zeros(2), 0, [first, 2], [0.5, 0.1])], [], method, {}, texts)

    def shown(firsts):
        exps = {m: exp(m, f) for m, f in firsts.items()}
        result = SimpleNamespace(explanations=exps, performance=np.zeros(40), extra={})
        return " ".join(terminal_blocks(result, width=200, others=False).split())

    said = shown({"compose": 0, "setdiff": 1, "pdiff": 1, "fpdiff": 1, "domino": 1})
    assert "compose grey sky (also: blue sky)" in said
    assert "others sun glare, grey sky (first for setdiff, pdiff, fpdiff, domino;" in said
    assert "others" not in shown({"compose": 1, "setdiff": 1, "pdiff": 1, "fpdiff": 1})  # they agree with it
    assert "others" not in shown({"compose": 0, "setdiff": 1, "pdiff": 3, "fpdiff": 2, "domino": 1})  # 2 of 4
    assert "others" not in " ".join(
        terminal_blocks(
            SimpleNamespace(
                explanations={m: exp(m, f) for m, f in {"compose": 0, "setdiff": 1, "pdiff": 1}.items()},
                performance=np.zeros(40),
                extra={},
            ),
            width=200,
        ).split()
    )  # with -v every describer is shown: no summary line


def test_the_simulated_encoders_defaults_are_the_librarys():
    """`lbee simulate --quality` and `lbee bench worlds --levels` declare their defaults where the CLI stays light
    (lbee.bench is imported in the commands' bodies): they must be the library's, `DEFAULT_QUALITY` and `LEVELS`."""
    from lbee.bench.from_table import DEFAULT_QUALITY
    from lbee.bench.world_bench import LEVELS
    from lbee.cli import cli

    quality = next(p for p in cli.commands["simulate"].params if p.name == "quality")
    levels = next(p for p in cli.commands["bench"].commands["worlds"].params if p.name == "levels")
    assert quality.default == DEFAULT_QUALITY
    assert tuple(float(v) for v in levels.default.split(",")) == LEVELS
