"""State handles: create, look up, read as of a time, inspect progress.

``State`` is a thin face over the plugin's Scala ``io.sharedstate.spark.StateHandle``: it holds the
JVM handle and calls it through py4j, as Delta's Python ``DeltaTable`` holds its Scala twin. Only
structured results (descriptions, progress, snapshot rounds) come back as JSON, through
``SharedStateApi``, so this side needs no knowledge of Scala types.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from sharedstate._jvm import api
from sharedstate.errors import translated

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)  # datetime.UTC is 3.11+


def _time(micros: int | None) -> datetime | None:
    return None if micros is None else _EPOCH + timedelta(microseconds=micros)


class State:
    """A named, partitioned, multi-versioned key-value State of this Spark application."""

    def __init__(self, spark: SparkSession, jstate):
        self._spark = spark
        self._jstate = jstate  # io.sharedstate.spark.StateHandle

    @staticmethod
    def create(
        spark: SparkSession,
        name: str,
        key: str,
        value: str,
        rule: str = "replace",
        partitions: int = 8,
        root: str | None = None,
        fetch_rules: Sequence[str] | None = None,
        compaction: str = "keep_latest",
        late_policy: str = "reject",
        memory_limit: int | str | None = None,
        sweep_interval: str = "10 seconds",
        partial: str | None = None,
        instances: str | None = None,
    ) -> State:
        """Creates a State, or returns the existing one if it has exactly this definition.

        ``key`` and ``value`` are DDL column lists (``"ad_id STRING"``, ``"user STRING, day DATE"``);
        ``rule`` is the update rule (``replace``, ``sum``, ``min``, ``max``, ``append``, ...,
        ``class:<name>``, or a Spark SQL expression over ``old`` and ``new``: ``expr:greatest(old, new)``);
        ``partitions`` is fixed for the State's life.
        ``root`` (default: the ``spark.sharedstate.root`` conf; unset = in memory only) makes the State
        durable: its Delta tables live under ``<root>/<name>/``, and if they already exist there the
        State is reopened and rebuilt from them (see docs/durability.md).
        ``fetch_rules``: the fetch rules the State answers (default: every built-in one);
        ``compaction``: ``keep_latest`` (versions below min(F, U) but the newest per key go),
        ``none`` or ``class:<name>``; ``late_policy``: ``reject`` (late updates go to the rejected
        table) or ``fail`` (the epoch fails, naming the update); ``memory_limit``: bytes the State may
        hold (``"2g"`` or a number; None = no limit); ``sweep_interval``: period of the bounded
        background compaction sweep (``"0"``: compaction only when a key is touched).
        ``partial`` makes a partial State (docs/partial-state.md): each writer instance keeps its own
        value, updated by ``rule`` with no coordination, and fetches read the instances merged by
        ``partial``: ``sum`` (numbers, element-wise on numeric arrays), ``min``, ``max``, ``union``
        (arrays as sets), ``class:<name>`` or ``expr:<Spark SQL over a and b>``. ``instances``:
        ``task`` (default: the writer task's partition) or ``query`` (the writer query).
        """
        partial_args = () if partial is None and instances is None else (partial, instances)
        with translated():
            handle = api(spark).create(
                spark._jsparkSession,
                name,
                key,
                value,
                int(partitions),
                rule,
                root,
                None if fetch_rules is None else ",".join(fetch_rules),
                compaction,
                late_policy,
                None if memory_limit is None else str(memory_limit),
                sweep_interval,
                *partial_args,
            )
        return State(spark, handle)

    @staticmethod
    def get(spark: SparkSession, name: str, read_only: bool | None = None, root: str | None = None) -> State:
        """The existing State called ``name``: one of this application, or a durable one found under
        ``root`` (default ``spark.sharedstate.root``), rebuilt from its tables; unknown names raise
        SharedStateError.

        A durable State has one writing application at a time (the owner of its root's lease).
        ``read_only=None`` (default): this application takes the State over unless another one owns
        it, and then opens it read-only. ``read_only=True``: read-only, following the owner's new
        commits (see docs/durability.md). ``read_only=False``: this application must own it (waits up
        to ``spark.sharedstate.owner.lease`` for a crashed owner's lease to run out)."""
        with translated():
            if read_only is None and root is None:
                return State(spark, api(spark).get(spark._jsparkSession, name))
            return State(spark, api(spark).open(spark._jsparkSession, name, read_only, root))

    @property
    def read_only(self) -> bool:
        """True when this application opened the (durable) State read-only: it follows the owner."""
        return bool(self._jstate.readOnly().isDefined())

    @staticmethod
    def names(spark: SparkSession) -> list[str]:
        return list(api(spark).names())

    @property
    def name(self) -> str:
        return str(self._jstate.name())

    @property
    def key_schema(self) -> str:
        return str(self._jstate.spec().keySchema())

    @property
    def value_schema(self) -> str:
        return str(self._jstate.spec().valueSchema())

    @property
    def partitions(self) -> int:
        return int(self._jstate.spec().partitions())

    @property
    def rule(self) -> str:
        return str(self._jstate.spec().updateRule())

    @property
    def time_column(self) -> str:
        """The column fetch joins and as-of reads use for the timestamp of the value used."""
        return str(self._jstate.timeColumn())

    def progress(self) -> dict[str, Any]:
        """Update and fetch progress, and sizes.

        ``update`` is U as a UTC datetime: every value with an earlier timestamp is final. It is
        None while nothing is final (``update_is`` says ``-infinity``) and None with ``+infinity``
        when no streaming writer holds it back. ``fetch`` is F, the minimum over the State's
        readers (streaming fetch joins, see :func:`sharedstate.fetch_join`): no reader fetches below
        it any more, so compaction may drop versions older than min(F, U). It is None while no
        reader has advanced (``fetch_is`` says ``-infinity``). ``pending_fetches`` counts
        asynchronous fetches waiting in the engine (a fetch join's waiting events are in its
        query's progress instead). ``moves`` lists the partitions that changed executor (see
        :meth:`move`), each with the pause it cost in ms.
        """
        with translated():
            raw = json.loads(api(self._spark).progress(self._jstate))
        return {
            "update": _time(raw["update"]),
            "update_is": raw["update_is"],
            "fetch": _time(raw["fetch"]),
            "fetch_is": raw["fetch_is"],
            "writers": {w: _time(p) for w, p in raw["writers"].items()},
            "readers": {r: _time(p) for r, p in raw["readers"].items()},
            "pairs": raw["pairs"],
            "pairs_compacted": raw["pairs_compacted"],
            "pending_fetches": raw["pending_fetches"],
            "keys": raw["keys"],
            "bytes": raw["bytes"],
            "updates_applied": raw["updates_applied"],
            "updates_waiting": raw["updates_waiting"],
            "updates_rejected": raw["updates_rejected"],
            "rejected_dropped": raw["rejected_dropped"],
            "moves": raw["moves"],
        }

    def move(self, partition: int, executor: str) -> list[dict[str, Any]]:
        """Moves ``partition`` to executor ``executor`` while writers, fetch joins and change streams
        keep running (cluster mode; docs/elasticity.md): the old owner hands the partition over in a
        short fence during which the State's commits wait, and requests sent to it meanwhile are
        sent again to the new owner. Returns what moved: ``partitions``, ``from``, ``to``,
        ``millis`` (the pause) and ``reason`` (``move``); empty if it is there already."""
        with translated():
            return json.loads(api(self._spark).move(self._jstate, int(partition), str(executor)))

    def rebalance(self) -> list[dict[str, Any]]:
        """Spreads the State's partitions evenly over the live executors with as few moves as
        possible, each a live :meth:`move`; returns what moved (nothing in local mode)."""
        with translated():
            return json.loads(api(self._spark).rebalance(self._jstate))

    @property
    def hosts(self) -> list[str]:
        """The executor id hosting each partition; empty in local mode, where the driver JVM hosts all."""
        return list(self.describe()["hosts"])

    def writers(self) -> list[dict[str, Any]]:
        """The State's update writers (a writer's id is its query's id): ``progress`` (its
        event-time watermark, a UTC datetime), ``last_epoch`` and ``status``: ``active`` (it holds U
        back), ``paused`` (its query is not running, or it had no input for its ``idleTimeout``; it
        resumes when it runs again) or ``finished``."""
        with translated():
            raw = json.loads(api(self._spark).writers(self._jstate))
        return [
            {
                "writer": w["writer"],
                "progress": _time(w["progress"]),
                "progress_is": w["progress_is"],
                "last_epoch": w["last_epoch"],
                "status": w["status"],
            }
            for w in raw
        ]

    def finish_writer(self, writer: str) -> None:
        """``writer`` is done for good: it no longer holds U back (once every writer is done, U is
        +infinity and every value is final)."""
        with translated():
            self._jstate.finishWriter(writer)

    def remove_writer(self, writer: str) -> None:
        """Forgets ``writer`` and what it staged: it no longer holds U back; if its query runs again
        it joins at the current U (its updates below U are late)."""
        with translated():
            self._jstate.removeWriter(writer)

    def readers(self) -> dict[str, datetime | None]:
        """The State's readers (streaming fetch joins, change streams) and their fetch progress F."""
        with translated():
            return {r: _time(p) for r, p in json.loads(api(self._spark).readers(self._jstate)).items()}

    def remove_reader(self, reader: str) -> None:
        """Forgets ``reader``: it no longer holds F, and so compaction, back."""
        with translated():
            self._jstate.removeReader(reader)

    def describe(self) -> dict[str, Any]:
        """The State's definition and where it lives now: ``name``, ``key``, ``value``,
        ``partitions``, ``rule``, ``time_column``, ``hosts`` (the executor of each partition; empty
        in local mode), ``root`` and ``read_only`` (why, or None), and ``moves``: partitions that
        changed executor (``partitions``, ``from``, ``to``, ``millis``, ``reason``: ``lost`` when a
        durable State's partitions were rebuilt after their executor was lost, else a live move:
        ``move``, ``rebalance``, ``executor added``, ``decommission``)."""
        with translated():
            return json.loads(api(self._spark).describe(self._jstate))

    def changes(self, starting_offsets: str = "earliest") -> DataFrame:
        """The State's change stream: a streaming DataFrame of applied pairs (key columns, value
        columns, ``<state>_time``), each exactly once, in timestamp order within each partition and
        across micro-batches. A batch holds the pairs that became final when U advanced, so the
        stream runs U behind the writers. ``starting_offsets``: ``"earliest"`` (every pair the State
        still keeps) or ``"latest"`` (from the current U). Works in micro-batch and continuous mode.
        The stream is a reader of the State: compaction keeps every pair it has not read yet.
        """
        with translated():
            return DataFrame(self._jstate.changes(starting_offsets), self._spark)

    def as_of(self, time: str | datetime | None = None, instances: bool = False) -> DataFrame:
        """The State as of ``time`` (default: now): per key, the newest final value at or before it.

        A partial State's values are its instances merged; with ``instances=True`` a row per key and
        instance instead (column ``instance``), each instance's own value."""
        with translated():
            if instances:
                reader = self._spark.read.format("sharedstate").option("state", self.name).option("instances", "true")
                if time is not None:
                    reader = reader.option("asOf", time.isoformat(sep=" ") if isinstance(time, datetime) else str(time))
                return reader.load()
            if time is None:
                return DataFrame(self._jstate.latest(), self._spark)
            text = time.isoformat(sep=" ") if isinstance(time, datetime) else str(time)
            return DataFrame(self._jstate.asOf(text), self._spark)

    def late_updates(self) -> DataFrame:
        """Updates the State rejected: late ones (time below U on arrival) and null keys or times."""
        with translated():
            return DataFrame(self._jstate.lateUpdates(), self._spark)

    def snapshot(self) -> dict[str, Any]:
        """Snapshots every partition of a durable State now and applies the retention policy (the
        changelog keeps only what the oldest retained snapshot does not hold); see docs/durability.md.
        Returns what the round did: written, unchanged, deltas (written as delta snapshots), entries
        and bytes (what the written snapshots hold), snapshots_removed, changelog_trimmed, snapshot_ms
        (encode, write: the round's wall time), retention_ms (retention's removals) and trim_lock_ms
        (the changelog trim's commit, between commits: writers wait for it); summed over the
        partitions, which run in parallel: lock_wait_ms, capture_ms (holding the commit lock: what
        writers waited for), encode_ms and write_ms; trigger (`request`) and started_millis."""
        with translated():
            return json.loads(api(self._spark).snapshot(self._jstate))

    def snapshot_rounds(self) -> list[dict[str, Any]]:
        """The newest snapshot rounds this application took of a durable State it owns (at most 32,
        oldest first), each as `snapshot()` returns one, with its `trigger` (`request`, `interval`,
        `updates`: a partition applied `spark.sharedstate.snapshot.afterUpdates` updates since its
        last snapshot, `bulk load`: the same at the end of a bulk load) and `started_millis`."""
        with translated():
            return json.loads(api(self._spark).snapshotRounds(self._jstate))

    @property
    def root(self) -> str | None:
        """The root directory of a durable State's Delta tables; None for an in-memory State."""
        root = self._jstate.root()
        return str(root.get()) if root.isDefined() else None

    def drop(self) -> bool:
        """Removes the State from this application. Running queries that use it will fail."""
        with translated():
            return bool(self._jstate.drop())

    def fetch_join(
        self,
        events: DataFrame,
        key: str | Sequence[str],
        time: str,
        rule: str = "latest",
        mode: str = "committed",
        how: str = "left",
        staleness: str | None = None,
        window: str | None = None,
        continuous: bool = False,
        lateness: str | None = None,
        scope: str | None = None,
    ) -> DataFrame:
        """Joins each event with this State's value at the event's time: see :func:`sharedstate.fetch_join`."""
        scope_args = () if scope is None else (scope,)
        keys = [key] if isinstance(key, str) else list(key)
        with translated():
            jdf = api(self._spark).fetchJoin(
                self._jstate,
                events._jdf,
                ",".join(keys),
                time,
                rule,
                mode,
                how,
                staleness,
                window,
                bool(continuous),
                lateness,
                *scope_args,
            )
        return DataFrame(jdf, events.sparkSession)

    def __repr__(self) -> str:
        return (
            f"State({self.name!r}, key={self.key_schema!r}, value={self.value_schema!r}, rule={self.rule!r}, "
            f"partitions={self.partitions})"
        )
