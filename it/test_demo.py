"""The main job, as `make demo` runs it, on a smaller workload: exits 0, prints the campaign table,
and its enriched Delta table matches the offline as-of join (the demo checks that itself)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.slow
def test_adcamp_demo_runs_and_verifies(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sharedstate.demos.adcamp",
            "--out",
            str(tmp_path / "demo"),
            "--events",
            "2000",
            "--ads",
            "40",
            "--minutes",
            "6",
            "--pace",
            "0.2",
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    assert "Campaign effectiveness" in result.stdout
    assert "all 2000 rows match" in result.stdout
    assert "late updates were rejected and kept" in result.stdout
