"""Started by spark-submit --packages io.sharedstate:sharedstate-spark_2.13:<version> with nothing else
set: the data source must be found by its short name, Delta must come in as a dependency."""

import sys
import tempfile
from pathlib import Path

import pandas as pd
from pyspark.sql import SparkSession

import sharedstate as ss
from sharedstate.testing.adcamp import UPDATE_SCHEMA, write_batches

spark = SparkSession.builder.appName("packages-it").getOrCreate()
work = Path(tempfile.mkdtemp())
state = ss.State.create(spark, "campaigns", key="ad_id STRING", value="campaign STRING", partitions=2)
frame = pd.DataFrame(
    {"ad_id": ["a", "b", "a"], "ts": pd.to_datetime([1, 2, 3], unit="s", utc=True), "campaign": ["c1", "c2", "c3"]}
)
write_batches(work / "updates", [frame])
updates = spark.readStream.schema(UPDATE_SCHEMA).parquet(str(work / "updates"))
q = (
    updates.writeStream.format("sharedstate")
    .option("state", "campaigns")
    .option("key", "ad_id")
    .option("time", "ts")
    .option("checkpointLocation", str(work / "ck"))
    .start()
)
q.processAllAvailable()
q.stop()
# U = 3s (no lateness): the pairs below it are applied and readable as of any later time
rows = sorted((r.ad_id, r.campaign) for r in state.as_of("1970-01-01 00:00:10").collect())
# Delta came in as a dependency (using it needs Delta's own session settings, as Delta documents).
jvm = spark.sparkContext._jvm
loader = jvm.Thread.currentThread().getContextClassLoader()
delta = jvm.java.lang.Class.forName("io.delta.tables.DeltaTable", False, loader).getName()
# The plugin's session extensions were found on the class path: a bad write fails at start().
try:
    updates.writeStream.format("sharedstate").option("state", "campaigns").option("time", "ts").option(
        "checkpointLocation", str(work / "ck2")
    ).start()
    checked = "not checked"
except Exception as e:  # noqa: BLE001 - the message is what is checked
    checked = "checked" if "Option 'key' is required" in str(e) else f"wrong error: {e}"
print(f"RESULT rows={rows} delta={delta} write={checked}")
spark.stop()
sys.exit(0 if rows == [("a", "c1"), ("b", "c2")] and checked == "checked" else 1)
