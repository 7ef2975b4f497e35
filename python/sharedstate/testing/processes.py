"""Finding a Spark application's executor JVMs on this machine (local-cluster), for kill tests."""

from __future__ import annotations

from pathlib import Path


def executor_pid(app_id: str, executor_id: str) -> int:
    """The pid of application `app_id`'s executor JVM `executor_id` (local-cluster: on this machine;
    its command line names both)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = [a.decode(errors="replace") for a in (proc / "cmdline").read_bytes().split(b"\0")]
        except OSError:
            continue
        if (
            any(a.endswith("CoarseGrainedExecutorBackend") for a in args)
            and app_id in args
            and "--executor-id" in args
            and args[args.index("--executor-id") + 1] == executor_id
        ):
            return int(proc.name)
    raise AssertionError(f"no executor {executor_id} of {app_id} found")
