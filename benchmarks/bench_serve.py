"""`lbee serve` at its documented limits: explain latency and peak memory of the server, against the library.

Starts `lbee serve` (a subprocess on a free 127.0.0.1 port, a temporary root,
database and token, one explain process, no job workers). For each case at a
limit of `lbee.service.settings.EXPLAIN_LIMITS` it runs the same analysis as a
plain library call (`lbee.explain_methods` in a fresh process, arrays loaded
from .npy files) as the baseline, then sends it as a POST /v1/explain with
.npy uploads (--repeats times, one at a time), and prints:

- the request's latency (median) and its ratio to the library call's time;
- the peak resident memory (VmHWM) of the server process and of the explain
  process after the case, and their ratios to the library process's peak.

Cases: 'images' (50,000 images, 20,000 sentences, d = 128: the image and
sentence limits, scalable Ward), 'exact_ward' (a hard and an easy split of
8,000 images each with ward 'exact': the exact-Ward limit), and 'refused' (the
review's 24,000-image exact-Ward request: answered 422 without clustering).

With --load it also sends a bounded number of concurrent 2,000-image requests
(--requests, --concurrency; JSON and .npy) and prints requests/s and p50 / p95
latency against the in-process rate. Every loop is bounded; the script stops
by itself.

Usage: python benchmarks/bench_serve.py [--repeats 2] [--cases images,exact_ward,refused] [--load]
"""

import argparse
import io
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import lbee  # noqa: E402

#: name -> (n images, N sentences, d, ward, split): 'confidence' (φ), or 'halves' (hard / easy masks of n / 2)
CASES = {
    "images": (50_000, 20_000, 128, "auto", "confidence"),
    "exact_ward": (16_000, 2_000, 128, "exact", "halves"),
    "refused": (24_000, 200, 4, "exact", "halves"),
}

LIBRARY = """
import json, resource, sys, time
import numpy as np
import lbee
folder, ward, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
arrays = {p: np.load(f"{folder}/{p}.npy") for p in ("image_embeddings", "sentence_embeddings", "confidence", "hard",
                                                   "easy") if __import__("os").path.exists(f"{folder}/{p}.npy")}
X, S = arrays.pop("image_embeddings"), arrays.pop("sentence_embeddings")
times = []
for _ in range(repeats):  # as many calls as the service answers, in one warm process: the median
    t0 = time.perf_counter()
    exps = lbee.explain_methods(X, S, methods=["fpdiff"], ward=ward, **arrays)
    times.append(time.perf_counter() - t0)
print(json.dumps({"seconds": sorted(times)[len(times) // 2], "selected": exps["fpdiff"].selected,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def payload(n=2000, N=200, d=512, seed=0):
    """Structured data: 20 image groups around sentence directions, the hard ones a few groups."""
    rng = np.random.default_rng(seed)
    S = rng.normal(size=(N, d)).astype(np.float32)
    S /= np.linalg.norm(S, axis=1, keepdims=True)
    group = rng.integers(0, 20, size=n)
    X = S[group * 3 % N] + 0.6 * S[(group * 3 + 1) % N] + 0.05 * rng.normal(size=(n, d)).astype(np.float32)
    X = (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)
    phi = np.where(group < 4, -1.0, 1.0) + 0.5 * rng.normal(size=n)
    return X, S, phi, [f"sentence {i}" for i in range(N)]


def npy(a):
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def peak_mib(pid):
    """VmHWM (peak resident set) of a process, MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry))
    return out


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q / 100 * (len(v) - 1))))]


def case_arrays(name):
    n, N, d, ward, split = CASES[name]
    X, S, phi, _ = payload(n, N, d)
    arrays = {"image_embeddings": X, "sentence_embeddings": S}
    if split == "confidence":
        arrays["confidence"] = phi
    else:
        arrays["hard"] = np.arange(n) < n // 2
        arrays["easy"] = ~arrays["hard"]
    return arrays, ward


def run_limits(args, base_url, headers, server, tmp, httpx):
    print(
        f"\n{'case':<11} {'n':>6} {'N':>6} {'d':>4} {'ward':>6} | {'library':>8} {'peak':>8} | "
        f"{'request':>8} {'x lib':>6} | {'server peak':>11} {'x lib':>6} | {'explain peak':>12} {'x lib':>6}"
    )
    for name in args.cases.split(","):
        arrays, ward = case_arrays(name)
        folder = tmp / name
        folder.mkdir()
        for k, v in arrays.items():
            np.save(folder / f"{k}.npy", v)
        n, N, d, _, _ = CASES[name]
        if name == "refused":
            lib = {"seconds": float("nan"), "peak_mib": float("nan"), "selected": None}
        else:
            out = subprocess.run(
                [sys.executable, "-c", LIBRARY, str(folder), ward, str(args.repeats)],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "PYTHONPATH": str(REPO)},
            )
            lib = json.loads(out.stdout.strip().splitlines()[-1])
        files = {k: (f"{k}.npy", npy(v)) for k, v in arrays.items()}
        form = {"settings": json.dumps({"methods": ["fpdiff"], "ward": ward})}
        times, status = [], None
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            r = httpx.post(f"{base_url}/v1/explain", files=files, data=form, headers=headers, timeout=600)
            times.append(time.perf_counter() - t0)
            status = r.status_code
            if name == "refused":
                assert status == 422 and "exact_ward" in r.text, r.text
            else:
                assert status == 200, r.text[:300]
                assert r.json()["explanations"]["fpdiff"]["selected"] == lib["selected"], "differs from the library"
        latency = statistics.median(times)
        server_peak = peak_mib(server.pid)
        worker_peak = max((peak_mib(p) for p in children(server.pid)), default=float("nan"))
        if name == "refused":  # no library call to compare with: the request is answered before any clustering
            print(
                f"{name:<11} {n:>6} {N:>6} {d:>4} {ward:>6} | {'-':>8} {'-':>8} | {latency:>7.2f}s {'-':>6} | "
                f"{server_peak:>9.0f}Mi {'-':>6} | {worker_peak:>10.0f}Mi {'-':>6}   (HTTP {status})"
            )
            continue
        print(
            f"{name:<11} {n:>6} {N:>6} {d:>4} {ward:>6} | {lib['seconds']:>7.2f}s {lib['peak_mib']:>6.0f}Mi | "
            f"{latency:>7.2f}s {latency / lib['seconds']:>5.2f}x | {server_peak:>9.0f}Mi "
            f"{server_peak / lib['peak_mib']:>5.2f}x | {worker_peak:>10.0f}Mi {worker_peak / lib['peak_mib']:>5.2f}x"
        )


def run_load(args, base_url, headers, httpx):
    """The concurrent 2,000-image load of earlier versions: requests/s and latency against the in-process rate."""
    X, S, phi, sentences = payload()
    settings = {"methods": ["fpdiff"]}
    lbee.explain_methods(X, S, confidence=phi, methods=["fpdiff"], sentences=sentences)  # warm-up
    base = []
    for _ in range(3):
        t0 = time.perf_counter()
        want = lbee.explain_methods(X, S, confidence=phi, methods=["fpdiff"], sentences=sentences)
        base.append(time.perf_counter() - t0)
    base_med = statistics.median(base)
    print(f"\nload: n={len(X)}, N={len(S)}, d={X.shape[1]}; in-process {base_med * 1000:.0f} ms per call")
    body_json = json.dumps(
        {
            "image_embeddings": X.tolist(),
            "sentence_embeddings": S.tolist(),
            "confidence": phi.tolist(),
            "sentences": sentences,
            "settings": settings,
        }
    ).encode()
    files = {
        "image_embeddings": ("x.npy", npy(X)),
        "sentence_embeddings": ("s.npy", npy(S)),
        "confidence": ("c.npy", npy(phi)),
    }
    form = {"settings": json.dumps(settings), "sentences": "\n".join(sentences)}
    failed = 0
    for transport in ("npy", "json"):
        local, stop_at = threading.local(), time.time() + args.max_seconds

        def one(_, transport=transport, local=local, stop_at=stop_at):
            if time.time() > stop_at:
                return None
            client = getattr(local, "client", None) or httpx.Client(timeout=args.max_seconds)
            local.client = client
            t0 = time.perf_counter()
            try:
                if transport == "json":
                    r = client.post(
                        f"{base_url}/v1/explain",
                        content=body_json,
                        headers={**headers, "content-type": "application/json"},
                    )
                else:
                    r = client.post(f"{base_url}/v1/explain", files=files, data=form, headers=headers)
                ok = r.status_code == 200 and r.json()["explanations"]["fpdiff"]["selected"] == want["fpdiff"].selected
                err = None if ok else f"{r.status_code}: {r.text[:200]}"
            except httpx.HTTPError as exc:
                err = f"{type(exc).__name__}: {exc}"
            return time.perf_counter() - t0, err

        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.concurrency) as pool:
            results = [r for r in pool.map(one, range(args.requests)) if r is not None]
        wall = time.perf_counter() - t0
        lat = [t for t, _ in results]
        errors = [e for _, e in results if e]
        failed += len(errors)
        rps = len(results) / wall
        print(
            f"  [{transport}] {len(results)} requests, concurrency {args.concurrency}: {rps:.2f} requests/s "
            f"({rps * base_med:.2f}x in-process), p50 {pct(lat, 50):.2f} s ({pct(lat, 50) / base_med:.1f}x), "
            f"p95 {pct(lat, 95):.2f} s ({pct(lat, 95) / base_med:.1f}x), failed {len(errors)}"
            + (f" e.g. {errors[0]}" if errors else "")
        )
    return failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES))
    ap.add_argument("--repeats", type=int, default=2, help="requests per case (sequential)")
    ap.add_argument("--load", action="store_true", help="also the concurrent 2,000-image load")
    ap.add_argument("--requests", type=int, default=24, help="load: requests per transport (bounded)")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--max-seconds", type=float, default=120, help="load: stop sending after this long")
    args = ap.parse_args()
    import httpx

    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"python {platform.python_version()}, lbee {lbee.__version__}"
    )
    tmp = Path(tempfile.mkdtemp(prefix="lbee-bench-serve-"))
    (tmp / "root").mkdir()
    db = f"sqlite:///{tmp / 'lbee.db'}"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, str(REPO / "cli.py")]
    token = subprocess.run(
        cmd + ["serve", "token", "create", "bench", "--scope", "submit", "--db", db],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}"
    log = open(tmp / "server.log", "w")
    server = subprocess.Popen(
        cmd
        + [
            "serve",
            "--root",
            str(tmp / "root"),
            "--output",
            str(tmp / "out"),
            "--db",
            db,
            "--port",
            str(port),
            "--workers",
            "0",
            "--explain-workers",
            "1",
            "--log-level",
            "warning",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    failed = 0
    try:
        deadline = time.time() + 120
        while True:
            try:
                if httpx.get(f"{base_url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.time() > deadline:
                raise SystemExit("server did not start:\n" + (tmp / "server.log").read_text())
            time.sleep(0.2)
        headers = {"Authorization": f"Bearer {token}"}
        print(f"server at start: {peak_mib(server.pid):.0f} MiB peak resident")
        run_limits(args, base_url, headers, server, tmp, httpx)
        if args.load:
            failed = run_load(args, base_url, headers, httpx)
        print(
            f"\nserver after the benchmark: /health {httpx.get(f'{base_url}/health', timeout=5).status_code}, "
            f"peak resident {peak_mib(server.pid):.0f} MiB"
        )
    finally:
        server.terminate()
        server.wait(30)
        log.close()
    if failed:
        raise SystemExit(f"{failed} request(s) failed under load")


if __name__ == "__main__":
    main()
