"""Attribute grammars: the reader refuses hostile files by file and line; sentences match the exact Γ."""

import json

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
    # a clause that names its subject stands alone; one that does not follows the subject's noun (a fourteenth
    # user's shipped grammar said "A photo partly hidden behind something": what is hidden was lost)
    assert g.render({("background", "position"): "above"}) == "An image where the square is above the center"
    photos = load_grammar("object_photos")
    hidden = photos.render({("object", "occlusion"): "occluded"})
    assert hidden == "A photo of an object, partly hidden behind something"
    # ...and one whose object is the subject's noun does not name it (trial 27: "A shelf photo partly hidden
    # behind another product"); "where a deer is grazing" does
    shelf = parse_grammar(
        "name: shelf\nlead: A shelf photo with\nbare: A shelf photo\nsubjects:\n  - id: product\n    noun: product\n"
        "    attributes:\n      - id: occlusion\n        kind: clause\n"
        "        values: {hidden: partly hidden behind another product}\n"
    )
    assert shelf.render({("product", "occlusion"): "hidden"}) == (
        "A shelf photo with a product, partly hidden behind another product"
    )
    assert load_grammar("camera_traps").render({("deer", "pose"): "grazing"}) == (
        "A camera-trap photo where a deer is grazing"
    )
    assert photos.render({("object", "class"): "dog", ("object", "viewpoint"): "above"}) == (
        "A photo of a dog, seen from above"
    )
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
        (  # a setting said without a preposition: "A photo a red feeder" (a sixteenth user)
            MINI + "settings:\n  - id: feeder\n    noun: feeder\n    attributes:\n      - id: colour\n"
            "        values: {red: red, green: green}\n",
            r"line 11: .*give it `preposition:`",
        ),
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


# ---- issue 32: bounded reading, hostile values, the sidecar as evidence ---------------------------------------


def alias_bomb(levels, width=10):
    """A grammar whose 'description' holds ``width ** levels`` values in a few hundred bytes."""
    lines = [MINI.rstrip("\n"), 'a0: &a0 ["x"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join([*lines, f"description: *a{levels}"]) + "\n"


def test_a_grammar_alias_bomb_is_refused_before_it_is_built(tmp_path):
    """Issue 32: 8 alias levels made `sentences generate` reach 3.7 GB in 60 s; refused from the node graph."""
    import time

    (tmp_path / "g.yaml").write_text(alias_bomb(6))
    start = time.perf_counter()
    expected = r"g.yaml: its aliases expand to 4,456,781 nodes beyond the 41 the text writes; at most 100,000"
    with pytest.raises(ValueError, match=expected):
        load_grammar(tmp_path / "g.yaml")
    assert time.perf_counter() - start < 5  # 10^6 nodes were built before the fix


def test_the_cli_refuses_a_grammar_alias_bomb_quickly(tmp_path):
    import subprocess
    import sys
    import time

    bomb = tmp_path / "bomb.grammar.yaml"
    bomb.write_text(alias_bomb(8))
    start = time.perf_counter()
    run = subprocess.run(  # a subprocess, so that a regression is a timeout, not a machine out of memory
        [sys.executable, "-c", "from lbee.cli import cli; cli()", "sentences", "generate", str(bomb), "--out", "o.txt"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert time.perf_counter() - start < 60
    assert (
        run.returncode != 0
        and "at most 100,000 are accepted" in run.stderr + run.stdout
        and "Traceback" not in run.stderr
    )
    assert not (tmp_path / "o.txt").exists()


@pytest.mark.parametrize(
    "text, message",
    [
        (MINI + "loop: &l [x, *l]\n", r"g.yaml, line \d+: an alias refers to the mapping or list that contains it"),
        (MINI + "deep: " + "[" * 3000 + "]" * 3000 + "\n", r"g.yaml, line 10: .*nested more than 64 levels"),
        (
            MINI + "deep:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 3000)) + " " * 3000 + "x\n",
            r"g.yaml, line 74: .*nested more than 64 levels",
        ),
    ],
    ids=["recursive alias", "3000 nested lists", "3000 nested mappings"],
)
def test_recursive_and_deep_grammars_are_clear_errors(text, message):
    """Issue 32: both gave RecursionError."""
    with pytest.raises(ValueError, match=message):
        parse_grammar(text, source="g.yaml")


def test_a_grammar_of_40k_values_reads_in_linear_time():
    """Issue 32: each value name was tested against a tuple of all of them (40k values: 60 s)."""
    import time

    values = "\n".join(f"          v{i}: word {i}" for i in range(40_000))
    text = MINI.replace("        values: {blue: blue, orange: orange}\n", f"        values:\n{values}\n")
    start = time.perf_counter()
    g = parse_grammar(text, source="g.yaml")
    assert time.perf_counter() - start < 20  # about 2 s
    assert len(g.subject("square").attribute("color").values) == 40_000


@pytest.mark.parametrize(
    "words, char",
    [("blue\nAn image with a red", "000A"), ("blue\u2028square", "2028"), ("blue\x85sky", "0085"), ("a\tb", "0009")],
)
def test_grammar_words_on_two_lines_are_refused(words, char):
    """Issue 32: 'An image with a blue' loaded with no conditions, the rest of the words on another line."""
    text = MINI.replace("{blue: blue, orange: orange}", "{blue: " + json.dumps(words) + ", orange: orange}")
    with pytest.raises(ValueError, match=rf"g.yaml, line 9: .*value 'blue' .* holds the character U\+{char}"):
        parse_grammar(text, source="g.yaml")


@pytest.mark.parametrize("name", ["blue; square.presence=false", "a=b", "sq.blue", "", " blue", "blue sky"])
def test_value_names_cannot_hold_the_conditions_separators(name):
    """Issue 32: a value named 'blue; circle.presence=false' injected a condition into the sidecar."""
    text = MINI.replace("{blue: blue, orange: orange}", "{" + json.dumps(name) + ": blue, orange: orange}")
    with pytest.raises(ValueError, match=r"g.yaml, line 9: .*value name .* must be letters, digits, '_' or '-'"):
        parse_grammar(text, source="g.yaml")


@pytest.mark.parametrize(
    "text, message",
    [
        (MINI + 'max_conditions: "²"\n', r"line 10: max_conditions is '²'; expected a positive integer"),
        (MINI + f"max_conditions: {'9' * 5000}\n", r"line 10: max_conditions is 5,000 characters long"),
        (MINI.replace("lead: An image with", "lead: '#1 An image with'"), r"line 2: lead '#1 An image with' starts"),
        (
            MINI.replace("      - id: color\n", "      - id: tone\n        values: {navy: blue}\n      - id: color\n"),
            r"line 10: .*color=blue and tone=navy \(line 8\) are both said 'blue'",
        ),
        (
            MINI.replace("      - id: color\n", "      - id: color\n        requires: [square.color=blue]\n"),
            r"g.yaml, line 8: square.color requires square.color=blue, a value of the same attribute: its other "
            r"values \(orange\) can never hold",
        ),
    ],
    ids=["superscript", "5000 digits", "lead opens a comment", "two attributes, one word", "requires itself (#35)"],
)
def test_more_hostile_grammar_values(text, message):
    with pytest.raises(ValueError, match=message):
        parse_grammar(text, source="g.yaml")


CHAIN = """\
name: chain
lead: An image with
subjects:
  - id: square
    noun: square
    deniable: true
    attributes:
      - id: anchor
        values: {top: anchored}
        requires: [circle.marker=set]
  - id: circle
    noun: circle
    deniable: true
    attributes:
      - id: marker
        values: {set: marked}
        requires: [text.presence=true]
  - id: text
    noun: text
    article: ""
    deniable: true
settings:
  - id: scene
    noun: scene
    attributes:
      - id: layout
        kind: clause
        values: {above: where the square is above the circle}
        requires: [square.anchor=top]
"""


def test_a_requires_chain_is_followed_to_its_end():
    """Issue 32: layout needs square.anchor, which needs circle.marker, which needs text: 'no text' contradicts."""
    g = parse_grammar(CHAIN, source="chain.yaml")
    assert g.implied({("scene", "layout"): "above"}) == {
        ("scene", "layout"): "above",
        ("square", "anchor"): "top",
        ("square", "presence"): "true",
        ("circle", "marker"): "set",
        ("circle", "presence"): "true",
        ("text", "presence"): "true",
    }
    sentences, conditions, _ = generate(g, 2)
    assert "An image with no text, where the square is above the circle" not in sentences
    for c in conditions:  # every literal a sentence commits to, the chain's end included, holds together
        assert g.contradiction(g.implied(c)) is None, c


def test_two_conjunctions_said_alike_are_refused_by_generate():
    """Issue 32: two attributes sharing words gave duplicate sentence texts (the set then failed to load)."""
    g = parse_grammar(MINI.replace("noun: square", "noun: circle") + "  - id: circle\n    noun: circle\n", source="g")
    with pytest.raises(ValueError, match=r"\{square.presence=true\} and \{circle.presence=true\} are both said"):
        generate(g, 1)


@pytest.mark.parametrize(
    "classes, message",
    [
        ("# my classes\ndog\n#1 hit\n", r"line 3: '#1 hit' starts with '#' but is not a comment"),
        ("dog\ncat\tbird\n", r"line 2: 'cat\\tbird' holds the character U\+0009"),
        ("dog\nDog\n", r"line 2 repeats the class of line 1"),
        ("dog\n\u202ecat\n", r"line 2: '\\u202ecat' holds the character U\+202E .*invisible character"),
        ("cat\u200b\ndog\n", r"line 1: 'cat\\u200b' holds the character U\+200B"),
        ("caf\u00e9\ncafe\u0301\n", r"line 2 repeats the class of line 1"),
        ("a b\ndog\na-b\n", r"lines 1 and 3: 'a b' and 'a-b' both map to the value id 'a_b'"),
        ("dog\n" + "x" * 201 + "\n", r"line 2: the class name is 201 characters long; expected at most 200"),
    ],
    ids=["hash", "tab", "case", "bidi override", "zero-width space", "NFC and NFD", "one value id", "too long"],
)
def test_cli_classes_lines_are_never_dropped_in_silence(tmp_path, classes, message):
    """Issue 32: a --classes line '#1 hit' was read as a comment and dropped."""
    import re

    (tmp_path / "c.txt").write_text(classes)
    args = ["sentences", "generate", "object_photos", "--classes", str(tmp_path / "c.txt")]
    r = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "p.txt")])
    assert r.exit_code != 0 and re.search(message, r.output), r.output
    (tmp_path / "c.txt").write_text("# my classes\n#\n#  spaced comment\ndog\n")
    r = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "q.txt")])
    assert r.exit_code == 0, r.output
    assert [v for _, v in load_sentence_set(tmp_path / "q.txt").grammar.keys() if v != ("true",)][0] == ("dog",)


def _generated(tmp_path):
    out = tmp_path / "sc.txt"
    r = CliRunner().invoke(cli, ["sentences", "generate", "spotcheck", "--out", str(out)])
    assert r.exit_code == 0, r.output
    return out, tmp_path / "sc.conditions.tsv"


def _edit(table, edit):
    lines = table.read_text().splitlines()
    edit(lines)
    table.write_text("\n".join(lines) + "\n")


def _swap_cells(lines):
    (s1, c1), (s2, c2) = lines[3].split("\t"), lines[4].split("\t")
    lines[3], lines[4] = f"{s1}\t{c2}", f"{s2}\t{c1}"


def _blank_cell(lines):
    lines[3] = lines[3].split("\t")[0] + "\t"


def _drop_digest(lines):
    lines[:] = [ln for ln in lines if not ln.startswith("# grammar_digest")]


def _two_grammars(lines):
    lines.insert(0, "# grammar: street_scenes")


def _two_digests(lines):
    lines.insert(2, "# grammar_digest: sha256:" + "0" * 64)


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            _swap_cells,
            r"sc.conditions.tsv, line 4: sentence 'An image with a square' is not what grammar 'spotcheck' says "
            r"for its conditions 'square.presence=false' \(expected 'An image with no square'\)",
        ),
        (_blank_cell, r"sc.conditions.tsv, line 4: the conditions cell of 'An image with a square' is empty"),
        (_drop_digest, r"sc.conditions.tsv: no '# grammar_digest: sha256:...' line"),
        (_two_grammars, r"sc.conditions.tsv, line 2: a second '# grammar:' line; expected one"),
        (_two_digests, r"sc.conditions.tsv, line 3: a second '# grammar_digest:' line; expected one"),
    ],
    ids=["swapped cells", "blank cell", "no digest", "two grammar lines (sweep #36)", "two digests"],
)
def test_a_sidecar_row_must_be_what_the_grammar_says(tmp_path, edit, message):
    """Issue 32: swapped or blanked condition cells loaded, and so did a sidecar without its digest line."""
    out, table = _generated(tmp_path)
    assert len(load_sentence_set(out).conditions) == 744
    _edit(table, edit)
    with pytest.raises(ValueError, match=message):
        load_sentence_set(out)


@pytest.mark.parametrize("words", ["re\u200bd", "\u202ered", "soft\u00adhyphen", "\ufeffred"])
def test_grammar_words_with_invisible_format_characters_are_refused(words):
    """Sweep #18: a zero-width space or a right-to-left override was accepted into the sentence text."""
    text = MINI.replace("{blue: blue, orange: orange}", "{blue: " + json.dumps(words) + ", orange: orange}")
    message = r"g.yaml, line 9: .*value 'blue' .* holds the character U\+[0-9A-F]{4} .*invisible character"
    with pytest.raises(ValueError, match=message):
        parse_grammar(text, source="g.yaml")


@pytest.mark.parametrize(
    "a, b", [("caf\u00e9", "cafe\u0301"), ("\ufb01ne", "fine"), ("Blue", "blue")], ids=["NFC/NFD", "ligature", "case"]
)
def test_values_said_alike_once_normalised_are_refused(a, b):
    """Sweep #17: 'café' precomposed and with a combining accent gave pairs of sentences that look the same."""
    text = MINI.replace("{blue: blue, orange: orange}", "{blue: " + json.dumps(a) + ", orange: " + json.dumps(b) + "}")
    with pytest.raises(ValueError, match=r"g.yaml, line 9: .*values 'blue' and 'orange' are both said"):
        parse_grammar(text, source="g.yaml")


def test_a_long_word_is_refused_with_its_line():
    text = MINI.replace("{blue: blue, orange: orange}", "{blue: " + "b" * 201 + ", orange: orange}")
    with pytest.raises(ValueError, match=r"g.yaml, line 9: .*value 'blue' is 201 characters long .*at most 200"):
        parse_grammar(text, source="g.yaml")
    assert parse_grammar(text.replace("b" * 201, "b" * 200), source="g.yaml")


def test_an_aliased_long_word_is_refused_before_any_sentence_is_rendered(tmp_path):
    """Sweep #7: 100 subjects whose value 'a' is one aliased 100,000-character word (109 KB) rendered gigabytes of
    sentences: `sentences generate` ended in a bare MemoryError after 15 s (at a 4 GB limit)."""
    import resource
    import subprocess
    import sys
    import time

    lines = ["name: nb", "lead: An image with", "max_conditions: 2", "subjects:"]
    for i in range(100):
        word = '&s "' + "x" * 100_000 + '"' if i == 0 else "*s"
        lines += [f"  - id: thing{i}", f"    noun: thing{i}", "    attributes:", "      - id: c"]
        lines += [f"        values: {{a: {word}, b: plain}}"]
    (tmp_path / "nb.grammar.yaml").write_text("\n".join(lines) + "\n")

    def at_most_3_gb():  # in the child: a regression is a MemoryError, not a machine out of memory
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    start = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-c", "from lbee.cli import cli; cli()", "sentences", "generate", "nb.grammar.yaml"]
        + ["--out", "nb.txt"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=at_most_3_gb,
    )
    assert time.perf_counter() - start < 60
    said = run.stdout + run.stderr
    assert run.returncode != 0 and "Traceback" not in said, said[-2000:]
    assert "nb.grammar.yaml, line 9: subjects entry 1 (thing0) attribute 1 (c) value 'a' is 100,000 characters" in said
    assert not (tmp_path / "nb.txt").exists()


def test_aliases_that_add_too_much_text_are_refused_from_the_node_graph():
    """Sweep #5-#7: the alias limit counted nodes only; a long string aliased thousands of times passed it."""
    text = MINI + 'long: &s "' + "x" * 500_000 + '"\ndescription: [' + ", ".join(["*s"] * 4000) + "]\n"
    message = r"g.yaml: its aliases expand to 2,000,000,000 characters of text beyond the .* at most 10,000,000"
    with pytest.raises(ValueError, match=message):
        parse_grammar(text, source="g.yaml")


def test_a_generated_set_read_without_its_conditions_says_so(tmp_path, monkeypatch):
    """A sixteenth user copied a generated sentence file without its .conditions.tsv: compose and the merging went
    off in silence, and the failure split in two groups."""
    import warnings

    from lbee.cli import cli
    from lbee.io.sentences import load_sentence_set

    monkeypatch.chdir(tmp_path)
    from click.testing import CliRunner

    r = CliRunner().invoke(cli, ["-q", "sentences", "generate", "spotcheck", "--out", "s.txt"], obj={})
    assert r.exit_code == 0, r.output
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_sentence_set("s.txt").conditions is not None  # together: no word
    (tmp_path / "s.conditions.tsv").unlink()
    with pytest.warns(UserWarning, match="its conditions file 's.conditions.tsv' is not beside it.*without compose"):
        assert load_sentence_set("s.txt").conditions is None


def test_a_value_another_requires_is_said_and_counted_once():
    """An eighteenth user's clause `waterbody` required `cover.type=water`: generate wrote both "An aerial tile of
    land, where the water is a lake" and "An aerial tile of open water, where the water is a lake" (the same
    images), and "… of land and a road, the land where the water is a lake". The implied value is said, and the two
    conjunctions are one."""
    text = """
name: tiles
description: aerial tiles
lead: An aerial tile of
bare: An aerial tile
max_conditions: 2
subjects:
  - id: cover
    noun: land
    article: ""
    attributes:
      - id: type
        kind: noun
        values: {field: farmland, water: open water}
      - id: waterbody
        kind: clause
        requires: [cover.type=water]
        values: {river: where the water is a river, lake: where the water is a lake}
  - id: road
    noun: road
    deniable: true
"""
    g = parse_grammar(text, source="tiles.grammar.yaml")
    lake = {("cover", "waterbody"): "lake"}
    both = {("cover", "type"): "water", **lake}
    assert g.canonical(both) == lake and g.render(lake) == g.render(both)
    assert g.render(lake) == "An aerial tile of open water, where the water is a lake"
    assert g.render({**lake, ("road", "presence"): "true"}) == (
        "An aerial tile of open water and a road, where the water is a lake"
    )
    sentences, conditions, stats = generate(g)
    assert not [s for s in sentences if "land, where" in s or "the land where" in s]
    assert len(set(sentences)) == len(sentences) and stats["duplicates"] >= 2
    assert sum("where the water is a lake" in s and "road" not in s for s in sentences) == 1


@pytest.mark.parametrize("label", ["true", "false"])
def test_a_presence_another_requires_is_said_and_counted_once(label):
    """Sweep 30: with `requires: [label.presence=false]`, generate wrote "An image with a torn box" and "An image
    with a torn box but no label" (the same images); with `=true`, "a torn box" meant "and a label" unsaid."""
    text = f"""
name: parcels
description: parcels
lead: A parcel with
bare: A parcel
max_conditions: 2
subjects:
  - id: box
    noun: box
    attributes:
      - id: state
        kind: clause
        requires: [label.presence={label}]
        values: {{torn: where the box is torn}}
  - id: label
    noun: shipping label
    deniable: true
"""
    g = parse_grammar(text, source="parcels.grammar.yaml")
    torn = {("box", "state"): "torn"}
    both = {**torn, ("label", "presence"): label}
    assert g.canonical(both) == torn and g.render(both) == g.render(torn)
    said = "a shipping label" if label == "true" else "no shipping label"
    assert said in g.render(torn)
    sentences, _, _ = generate(g)
    assert sum("torn" in s for s in sentences) == 1 and len(set(sentences)) == len(sentences)


def test_a_noun_without_a_letter_or_digit_is_refused(tmp_path):
    """A clause names its subject by the noun's words (the noun index of `Grammar.render`): a noun of signs alone
    names nothing and was tried against every clause."""
    from lbee.grammar import load_grammar

    path = tmp_path / "g.grammar.yaml"
    path.write_text("name: g\nlead: A photo with\nbare: A photo\nsubjects:\n- id: s\n  noun: '!!'\n")
    with pytest.raises(ValueError, match=r"line 6.*noun '!!' has no letter or digit"):
        load_grammar(path)
