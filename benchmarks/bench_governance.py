"""What governance costs at load and per state change, each against its baseline in the same run.

- load: verifying a model directory's OpenSSF signature (``mlops.governance.signing.verify_directory``)
  vs the SHA-256 check of ``model.onnx`` the server did before signing existed;
- audit: one hash-chained ``mlops.governance.audit.record`` (flock, head file, fsync) vs appending one
  JSON line to a file.

    python benchmarks/bench_governance.py --model-mb 1 --model-mb 50 --records 300
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def timed(call: Callable[[], object], repeat: int) -> float:
    """Median seconds of ``repeat`` calls (after one warm-up)."""
    call()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def bench_load(model_mb: int, repeat: int) -> dict[str, float]:
    from mlops.governance.signing import generate_key_pair, sign_directory, verify_directory
    from mlops.origin_facts import file_sha256

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        model = root / "model"
        model.mkdir()
        (model / "model.onnx").write_bytes(os.urandom(model_mb << 20))
        (model / "MLmodel").write_text("flavors: {onnx: {}}\n")
        private, public = generate_key_pair(root / "keys")
        sign_directory(model, root / "model.sig", private)
        sha = timed(lambda: file_sha256(model / "model.onnx"), repeat)
        verify = timed(lambda: verify_directory(model, root / "model.sig", public, "bench"), repeat)
    return {"model_mb": model_mb, "sha256_s": sha, "signature_s": verify, "ratio": verify / sha}


def bench_audit(records: int) -> dict[str, float]:
    from mlops.governance import audit

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        details = {"alias": "champion", "from": "1", "to": "2", "reason": "every gate decided promote"}
        start = time.perf_counter()
        for n in range(records):
            audit.record("alias.moved", f"m/{n}", details, workspace_root=root)
        chained = (time.perf_counter() - start) / records
        plain_path = root / "plain.jsonl"
        start = time.perf_counter()
        for n in range(records):
            with plain_path.open("a") as handle:
                handle.write(
                    json.dumps({"action": "alias.moved", "subject": f"m/{n}", "details": details}) + "\n"
                )
        plain = (time.perf_counter() - start) / records
        start = time.perf_counter()
        result = audit.verify(root)
        verify = time.perf_counter() - start
        assert result.intact
    return {
        "records": records,
        "plain_s": plain,
        "chained_s": chained,
        "ratio": chained / plain,
        "verify_s": verify,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model-mb", type=int, action="append", default=None)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--records", type=int, default=300)
    args = parser.parse_args()
    os.environ.pop("MLOPS_AUDIT_URI", None)
    print("| model MB | SHA-256 only (ms) | signature verify (ms) | ratio |")
    print("|---|---|---|---|")
    for size in args.model_mb or [1, 50]:
        row = bench_load(size, args.repeat)
        print(
            f"| {size} | {row['sha256_s'] * 1e3:.1f} | {row['signature_s'] * 1e3:.1f} | {row['ratio']:.2f} |"
        )
    row = bench_audit(args.records)
    print()
    print("| records | plain JSON append (µs) | chained audit record (µs) | ratio | verify all (ms) |")
    print("|---|---|---|---|---|")
    print(
        f"| {row['records']} | {row['plain_s'] * 1e6:.0f} | {row['chained_s'] * 1e6:.0f} | {row['ratio']:.1f} "
        f"| {row['verify_s'] * 1e3:.1f} |"
    )


if __name__ == "__main__":
    main()
