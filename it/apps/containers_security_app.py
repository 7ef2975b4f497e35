"""On the containers' standalone cluster (spark.authenticate on, started by spark-submit --packages):
a State on both executors, then a client built on the driver (a fresh RPC environment, sharedstate's
HostProbe) pings each executor's State host endpoint, at the address the State's route publishes,
with the application's secret, a wrong one and none. it/test_containers_cluster.py checks the record.

usage: containers_security_app.py OUT_DIR
"""

from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path

from pyspark.sql import SparkSession

import sharedstate as ss
from sharedstate.testing.streams import wait_until

out = Path(sys.argv[1])
spark = SparkSession.builder.appName("containers-security").getOrCreate()
secret = spark.sparkContext.getConf().get("spark.authenticate.secret")
state = ss.State.create(spark, "guarded", key="ad_id STRING", value="campaign STRING", partitions=2)
# The State is placed on the executors registered when it is created; on a slow start the second
# executor registers later and the State is rebalanced onto it (rebalanceOnExecutorAdded).
wait_until(lambda: len(set(state.hosts) - {"driver"}) == 2, 300, "the State on both executors")
probe = spark._jvm.io.sharedstate.spark.cluster.HostProbe


def ping(with_secret: str | None) -> list[str]:
    answers = []
    for address in probe.hostAddresses("guarded"):
        host, port = str(address).rsplit(":", 1)
        answers.append(str(probe.ping(host, int(port), with_secret)))
    return answers


records = {
    "app_id": spark.sparkContext.applicationId,
    "hosts": state.hosts,
    "right_secret": ping(secret),
    "wrong_secret": ping(secrets.token_hex(16)),
    "no_secret": ping(None),
}
(out / "records.json").write_text(json.dumps(records))
spark.stop()
print("CONTAINERS-SECURITY-APP-OK")
