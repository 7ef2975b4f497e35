"""The application `spark-submit --packages` runs for sharedstate._packages: by the time it starts,
SparkSubmit has resolved the packages and set `spark.jars` to the resolved files (as JVM system
properties of the driver). It reads that list through the driver's Py4J gateway, writes it as JSON to
the file named by its argument, and exits without starting a SparkContext."""

import json
import sys

from pyspark.java_gateway import launch_gateway

gateway = launch_gateway()  # connects to the gateway spark-submit's PythonRunner opened
jars = gateway.jvm.java.lang.System.getProperty("spark.jars") or ""
with open(sys.argv[1], "w") as answer:
    json.dump([j for j in jars.split(",") if j], answer)
