"""Load on `lbee serve`: concurrent POST /v1/explain calls with 2k-image payloads, on loopback only.

Starts `lbee serve` (a subprocess on a free 127.0.0.1 port, a temporary root,
database and token), measures the same analysis in-process as the baseline
(`lbee.explain_methods` on the same arrays, one call at a time), then sends a
bounded number of requests (--requests, default 48) from --concurrency threads
for at most --max-seconds (default 120): it stops by itself. Payload: n = 2,000
images, N = 200 sentences, d = 512, as JSON and as .npy uploads (multipart).
Prints requests/s and p50 / p95 latency in absolute terms and as ratios to the
in-process baseline, and the number of failed requests (must be 0).

Usage: python benchmarks/bench_serve.py [--requests 48] [--concurrency 4] [--max-seconds 120]
       [--transport json|npy|both] [--methods fpdiff]
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


def payload(n=2000, N=200, d=512, seed=0):
    """Structured data: 20 image groups around sentence directions, the hard ones a few groups."""
    rng = np.random.default_rng(seed)
    S = rng.normal(size=(N, d)).astype(np.float32)
    S /= np.linalg.norm(S, axis=1, keepdims=True)
    group = rng.integers(0, 20, size=n)
    X = S[group * 3] + 0.6 * S[group * 3 + 1] + 0.05 * rng.normal(size=(n, d)).astype(np.float32)
    X = (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)
    phi = np.where(group < 4, -1.0, 1.0) + 0.5 * rng.normal(size=n)
    return X, S, phi, [f"sentence {i}" for i in range(N)]


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q / 100 * (len(v) - 1))))]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=48, help="requests per transport (bounded)")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--max-seconds", type=float, default=120, help="stop sending after this long")
    ap.add_argument("--transport", choices=["json", "npy", "both"], default="both")
    ap.add_argument("--methods", default="fpdiff", help="comma-separated describers")
    ap.add_argument("--baseline-runs", type=int, default=5)
    args = ap.parse_args()
    import httpx

    methods = args.methods.split(",")
    X, S, phi, sentences = payload()
    settings = {"methods": methods}
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"python {platform.python_version()}, lbee {lbee.__version__}")
    print(f"payload: n={len(X)} images, N={len(S)} sentences, d={X.shape[1]}, methods={methods}")

    # baseline: the same analysis in-process, one call at a time
    lbee.explain_methods(X, S, confidence=phi, methods=methods, sentences=sentences)  # warm-up
    base = []
    for _ in range(args.baseline_runs):
        t0 = time.perf_counter()
        lbee.explain_methods(X, S, confidence=phi, methods=methods, sentences=sentences)
        base.append(time.perf_counter() - t0)
    base_med = statistics.median(base)
    print(f"baseline (in-process lbee.explain_methods): median {base_med * 1000:.0f} ms, "
          f"{1 / base_med:.2f} calls/s sequential")

    tmp = Path(tempfile.mkdtemp(prefix="lbee-bench-serve-"))
    (tmp / "root").mkdir()
    db = f"sqlite:///{tmp / 'lbee.db'}"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, str(REPO / "cli.py")]
    token = subprocess.run(cmd + ["serve", "token", "create", "bench", "--scope", "submit", "--db", db], env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    log = open(tmp / "server.log", "w")
    server = subprocess.Popen(cmd + ["serve", "--root", str(tmp / "root"), "--output", str(tmp / "out"), "--db", db,
                                     "--port", str(port), "--workers", "0", "--log-level", "warning"],
                              env=env, stdout=log, stderr=subprocess.STDOUT)
    failed_total = 0
    try:
        deadline = time.time() + 60
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
        body_json = json.dumps({"image_embeddings": X.tolist(), "sentence_embeddings": S.tolist(),
                                "confidence": phi.tolist(), "sentences": sentences, "settings": settings}).encode()

        def npy(a):
            buf = io.BytesIO()
            np.save(buf, a)
            return buf.getvalue()

        files = {"image_embeddings": ("x.npy", npy(X)), "sentence_embeddings": ("s.npy", npy(S)),
                 "confidence": ("c.npy", npy(phi))}
        form = {"settings": json.dumps(settings), "sentences": "\n".join(sentences)}
        transports = ["json", "npy"] if args.transport == "both" else [args.transport]
        want = lbee.explain_methods(X, S, confidence=phi, methods=methods, sentences=sentences)
        for transport in transports:
            print(f"\n[{transport}] body {len(body_json) / 2**20:.1f} MiB" if transport == "json" else
                  f"\n[{transport}] body {sum(len(f[1]) for f in files.values()) / 2**20:.1f} MiB")
            local = threading.local()
            stop_at = time.time() + args.max_seconds

            def one(_, transport=transport, local=local, stop_at=stop_at):
                if time.time() > stop_at:
                    return None
                client = getattr(local, "client", None) or httpx.Client(timeout=args.max_seconds)
                local.client = client
                t0 = time.perf_counter()
                try:
                    if transport == "json":
                        r = client.post(f"{base_url}/v1/explain", content=body_json,
                                        headers={**headers, "content-type": "application/json"})
                    else:
                        r = client.post(f"{base_url}/v1/explain", files=files, data=form, headers=headers)
                    ok = r.status_code == 200 and r.json()["explanations"][methods[0]]["selected"] == \
                        want[methods[0]].selected
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
            failed_total += len(errors)
            rps = len(results) / wall
            p50, p95 = pct(lat, 50), pct(lat, 95)
            print(f"  {len(results)} requests, concurrency {args.concurrency}, {wall:.1f} s: {rps:.2f} requests/s "
                  f"({rps * base_med:.2f}x the in-process sequential rate)")
            print(f"  latency p50 {p50 * 1000:.0f} ms ({p50 / base_med:.2f}x baseline), "
                  f"p95 {p95 * 1000:.0f} ms ({p95 / base_med:.2f}x baseline)")
            print(f"  failed: {len(errors)}" + (f" e.g. {errors[0]}" if errors else ""))
        h = httpx.get(f"{base_url}/health", timeout=5)
        print(f"\nserver after the load: /health {h.status_code}, process alive: {server.poll() is None}")
    finally:
        server.terminate()
        server.wait(30)
        log.close()
    if failed_total:
        raise SystemExit(f"{failed_total} request(s) failed under load")


if __name__ == "__main__":
    main()
