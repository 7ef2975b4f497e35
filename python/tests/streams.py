"""Waiting helpers for streaming tests."""

from __future__ import annotations

import time


def wait_until(predicate, timeout: float, interval: float = 0.5, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
