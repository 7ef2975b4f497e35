"""The soak harness in short: a writer and two fetch joins with default settings for a minute and a
half; compaction must have happened, and no event may be lost or answered wrong."""

from __future__ import annotations

import pytest
from soak import run


@pytest.mark.slow
def test_short_soak_compacts_and_loses_nothing(soak_spark, tmp_path):
    result = run(tmp_path / "soak", minutes=1.5, rate=50, sample_s=5, warmup_s=30, flat_window_s=30, spark=soak_spark)
    assert result.events == 90 * 50
    assert result.lost == 0 and sum(result.mismatched.values()) == 0, result
    assert result.samples[-1].pairs_compacted > 0, "default compaction dropped versions below min(F, U)"
    assert result.samples[-1].fetch not in (None, "None"), "the watermarked joins reported F"
