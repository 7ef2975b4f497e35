"""Runs three short applications on local-cluster[2,1,1024], one after the other, and records what
the State service's RPC security gave in each; it/test_cluster_security.py checks it.

1. spark.authenticate on: a State on both executors; a client built on the driver (a fresh RPC
   environment, sharedstate's HostProbe) pings each executor's host endpoint, at the address the
   State's route publishes, with the right secret, a wrong one and none.
2. spark.authenticate off: creating a State fails (the error names the fix).
3. spark.authenticate off with spark.sharedstate.rpc.allowUnauthenticated=true: the State is served
   by the executors (a short write and an as-of read).

usage: security_app.py OUT_DIR
"""

from __future__ import annotations

import secrets
import sys
from pathlib import Path

import sharedstate as ss
from app_support import cluster_session, finish
from sharedstate.errors import SharedStateError
from sharedstate.testing.adcamp import UPDATE_SCHEMA

out = Path(sys.argv[1])
records: dict = {}


def probe(spark, name: str, secret: str | None) -> list[str]:
    jvm_probe = spark._jvm.io.sharedstate.spark.cluster.HostProbe
    answers = []
    for address in jvm_probe.hostAddresses(name):
        host, port = str(address).rsplit(":", 1)
        answers.append(str(jvm_probe.ping(host, int(port), secret)))
    return answers


# 1. authenticated
secret = secrets.token_hex(16)
spark = cluster_session("sharedstate-security-auth-it", **{"spark.authenticate.secret": secret})
records["app_id"] = spark.sparkContext.applicationId
state = ss.State.create(spark, "guarded", key="ad_id STRING", value="campaign STRING", partitions=2)
records["auth_hosts"] = state.hosts
records["right_secret"] = probe(spark, "guarded", secret)
records["wrong_secret"] = probe(spark, "guarded", secrets.token_hex(16))
records["no_secret"] = probe(spark, "guarded", None)
spark.stop()

# 2. unauthenticated, no opt-in
plain = {"spark.authenticate": "false", "spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g"}
spark = ss.session("sharedstate-security-off-it", master="local-cluster[2,1,1024]", **plain)
records["off_app_id"] = spark.sparkContext.applicationId
try:
    ss.State.create(spark, "open", key="ad_id STRING", value="campaign STRING", partitions=2)
    records["off_error"] = None
except SharedStateError as e:
    records["off_error"] = str(e)
spark.stop()

# 3. unauthenticated, opted in
spark = ss.session(
    "sharedstate-security-optin-it",
    master="local-cluster[2,1,1024]",
    **plain,
    **{"spark.sharedstate.rpc.allowUnauthenticated": "true"},
)
records["optin_app_id"] = spark.sparkContext.applicationId
state = ss.State.create(spark, "open", key="ad_id STRING", value="campaign STRING", partitions=2)
records["optin_hosts"] = state.hosts
updates = out / "updates"
spark.createDataFrame(
    [("a", "2024-01-01 00:00:01", "x"), ("b", "2024-01-01 00:00:02", "y"), ("c", "2024-01-01 00:00:03", "z")],
    "ad_id STRING, ts STRING, campaign STRING",
).selectExpr("ad_id", "CAST(ts AS TIMESTAMP) AS ts", "campaign").write.parquet(str(updates))
writer = (
    spark.readStream.schema(UPDATE_SCHEMA)
    .parquet(str(updates))
    .writeStream.format("sharedstate")
    .option("state", "open")
    .option("key", "ad_id")
    .option("time", "ts")
    .option("value", "campaign")
    .option("checkpointLocation", str(out / "ck-optin"))
    .trigger(availableNow=True)
    .start()
)
writer.awaitTermination(120)
progress = state.progress()  # gathered from both executors' hosts over RPC
records["optin_updates"] = progress["updates_applied"] + progress["updates_waiting"]  # the newest waits for U
spark.stop()

finish(out, records, "SECURITY-APP-OK")
