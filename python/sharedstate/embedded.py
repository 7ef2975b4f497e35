"""The State engine in-process, without Spark: for tests, notebooks and serving look-ups.

The engine (``jvm/core``) runs in a JVM started inside this Python process through JPype. Keys and
values are encoded into the same binary rows the Spark plugin stores (by the engine's own codec,
not re-implemented here), so answers match the Spark path.

    from sharedstate import embedded
    engine = embedded.start()                      # or embedded.start(jar="/path/to/jar")
    campaigns = engine.create_state("campaigns", key="ad_id STRING", value="campaign STRING")
    campaigns.update("ad1", 10, "c1")
    campaigns.commit(progress=20)                  # U = 20: everything before 20 is final
    campaigns.fetch("ad1", 15)                     # Found(time=10, value={'campaign': 'c1'})

Times are microseconds since the epoch (Spark's TIMESTAMP), or ``datetime`` objects.

The jar is found, in order: the ``jar`` argument, ``$SHAREDSTATE_JAR``, the plugin jar bundled in the
package (``sharedstate/jars/sharedstate-spark_2.13-*.jar``, which contains the engine), then the core
jar of a source checkout (``jvm/core/target/scala-2.13/sharedstate-core_2.13-*.jar``, built by
``bin/sbt core/package``). Scala's library comes from pyspark's ``jars`` directory.
"""

from __future__ import annotations

import datetime as _dt
import glob
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:  # the package's error type when the full package is present
    from sharedstate.errors import SharedStateError
except ImportError:  # pragma: no cover - embedded.py on its own

    class SharedStateError(ValueError):
        """Bad input or misuse of a State: the message names the problem and what is allowed."""


__all__ = ["Engine", "EmbeddedState", "Found", "NOT_YET", "SharedStateError", "find_jars", "start"]

_PACKAGE_DIR = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE_DIR.parent.parent


class _NotYet:
    """The fetch's time is not yet below update progress U: the answer is not final yet."""

    def __repr__(self) -> str:
        return "NOT_YET"

    def __bool__(self) -> bool:
        return False


NOT_YET = _NotYet()


@dataclass(frozen=True)
class Found:
    """A `latest` answer: the newest pair at or before the fetch time."""

    time: int
    value: dict[str, Any]


def find_jars(jar: str | os.PathLike | None = None) -> list[Path]:
    """The class path for the engine: the sharedstate jar, then scala-library."""
    candidates: list[Path] = []
    if jar is not None:
        candidates.append(Path(jar))
    elif os.environ.get("SHAREDSTATE_JAR"):
        candidates.append(Path(os.environ["SHAREDSTATE_JAR"]))
    else:
        candidates += sorted(Path(p) for p in glob.glob(str(_PACKAGE_DIR / "jars" / "sharedstate-spark_2.13-*.jar")))
        candidates += sorted(
            Path(p)
            for p in glob.glob(
                str(_CHECKOUT / "jvm" / "core" / "target" / "scala-2.13" / "sharedstate-core_2.13-*.jar")
            )
        )
    found = [c for c in candidates if c.is_file()]
    if not found:
        where = ", ".join(str(c) for c in candidates) or "(no candidate)"
        raise FileNotFoundError(
            f"No sharedstate jar found (looked at: {where}). Build one with `bin/sbt core/package`, "
            "pass start(jar=...), or set SHAREDSTATE_JAR."
        )
    return [found[0], _scala_library()]


def _scala_library() -> Path:
    import pyspark

    jars = sorted(Path(pyspark.__file__).parent.joinpath("jars").glob("scala-library-2.13.*.jar"))
    if not jars:
        raise FileNotFoundError("scala-library 2.13 not found in pyspark's jars directory; install pyspark 4.2.0.")
    return jars[-1]


def _micros(t: int | _dt.datetime) -> int:
    if isinstance(t, _dt.datetime):
        if t.tzinfo is None:
            t = t.replace(tzinfo=_dt.UTC)
        delta = t - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
        return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(t, bool) or not isinstance(t, int):
        raise SharedStateError(f"A time is microseconds since the epoch (int) or a datetime, got {t!r}.")
    return t


class Engine:
    """The engine in this process's JVM (one per process; start() returns the same one)."""

    _instance: Engine | None = None

    def __init__(self, jars: list[Path]):
        import jpype

        if not jpype.isJVMStarted():
            jpype.startJVM(classpath=[str(j) for j in jars], convertStrings=False)
        self._jpype = jpype
        self._api = jpype.JClass("io.sharedstate.core.embedded.EmbeddedEngine")
        self._exception = jpype.JClass("io.sharedstate.core.SharedStateException")
        self.jars = jars

    def _call(self, fn, *args):
        try:
            return fn(*args)
        except self._exception as e:
            raise SharedStateError(str(e.getMessage())) from None

    def create_state(
        self,
        name: str,
        key: str,
        value: str,
        rule: str = "replace",
        partitions: int = 4,
        compaction: str = "keep_latest",
        lateness: str = "reject",
        memory_limit_bytes: int = 0,
        fetch_rules: list[str] | None = None,
        partial: str | None = None,
        writer: str = "embedded",
    ) -> EmbeddedState:
        """Creates a State (or opens the identical existing one). Schemas are DDL: "ad_id STRING".

        With `partial` (a merge: "sum", "min", "max", "union", "class:..." ; docs/partial-state.md)
        the State is partial with one instance per writer, as `instances="query"` on Spark: this
        handle writes the instance of `writer`, `state(name, writer=...)` opens another writer's,
        and fetches read every instance merged."""
        java_state = self._call(
            self._api.create,
            name,
            key,
            value,
            partitions,
            rule,
            compaction,
            lateness,
            memory_limit_bytes,
            ",".join(fetch_rules or []),
            partial or "",
            writer,
        )
        return EmbeddedState(self, java_state)

    def state(self, name: str, writer: str = "embedded") -> EmbeddedState:
        """The State `name`, written as `writer` (on a partial State, each writer is its own instance)."""
        return EmbeddedState(self, self._call(self._api.open, name, writer))

    def drop(self, name: str) -> bool:
        return bool(self._api.drop(name))

    def names(self) -> list[str]:
        return [str(n) for n in self._api.names()]


def start(jar: str | os.PathLike | None = None) -> Engine:
    """Starts the JVM with the engine (once per process) and returns the engine."""
    if Engine._instance is None:
        Engine._instance = Engine(find_jars(jar))
    return Engine._instance


class EmbeddedState:
    """A State of the embedded engine. Updates go to an open epoch; commit() applies what U allows."""

    def __init__(self, engine: Engine, java_state):
        self._engine = engine
        self._j = java_state
        self.key_columns = [str(c) for c in java_state.keyColumns()]
        self.value_columns = [str(c) for c in java_state.valueColumns()]

    @property
    def name(self) -> str:
        return str(self._j.name())

    @property
    def instance(self) -> int | None:
        """This writer's instance of a partial State; None when the State is not partial."""
        i = int(self._j.instance())
        return None if i < 0 else i

    # ---- encoding ----

    def _row(self, value: Any, columns: list[str], what: str):
        if isinstance(value, dict):
            unknown = set(value) - set(columns)
            if unknown:
                raise SharedStateError(f"Unknown {what} column(s) {sorted(unknown)}; the {what} columns are {columns}.")
            values = [value.get(c) for c in columns]
        elif isinstance(value, tuple):
            values = list(value)
        else:
            values = [value]
        if len(values) != len(columns):
            raise SharedStateError(f"The {what} has {len(columns)} column(s) {columns}, got {len(values)} value(s).")
        jpype = self._engine._jpype
        return jpype.JArray(jpype.JObject)([self._java(v) for v in values])

    def _java(self, v: Any):
        jpype = self._engine._jpype
        if v is None:
            return None
        if isinstance(v, bool):
            return jpype.java.lang.Boolean(v)
        if isinstance(v, int):
            return jpype.java.lang.Long(v)
        if isinstance(v, float):
            return jpype.java.lang.Double(v)
        if isinstance(v, str):
            return jpype.java.lang.String(v)
        if isinstance(v, _dt.datetime):
            return jpype.java.lang.Long(_micros(v))
        if isinstance(v, (list, tuple)):
            return jpype.JArray(jpype.JObject)([self._java(x) for x in v])
        raise SharedStateError(f"Cannot store {type(v).__name__} {v!r}: use int, float, str, bool, datetime or lists.")

    @staticmethod
    def _python(v: Any) -> Any:
        if v is None:
            return None
        name = v.getClass().getName()
        if name in ("java.lang.Long", "java.lang.Integer"):
            return int(v)
        if name in ("java.lang.Double", "java.lang.Float"):
            return float(v)
        if name == "java.lang.Boolean":
            return bool(v)
        if name == "java.lang.String":
            return str(v)
        return [EmbeddedState._python(x) for x in v]

    def _dict(self, row, columns) -> dict[str, Any]:
        return {str(c): self._python(x) for c, x in zip(columns, row)}

    # ---- updates and progress ----

    def update(self, key: Any, time: int | _dt.datetime, value: Any) -> None:
        """Adds (key, time, value) to the open epoch. Keys and values: a scalar, a tuple or a dict by column."""
        self._engine._call(
            self._j.update,
            self._row(key, self.key_columns, "key"),
            _micros(time),
            self._row(value, self.value_columns, "value"),
        )

    def commit(self, progress: int | _dt.datetime) -> dict[str, int]:
        """Commits the open epoch with this writer's progress (its watermark); U advances and updates below it apply."""
        accepted, rejected, u = self._engine._call(self._j.commit, _micros(progress))
        return {"accepted": int(accepted), "rejected": int(rejected), "update": int(u)}

    def finish(self) -> None:
        """This writer stops: it no longer holds U back."""
        self._j.finish()

    def register_reader(self, reader: str) -> None:
        self._engine._call(self._j.registerReader, reader)

    def report_fetch_progress(self, reader: str, progress: int | _dt.datetime) -> None:
        self._engine._call(self._j.reportFetchProgress, reader, _micros(progress))

    def progress(self) -> dict[str, int | None]:
        """{"update": U, "fetch": F} in microseconds; None stands for -/+ infinity."""

        def finite(t: int) -> int | None:
            return None if t in (-(2**63), 2**63 - 1) else t

        return {"update": finite(int(self._j.updateProgress())), "fetch": finite(int(self._j.fetchProgress()))}

    def metrics(self) -> dict[str, int]:
        m = self._j.metrics()
        return {
            "keys": int(m.keys()),
            "pairs": int(m.pairs()),
            "bytes": int(m.bytesHeld()),
            "raw_bytes": int(m.rawBytes()),
            "updates_applied": int(m.updatesApplied()),
            "updates_waiting": int(m.updatesStaged()),
            "updates_rejected": int(m.updatesRejected()),
        }

    # ---- fetches ----

    def _answer(self, a):
        status = str(a.status())
        if status == "not_yet":
            return NOT_YET
        if status == "absent":
            return None
        if status == "found":
            return Found(int(a.time()), self._dict(a.row(), self.value_columns))
        if status == "pairs":
            return [(int(t), self._dict(r, self.value_columns)) for t, r in zip(a.times(), a.rows())]
        return self._dict(a.row(), [str(c) for c in a.columns()])

    def _fetch(self, key, time, rule, start, mode, staleness, wait_ms):
        k = self._row(key, self.key_columns, "key")
        frm = -(2**63) if start is None else _micros(start)
        if wait_ms is None:
            return self._answer(self._engine._call(self._j.fetch, k, _micros(time), rule, frm, mode, staleness))
        return self._answer(
            self._engine._call(self._j.fetchWaiting, k, _micros(time), rule, frm, mode, staleness, wait_ms)
        )

    def fetch(
        self,
        key: Any,
        time: int | _dt.datetime,
        mode: str = "committed",
        staleness: int = 0,
        wait_ms: int | None = None,
    ):
        """`latest`: Found(time, value) of the newest pair at or before `time`, None if there is none,
        or NOT_YET while `time` is not below U (read-committed) or `time - staleness` is not
        (read-uncommitted). With wait_ms, waits that long in the pending queue for U to pass."""
        return self._fetch(key, time, "latest", None, mode, staleness, wait_ms)

    def fetch_range(
        self, key: Any, start: int | _dt.datetime, end: int | _dt.datetime, mode: str = "committed", staleness: int = 0
    ):
        """[(time, value), ...] of the pairs with start <= time <= end, or NOT_YET."""
        return self._fetch(key, end, "range", start, mode, staleness, None)

    def fetch_aggregate(
        self,
        key: Any,
        function: str,
        start: int | _dt.datetime,
        end: int | _dt.datetime,
        mode: str = "committed",
        staleness: int = 0,
    ):
        """sum, count, min, max, avg or collect over the pairs in [start, end], as a dict of columns;
        None for an empty range (count gives 0, collect []), or NOT_YET."""
        return self._fetch(key, end, function, start, mode, staleness, None)
