"""zstd (and LZ4) on the snapshot format, by level: compression speed on one core and ratio.

    .venv/bin/python benchmarks/durability/zstd_levels.py [--entries 2500000] [--out DIR]

The buffer is one partition of the durability benchmark's shape, in SnapshotCodec's entry layout:
per entry an int32 key length, a 16-byte BIGINT key row, an int32 pair count (1), an int64 time, an
int32 value length and a 16-byte BIGINT value row (52 bytes; keys drawn from 10M, times within a
minute, values random). Compressed in 4 MB chunks as the snapshots table's rows are, with pyarrow's
codecs (the same zstd and LZ4 libraries Parquet calls); best of three passes per codec, so the
figure is the codec's speed, not the machine's noise. Writes zstd_levels.json and zstd_levels.md.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa

CODECS = [("zstd", 3), ("zstd", 1), ("zstd", -1), ("zstd", -3), ("lz4", None)]


def snapshot_entries(n: int) -> bytes:
    rng = np.random.default_rng(1)
    entry = np.dtype(
        [
            ("key_len", ">i4"),
            ("key_nulls", "<i8"),
            ("key", "<i8"),
            ("pairs", ">i4"),
            ("time", ">i8"),
            ("value_len", ">i4"),
            ("value_nulls", "<i8"),
            ("value", "<i8"),
        ]
    )
    a = np.zeros(n, dtype=entry)
    a["key_len"] = 16
    a["key"] = rng.permutation(10_000_000)[:n]
    a["pairs"] = 1
    a["time"] = 1_795_851_689_451_000 + rng.integers(0, 60_000_000, n)
    a["value_len"] = 16
    a["value"] = rng.integers(0, 1 << 40, n)
    return a.tobytes()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=2_500_000)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/durability/zstd-levels"))
    args = ap.parse_args()
    data = snapshot_entries(args.entries)
    chunks = [data[i : i + (4 << 20)] for i in range(0, len(data), 4 << 20)]
    rows = []
    for name, level in CODECS:
        codec = pa.Codec(name, compression_level=level)
        best, size = float("inf"), 0
        for _ in range(3):
            started = time.perf_counter()
            size = sum(len(codec.compress(c, asbytes=True)) for c in chunks)
            best = min(best, time.perf_counter() - started)
        rows.append(
            {
                "codec": name,
                "level": level,
                "mb_per_s": len(data) / best / 1e6,
                "ratio": len(data) / size,
                "bytes": size,
            }
        )
        print(rows[-1])
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {
        "command": f".venv/bin/python benchmarks/durability/zstd_levels.py --entries {args.entries}",
        "input_bytes": len(data),
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    (args.out / "zstd_levels.json").write_text(json.dumps({"meta": meta, "codecs": rows}, indent=1) + "\n")
    lines = ["| codec | level | MB/s (one core, best of 3) | ratio |", "| --- | --- | --- | --- |"]
    lines += [f"| {r['codec']} | {r['level']} | {r['mb_per_s']:.0f} | {r['ratio']:.2f} |" for r in rows]
    (args.out / "zstd_levels.md").write_text(f"`{meta['command']}`\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
