"""Waiting helpers for streaming tests: each fails with a message instead of hanging."""

from __future__ import annotations

import threading
import time


def wait_until(predicate, timeout: float, what: str = "condition", *, interval: float = 0.5) -> None:
    """Polls `predicate` every `interval` seconds until it is true; fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def check_running(*queries) -> None:
    """Fails if any of the streaming queries has stopped with an exception."""
    for q in queries:
        if q.exception() is not None:
            raise AssertionError(f"query {q.name or q.id} failed: {q.exception()}")


def drained(query, timeout: float = 120) -> None:
    """query.processAllAvailable(), failing instead of hanging if it does not return."""
    errors: list[BaseException] = []

    def run():
        try:
            query.processAllAvailable()
        except BaseException as e:  # re-raised below, in the caller's thread
            errors.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise AssertionError(f"processAllAvailable() of {query.name or query.id} did not return within {timeout}s")
    if errors:
        raise errors[0]


def committed_rows(spark, path, *queries) -> int:
    """Rows a file sink has committed at `path` (0 before its first commit); fails if a query failed."""
    check_running(*queries)
    try:
        return spark.read.parquet(str(path)).count()
    except Exception:  # nothing committed yet: the directory or its manifest does not exist
        return 0


def wait_for_rows(spark, path, expected: int, *queries, timeout: float | None = None) -> None:
    """Waits until the file sink at `path` holds `expected` rows, then drains and stops `queries`."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while (n := committed_rows(spark, path, *queries)) < expected:
        if deadline is not None and time.monotonic() > deadline:
            raise AssertionError(f"only {n} of {expected} rows in {path} after {timeout}s")
        time.sleep(1)
    # Drained: the input is processed and U is still, so nothing may come twice.
    for q in queries:
        q.processAllAvailable()
    for q in queries:
        q.stop()
