"""How much memory uploads make a ``gemmtune serve`` process hold (issue 43, item 3).

Starts a server on a fresh SQLite file with a trusted token, then measures its resident memory
(``VmRSS``) and its peak (``VmHWM``, from /proc) after: starting; one upload of 1000
measurements with provenance near its bound (about 4 MiB, the body limit); eight such uploads
at once; one ``GET /v1/results`` page of 1000 rows; then, after five uploads of 240 rows whose
provenance is at its 16 KiB bound, one page asked for 1000 of those (ended early by
``GEMMTUNE_MAX_PAGE_BYTES``). Run with the default upload turns (2) and with as many turns as
uploads (8), to show what the turns bound.

    python benchmarks/upload_memory.py --out benchmarks/results/upload-memory-DATE.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import httpx
from serving import free_port, result_header, wait_until_ready

from tuner.kernels.families import parse_config

TOKEN = "bench-trusted-token"
H100 = {"name": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "sm_count": 132}
CONFIG = "dmma_pipelined_bm64_bn128_bk32_wm32_wn64_mk4_s3_sk1_mb1"
ROWS = 1000
# Provenance of about 3.8 KiB a row (the bound is 16 KiB): 1000 rows make a body just under
# the 4 MiB limit.
PROVENANCE_TEXT = 3850


# Rows whose provenance is at its 16 KiB bound: 240 of them make a body just under 4 MiB.
HEAVY_ROWS = 240
HEAVY_PROVENANCE_TEXT = 16 * 1024 - 40


def body(seed: int, rows_count: int = ROWS, text: int = PROVENANCE_TEXT) -> bytes:
    params = parse_config(CONFIG).as_dict()
    rows = [
        {
            "family": "dmma_pipelined",
            "config_name": CONFIG,
            "params": params,
            "status": "ok",
            "ms": 2.3 + (seed * ROWS + i) * 1e-6,
            "cublas_ms": 2.7,
            "provenance": {"note": "x" * text, "row": i},
        }
        for i in range(rows_count)
    ]
    shape = {"m": 4096, "n": 4096, "k": 4096, "dtype": "float32", "layout": "NN"}
    return json.dumps({"device": H100, "shape": shape, "measurements": rows}).encode()


def memory_kib(pid: int) -> dict[str, int]:
    """The process's resident memory now and its peak so far, in KiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields


def run(turns: int) -> dict[str, Any]:
    with TemporaryDirectory() as folder:
        port = free_port()
        env = {
            **os.environ,
            "GEMMTUNE_TRUSTED_TOKEN": TOKEN,
            "GEMMTUNE_MAX_CONCURRENT_UPLOADS": str(turns),
        }
        server = subprocess.Popen(
            [sys.executable, "-c", "from tuner.cli import main; main()", "serve", "--db",
             f"sqlite:///{folder}/memory.db", "--port", str(port), "--no-preload"],
            stdout=subprocess.DEVNULL, env=env,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        try:
            wait_until_ready(base)
            found: dict[str, Any] = {"turns": turns, "started": memory_kib(server.pid)}
            one = body(0)
            reply = httpx.post(f"{base}/v1/results", content=one, headers=headers, timeout=120)
            found["one_upload"] = {
                "body_bytes": len(one),
                "status": reply.status_code,
                **memory_kib(server.pid),
            }
            codes: list[int] = []
            bodies = [body(seed) for seed in range(1, 9)]

            def send(payload: bytes) -> None:
                answer = httpx.post(
                    f"{base}/v1/results", content=payload, headers=headers, timeout=300
                )
                codes.append(answer.status_code)

            threads = [threading.Thread(target=send, args=(b,)) for b in bodies]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            found["eight_at_once"] = {"statuses": sorted(codes), **memory_kib(server.pid)}
            page = httpx.get(f"{base}/v1/results", params={"limit": 1000}, timeout=120)
            found["results_page"] = {
                "status": page.status_code,
                "response_bytes": len(page.content),
                **memory_kib(server.pid),
            }
            heavy = [
                httpx.post(
                    f"{base}/v1/results",
                    content=body(seed, HEAVY_ROWS, HEAVY_PROVENANCE_TEXT),
                    headers=headers,
                    timeout=300,
                ).status_code
                for seed in range(10, 15)
            ]
            page = httpx.get(f"{base}/v1/results", params={"limit": 1000}, timeout=120)
            found["heavy_rows_page"] = {
                "upload_statuses": heavy,
                "status": page.status_code,
                "rows": len(page.json()["items"]),
                "response_bytes": len(page.content),
                **memory_kib(server.pid),
            }
            return found
        finally:
            server.terminate()
            server.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the results here as JSON")
    args = parser.parse_args()
    document = {
        **result_header("upload_memory"),
        "loadavg_1min_before": round(os.getloadavg()[0], 2),
        "runs": [run(2), run(8)],
    }
    for found in document["runs"]:
        print(json.dumps(found), flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
