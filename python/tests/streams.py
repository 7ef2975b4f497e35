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


def drained(query, timeout: float = 120) -> None:
    """query.processAllAvailable(), failing the test instead of hanging if it does not return."""
    import threading

    errors: list[BaseException] = []

    def run():
        try:
            query.processAllAvailable()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise AssertionError(f"processAllAvailable() did not return within {timeout}s")
    if errors:
        raise errors[0]
