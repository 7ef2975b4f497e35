import sys, time, tempfile, json
from pathlib import Path
import sharedstate as ss
from pyspark.sql import functions as F
warm = int(sys.argv[1]); keys = int(sys.argv[2])
work = Path(tempfile.mkdtemp())
import os
extra = {"spark.driver.extraJavaOptions": os.environ["JOPTS"]} if os.environ.get("JOPTS") else {}
spark = ss.session("warm", master="local[2]", **extra, **{"spark.driver.memory": "6g", "spark.ui.enabled": "false",
    "spark.sharedstate.snapshot.interval": "0", "spark.sharedstate.snapshot.afterUpdates": "0"})
spark.sparkContext.setLogLevel("ERROR")
def load(name, n):
    df = spark.range(n).select(F.col("id").alias("k"), F.timestamp_seconds(F.lit(1_700_000_000)).alias("ts"), (F.col("id")*3).alias("v"))
    df.write.format("sharedstate").mode("append").option("state", name).option("key", "k").option("time", "ts").option("value", "v").save()
if warm:
    w = ss.State.create(spark, "w", key="k BIGINT", value="v BIGINT", partitions=4, root=str(work / "w"))
    load("w", warm)
    for i in range(3):
        print("warm", {k: w.snapshot()[k] for k in ("encode_ms", "write_ms", "snapshot_ms")}); load("w", warm)
st = ss.State.create(spark, "kv", key="k BIGINT", value="v BIGINT", partitions=4, root=str(work / "kv"))
load("kv", keys)
if os.environ.get("GC_FIRST"): spark._jvm.java.lang.System.gc()
for i in range(2):
    r = st.snapshot(); print("kv", i, {k: r[k] for k in ("encode_ms", "write_ms", "snapshot_ms")}, flush=True)
    load("kv", keys)
spark.stop()
