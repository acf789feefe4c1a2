"""Wall time of `lbee demo` (EC generation, classifier training, embedding, all describers, metrics).

Usage: python benchmarks/bench_demo.py [--seeds 0 1 2]
"""

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = ap.parse_args()
    lbee = Path(sys.executable).with_name("lbee")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}")
    for seed in args.seeds:
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            subprocess.run([str(lbee), "demo", "--seed", str(seed), "--out", out], check=True,
                           stdout=subprocess.DEVNULL)
            print(f"lbee demo --seed {seed}: {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
