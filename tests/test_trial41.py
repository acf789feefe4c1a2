"""Trial 41 (a weld-seam inspection classifier): the first user's small stumbles, each said plainly."""

import re

from click.testing import CliRunner

from lbee.cli import cli


def run(args):
    return CliRunner().invoke(cli, args, obj={})


def test_a_word_after_a_flag_is_said_to_be_left_over_by_the_flag(tmp_path):
    """`--per-class errors` got click's bare "Got unexpected extra argument (errors)"."""
    r = run(["describe", str(tmp_path), "--per-class", "errors"])
    assert r.exit_code == 2
    assert "--per-class is a flag and takes no value: 'errors' is left over" in r.output, r.output
    r = run(["describe", str(tmp_path), "more", "words"])  # no flag before them: click's own words stay
    assert r.exit_code == 2 and "Got unexpected extra arguments (more words)" in r.output, r.output
    # sweep 32az N1: 'a' after the flag was taken for IMAGES and 'ab' was left over; "(ab" began with "(a"
    (tmp_path / "a").mkdir()
    r = run(["describe", "--overwrite", str(tmp_path / "a"), str(tmp_path / "ab")])
    assert r.exit_code == 2 and "takes no value" not in r.output and "unexpected extra argument" in r.output, r.output


def test_report_md_rounds_tau_and_numbers_its_findings_once_and_the_html_calls_a_tiny_group_too_small(
    demo_run, tmp_path
):
    """report.md printed tau=0.055727358907461166 and findings as "- 1. ..."; the HTML's "What fails" marked a
    4-image group "not confirmed" in red where the terminal folds it as too few images to tell."""
    inputs = demo_run[0] / "inputs"
    args = ["describe", "--image-embeddings", str(inputs / "image_embeddings.npy"), "--sentence-embeddings"]
    args += [str(inputs / "sentence_embeddings.npy"), "--sentences", str(inputs / "sentences.txt"), "--predictions"]
    args += [str(inputs / "predictions.csv"), "--relevance", str(inputs / "relevance.npy")]
    r = run([*args, "--clusters", "40", "--html", "--out", str(tmp_path / "d")])
    assert r.exit_code == 0, r.output
    md = (tmp_path / "d" / "report.md").read_text()
    assert re.search(r"tau=0\.0*[1-9]\d{0,3}\b", md), md[:800]  # 4 significant digits
    assert '\n1. "' in md and "- 1." not in md
    said = " ".join(r.output.split())
    assert re.search(r"\(\d+ of the \d+ errors in all images \(held-out images included\)\)", said), said
    html = (tmp_path / "d" / "report.html").read_text()
    table = html[html.index('id="group-table"') :]
    table = table[: table.index("</table>")]
    tiny = re.findall(r'<td class="num">([1-4])</td>.*?<td class="(\w+)">([^<]*)</td></tr>', table)
    assert tiny, "no group of fewer than 5 images in this run: the test needs one"
    assert all(cls == "muted" and words.startswith("not confirmed: too few images") for _, cls, words in tiny), tiny
    # the metrics say that such a group counts in AHR and ACR as much as the others (compose's AHR 0.50 on an exact
    # finding beside a 4-image group)
    sizes = ", ".join(n for n, _, _ in tiny)
    assert re.search(
        rf"each hard group counts once in AHR and ACR: the {len(tiny)} groups? of fewer than 5 images "
        rf"\({sizes} images\) counts? as much as the others",
        said,
    ), said


def test_the_metric_legend_names_tiny_groups_only_when_there_are_some():
    from lbee.run.text import metric_legend

    assert "fewer than 5 images (4, 2 images) count as much" in " ".join(metric_legend(["tops"], [4, 2]).split())
    assert "counts once" not in metric_legend(["tops"]) and "counts once" not in metric_legend(["tops"], [])
