"""The SpotCheck benchmark: lbee and its peers on worlds with known blindspots, scored against them.

It drives the run layer (`lbee.run`) over the worlds of [`lbee.spotcheck`][lbee.spotcheck], so it sits after both.
`lbee.bench.analysis` analyses one experimental configuration (EC) and scores it with complete ground truth;
`lbee.bench.driver` runs many ECs (``lbee spotcheck bench``), resumably, into one table. Beside them:
`protocol` (what the methods see under each protocol), `peers` (Domino and
PlaneSpot as the SpotCheck paper ran them) and `description` (the description score).

>>> from lbee.bench import analyze_ec, run_benchmark
>>> from lbee.run.models import load_encoder
>>> from lbee.spotcheck import make_ec
>>> encoder = load_encoder("spotcheck")                                 # doctest: +SKIP
>>> analysis = analyze_ec(make_ec(0), encoder, protocol="lbee")         # doctest: +SKIP
>>> records = run_benchmark(20, "lbee_out/bench", encoder=encoder)      # doctest: +SKIP
"""

from .analysis import ECAnalysis, analyze_ec
from .description import description_score
from .driver import bench_config, failure_notes, load_world, run_benchmark, save_world, summarize, write_tables
from .peers import slicer_hypotheses
from .protocol import MAX_HYPOTHESES, PROTOCOLS, positive_rows, subset_inputs

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
