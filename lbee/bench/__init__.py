"""The SpotCheck benchmark: lbee and its peers on worlds with known blindspots, scored against them.

It drives the run layer (:mod:`lbee.run`) over the worlds of :mod:`lbee.spotcheck`, so it sits after both:
:mod:`lbee.bench.analysis` analyses one experimental configuration (EC) and scores it with complete ground
truth, :mod:`lbee.bench.driver` runs many ECs (``lbee spotcheck bench``), resumably, into one table.

>>> from lbee.bench import analyze_ec, run_benchmark
>>> analysis = analyze_ec(make_ec(0), load_encoder("spotcheck"))      # doctest: +SKIP
>>> records = run_benchmark(20, "lbee_out/bench", encoder=encoder)    # doctest: +SKIP
"""

from .analysis import (
    MAX_HYPOTHESES,
    PROTOCOLS,
    ECAnalysis,
    analyze_ec,
    description_score,
    positive_rows,
    slicer_hypotheses,
    subset_inputs,
)
from .driver import bench_config, failure_notes, load_world, run_benchmark, save_world, summarize, write_tables

__all__ = [
    "MAX_HYPOTHESES",
    "PROTOCOLS",
    "ECAnalysis",
    "analyze_ec",
    "bench_config",
    "description_score",
    "failure_notes",
    "load_world",
    "positive_rows",
    "run_benchmark",
    "save_world",
    "slicer_hypotheses",
    "subset_inputs",
    "summarize",
    "write_tables",
]
