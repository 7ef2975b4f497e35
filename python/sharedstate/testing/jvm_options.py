"""The environment for a benchmark run inside a test: without the test run's JVM options.

`make test` runs every JVM of the Python suite with C1 alone (`JAVA_TOOL_OPTIONS`, see the README's
Tests): right for JVMs that live seconds to minutes, wrong for a benchmark's smoke test, whose points
run against caps and timeouts set for a JVM as a user runs it.
"""

from __future__ import annotations

import os


def benchmark_env() -> dict[str, str]:
    """This process's environment without `JAVA_TOOL_OPTIONS`."""
    return {k: v for k, v in os.environ.items() if k != "JAVA_TOOL_OPTIONS"}
