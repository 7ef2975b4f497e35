"""What the local-cluster applications of it/apps share: the session, waiting, and recording."""

from __future__ import annotations

import json
import secrets
import threading
import time
from pathlib import Path

import pandas as pd
from pyspark.sql import SparkSession

import sharedstate as ss


def cluster_session(app_name: str, master: str = "local-cluster[2,1,1024]", **conf: str) -> SparkSession:
    """A session on real executor JVMs with spark.authenticate on (a fresh secret per run)."""
    return ss.session(app_name, master=master, **{
        "spark.authenticate": "true", "spark.authenticate.secret": secrets.token_hex(16),
        "spark.sql.shuffle.partitions": "4", "spark.driver.memory": "1g", **conf})


def wait_until(predicate, timeout: float, what: str, interval: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def check_running(*queries) -> None:
    for q in queries:
        if q.exception() is not None:
            raise AssertionError(f"query {q.name or q.id} failed: {q.exception()}")


def drained(query, timeout: float = 300) -> None:
    """query.processAllAvailable(), failing instead of hanging if it does not return."""
    errors: list[BaseException] = []

    def run():
        try:
            query.processAllAvailable()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise AssertionError(f"processAllAvailable() of {query.name or query.id} did not return within {timeout}s")
    if errors:
        raise errors[0]


def save(out: Path, name: str, frame: pd.DataFrame) -> None:
    """A pickle, not parquet: toPandas gives arrays of structs as arrays of Spark Rows."""
    frame.to_pickle(out / f"{name}.pkl")


def key_partitions(state: ss.State, key: str) -> pd.DataFrame:
    """Each key the State holds and its State partition: an as-of read plans one Spark partition per
    State partition, in order, so spark_partition_id() is the State partition."""
    from pyspark.sql import functions as F

    return state.as_of().select(key, F.spark_partition_id().alias("partition")).toPandas()


def finish(out: Path, records: dict, marker: str) -> None:
    (out / "records.json").write_text(json.dumps(records, default=str))
    print(marker)
