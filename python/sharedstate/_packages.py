"""Maven packages (Delta and any the caller adds) resolved once into the cache, then started as plain jars.

`spark.jars.packages` makes every Spark start run Ivy, which prints its resolution report and, with
no network, a warning per unreachable host. Instead the coordinates are resolved once, by Spark's own
Ivy (a short-lived `spark-submit --packages` whose output is captured), and the resolved jar list is
recorded in the cache keyed by what was asked; later starts pass the recorded files as `spark.jars`.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urlparse

# The script spark-submit runs once SparkSubmit has resolved the packages (see its docstring).
_REPORT_SCRIPT = Path(__file__).resolve().parent / "_resolved_jars.py"
_TIMEOUT_SECONDS = 900


def cache_dir() -> Path:
    """$SHAREDSTATE_CACHE, or a per-user cache directory ($XDG_CACHE_HOME or ~/.cache, /sharedstate)."""
    explicit = os.environ.get("SHAREDSTATE_CACHE")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sharedstate"


def ivy_dir() -> Path:
    """Where Spark's Ivy keeps what it downloads: $SHAREDSTATE_IVY_DIR, or ivy/ in the cache."""
    explicit = os.environ.get("SHAREDSTATE_IVY_DIR")
    return Path(explicit) if explicit else cache_dir() / "ivy"


def resolve(
    coordinates: Iterable[str],
    excludes: Iterable[str] = (),
    repositories: Iterable[str] = (),
    ivy: str | os.PathLike | None = None,
) -> list[Path]:
    """The jars of `coordinates` (group:artifact:version) and their dependencies, resolved at most once.

    `excludes` (group:artifact) and `repositories` (extra Maven repository URLs) are those of
    spark-submit's --exclude-packages and --repositories. The answer is recorded under the cache's
    packages/ directory; it is resolved again only when a recorded jar has gone.
    """
    request = {
        "coordinates": _unique(coordinates),
        "excludes": _unique(excludes),
        "repositories": _unique(repositories),
        "ivy": str(Path(ivy) if ivy else ivy_dir()),
    }
    if not request["coordinates"]:
        return []
    for coordinate in request["coordinates"]:
        if len(coordinate.split(":")) != 3:
            raise ValueError(f"package {coordinate!r}: expected a Maven coordinate group:artifact:version")
    digest = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:20]
    record = cache_dir() / "packages" / f"{digest}.json"
    recorded = _recorded_jars(record)
    if recorded is not None:
        return recorded
    print(f"sharedstate: resolving {', '.join(request['coordinates'])}... (once)", file=sys.stderr, flush=True)
    jars = _resolve_with_spark_submit(request)
    record.parent.mkdir(parents=True, exist_ok=True)
    partial = record.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps({**request, "jars": [str(j) for j in jars]}, indent=1) + "\n")
    partial.replace(record)  # atomic: a concurrent start reads the old record or the whole new one
    return jars


def _unique(items: Iterable[str]) -> list[str]:
    return sorted({i.strip() for i in items if i and i.strip()})


def _recorded_jars(record: Path) -> list[Path] | None:
    try:
        jars = [Path(j) for j in json.loads(record.read_text())["jars"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return jars if all(j.is_file() for j in jars) else None


def _resolve_with_spark_submit(request: dict) -> list[Path]:
    from pyspark.find_spark_home import _find_spark_home

    spark_submit = Path(_find_spark_home()) / "bin" / "spark-submit"
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    command = [str(spark_submit), "--master", "local[1]", "--conf", f"spark.jars.ivy={request['ivy']}"]
    command += ["--packages", ",".join(request["coordinates"])]
    if request["excludes"]:
        command += ["--exclude-packages", ",".join(request["excludes"])]
    if request["repositories"]:
        command += ["--repositories", ",".join(request["repositories"])]
    with tempfile.TemporaryDirectory(prefix="sharedstate-resolve-") as work:
        answer = Path(work) / "jars.json"
        result = subprocess.run(
            [*command, str(_REPORT_SCRIPT), str(answer)],
            env=env,
            cwd=work,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_TIMEOUT_SECONDS,
        )
        if result.returncode != 0 or not answer.is_file():
            output = (result.stdout + result.stderr).strip().splitlines()
            raise RuntimeError(
                f"sharedstate: could not resolve {', '.join(request['coordinates'])} with spark-submit "
                f"--packages (exit code {result.returncode}); its last output lines:\n" + "\n".join(output[-40:])
            )
        uris = json.loads(answer.read_text())
    jars = [Path(unquote(urlparse(u).path)) if "://" in u or u.startswith("file:") else Path(u) for u in uris]
    missing = [str(j) for j in jars if not j.is_file()]
    if not jars or missing:
        raise RuntimeError(f"sharedstate: spark-submit --packages reported jars that are not files: {uris}")
    return jars
