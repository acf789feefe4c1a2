"""Sweep 28 (on 3faf699): the check of an output folder's entries stopped at 100,000 (a FIFO past them was deleted
by --overwrite), and the report's cached Vega bundle was written over a FIFO or a device and read whole."""

import os
import threading

import pytest

needs_fifos = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


@needs_fifos
def test_every_entry_of_an_output_folder_is_checked_before_it_is_replaced(tmp_path):
    from lbee.io.staging import OutputExistsError, refuse_special_entries

    many = tmp_path / "run" / "slicer_ward" / "a"
    many.mkdir(parents=True)
    for i in range(100_001):  # past the cap the check had
        os.close(os.open(many / f"{i}", os.O_CREAT | os.O_WRONLY))
    os.mkfifo(tmp_path / "run" / "slicer_ward" / "zz_fifo")
    with pytest.raises(OutputExistsError, match="zz_fifo' is a FIFO"):
        refuse_special_entries(tmp_path / "run", ["slicer_ward"])


@needs_fifos
def test_the_cached_vega_bundle_is_never_written_over_a_node_nor_read_whole(tmp_path):
    from lbee.reports import vega

    vega.vega_bundle.cache_clear()
    first = vega.vega_bundle(tmp_path)
    (cached,) = (tmp_path / "vega").glob("bundle-*.js")
    cached.unlink()
    os.mkfifo(cached)
    vega.vega_bundle.cache_clear()
    got = []
    reader = threading.Thread(target=lambda: got.append(vega.vega_bundle(tmp_path)))
    reader.start()
    reader.join(120)  # a hang bound: a FIFO read blocks forever
    assert not reader.is_alive() and got == [first] and cached.is_fifo()  # the node is left as it was
    cached.unlink()
    with open(cached, "wb") as f:
        f.truncate(vega.MAX_BUNDLE_BYTES + 1)  # sparse: read whole, a 2.5 GB one took 10.5 GB
    vega.vega_bundle.cache_clear()
    assert vega.vega_bundle(tmp_path) == first and cached.stat().st_size == len(first.encode())
    vega.vega_bundle.cache_clear()


def test_an_explain_array_with_a_number_no_float_holds_is_a_clear_error():
    """Lower: /v1/explain answered 500 to a JSON integer of 400 digits."""
    import numpy as np

    from lbee.service.explain import _array

    with pytest.raises(ValueError, match="`confidence` holds a number too large for a float"):
        _array([0.5, 10**400], "confidence", np.float64)


@needs_fifos
def test_the_demo_refuses_a_node_in_its_folder_before_its_work(tmp_path):
    """Lower: `lbee demo` refused a FIFO in its folder only after 25 s of work."""
    from click.testing import CliRunner

    from lbee.cli import cli

    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "ec").mkdir()  # a demo's folder (sweep 32h: a folder of other files is refused first)
    (tmp_path / "demo" / "ec" / "ec.json").write_text("{}")
    from lbee.cli.demo import DEMO_FIRST_LINE

    (tmp_path / "demo" / "demo.txt").write_text(DEMO_FIRST_LINE + "\n")
    os.mkfifo(tmp_path / "demo" / "report.md")
    r = CliRunner().invoke(cli, ["demo", "--out", str(tmp_path / "demo")], obj={})
    assert r.exit_code != 0 and "report.md' is a FIFO" in r.output and "rendering" not in r.output, r.output
    assert (tmp_path / "demo" / "report.md").is_fifo()
