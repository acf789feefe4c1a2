"""Attribute grammars: the reader refuses hostile files by file and line; sentences match the exact Γ."""

import numpy as np
import pytest
from click.testing import CliRunner

from lbee.cli import cli
from lbee.grammar import count_conjunctions, generate, list_grammars, load_grammar, parse_grammar
from lbee.io.sentences import load_sentence_set
from lbee.spotcheck import relevance_matrix, render
from lbee.spotcheck._world import ATTRIBUTES, DatasetDefinition

MINI = """\
name: mini
lead: An image with
subjects:
  - id: square
    noun: square
    deniable: true
    attributes:
      - id: color
        values: {blue: blue, orange: orange}
"""


def test_builtin_grammars_load_and_render():
    assert {"spotcheck", "street_scenes", "object_photos"} <= set(list_grammars())
    g = load_grammar("spotcheck")
    said = g.render(
        {
            ("square", "size"): "normal",
            ("square", "color"): "blue",
            ("text", "presence"): "true",
            ("circle", "presence"): "false",
            ("background", "texture"): "noise",
        }
    )
    assert said == "An image with a large blue square and some text but no circle, on a noisy background"
    assert g.render({("square", "number"): "2"}) == "An image with two squares"
    assert (
        g.render({("circle", "presence"): "false", ("text", "presence"): "false"}) == "An image with no circle or text"
    )
    with pytest.raises(ValueError, match="said absent"):
        g.render({("circle", "presence"): "false", ("circle", "color"): "blue"})
    for name in list_grammars():
        sents, conds, stats = generate(load_grammar(name), 2)
        assert len(set(s.casefold() for s in sents)) == len(sents) == stats["kept"]
        assert len({frozenset(c.items()) for c in conds}) == len(conds)


def test_spotcheck_grammar_conditions_are_the_exact_relevance():
    """Each generated sentence's conditions are the world's keys, and what the words say holds on the render."""
    g = load_grammar("spotcheck")
    sents, conds, _ = generate(g, 2)
    keys = set(ATTRIBUTES) | {("background", "position")}
    assert all(set(c) <= keys for c in conds)
    world = DatasetDefinition(["background", "square", "rectangle", "circle", "text"], list(ATTRIBUTES))
    rng = np.random.default_rng(0)
    attrs = [render(world.sample_attributes(rng), rng, 64)[1] for _ in range(120)]
    rel = relevance_matrix(attrs, [g.implied(c) for c in conds])
    words = {"blue": "blue", "orange": "orange", "stripes": "striped", "noise": "noisy", "grey": "grey"}
    for j, (s, c) in enumerate(zip(sents, conds)):
        for (layer, attr), value in c.items():
            if attr == "presence" and value == "false":
                assert f"no {layer}" in s or f"or {layer}" in s, s
            elif value in words:
                assert words[value] in s, s
        # a conjunction holds exactly where each of its conditions holds (presences implied by an attribute)
        single = np.ones(len(attrs), bool)
        for key, value in g.implied(c).items():
            single &= np.array([a.get(key) == value for a in attrs])
        assert np.array_equal(rel[:, j], single)
    assert rel.any(axis=0).mean() > 0.9  # nearly every sentence is true of some random render


@pytest.mark.parametrize(
    "text, message",
    [
        (MINI + "colour: red\n", r"line 10: unknown key 'colour' in the grammar"),
        (
            MINI.replace("    noun: square\n", "    noun: square\n    noun: box\n"),
            r"line 6: key 'noun' is written twice",
        ),
        (MINI.replace("{blue: blue, orange: orange}", "{}"), r"line 9: .*values is empty"),
        (MINI.replace("{blue: blue, orange: orange}", "{blue: blue, orange: blue}"), r"line 9: .*both said 'blue'"),
        (
            MINI.replace("deniable: true", "deniable: perhaps"),
            r"line 6: .*deniable is 'perhaps'; expected true or false",
        ),
        (MINI + "max_conditions: 9\n", r"line 10: max_conditions is 9 but the grammar has only 2 attributes"),
        (
            MINI.replace("      - id: color\n", "      - id: color\n        requires: [circle.presence=true]\n"),
            r"requires circle.presence=true, which the grammar does not declare",
        ),
        (
            MINI.replace(
                "      - id: color\n        values: {blue: blue, orange: orange}\n",
                "      - id: color\n        values: {blue: blue}\n      - id: color\n        values: {red: red}\n",
            ),
            r"attribute 'color' is declared twice",
        ),
        ("", r"the file is empty"),
        ("name: [unclosed\n", r"line \d+: not valid YAML"),
    ],
)
def test_hostile_grammar_files_name_file_and_line(text, message):
    with pytest.raises(ValueError, match=message) as info:
        parse_grammar(text, source="g.yaml")
    assert str(info.value).startswith("g.yaml")


def test_yaml_words_stay_words():
    """YAML 1.1 would read `no` as False and `1` as an int: values stay the words written."""
    g = parse_grammar(MINI.replace("{blue: blue, orange: orange}", "{no: none, 1: one}"), source="g.yaml")
    assert g.subject("square").attribute("color").values == {"no": "none", "1": "one"}


def test_enumeration_too_large_is_refused_before_any_work():
    g = load_grammar("spotcheck")
    assert count_conjunctions(g, 6) > 3_000_000
    with pytest.raises(ValueError, match=r"allows up to [\d,]+ conjunctions, over the limit"):
        generate(g, 6)
    with pytest.raises(ValueError, match="larger than the 20 attributes"):
        generate(g, 21)


def test_cli_generate_writes_sentences_and_conditions(tmp_path):
    out = tmp_path / "sc.txt"
    r = CliRunner().invoke(cli, ["sentences", "generate", "spotcheck", "--max-conditions", "2", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "contradictory" in r.output and "wrote 744 sentences" in r.output
    s = load_sentence_set(out)
    assert len(s) == 744 and len(s.conditions) == 744 and s.grammar.name == "spotcheck"
    assert s.conditions[s.sentences.index("An image with no circle")] == {("circle", "presence"): "false"}
    # a tampered table is refused with its line
    table = tmp_path / "sc.conditions.tsv"
    lines = table.read_text().splitlines()
    lines[5] = lines[5].split("\t")[0] + "\tcircle.presence=false; circle.color=blue"
    table.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"sc.conditions.tsv, line 6: .*said absent"):
        load_sentence_set(out)
    args = ["sentences", "generate", "spotcheck", "--max-conditions", "6", "--out", str(out), "--overwrite"]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code != 0 and "over the limit" in r.output and "Traceback" not in r.output


def test_cli_generate_with_classes(tmp_path):
    (tmp_path / "classes.txt").write_text("golden retriever\nfire truck\n")
    out = tmp_path / "photos.txt"
    r = CliRunner().invoke(
        cli,
        [
            "sentences",
            "generate",
            "object_photos",
            "--max-conditions",
            "2",
            "--classes",
            str(tmp_path / "classes.txt"),
            "--out",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    s = load_sentence_set(out)
    assert "A photo of a golden retriever, at night" in s.sentences
    assert "A photo of a dog" not in s.sentences


def test_grammar_as_sentence_set_name():
    s = load_sentence_set("spotcheck.grammar")
    assert s.grammar.name == "spotcheck" and len(s.sentences) == len(s.conditions) == 744
