#!/bin/bash
# A/B of durability_overhead.py: old = main before this stop (1572e70's jar from /work/ci5, its conf), new = this branch
set -e
cd /work/integ
OUT=benchmarks/results/durability/fork-free-2026-11-29
mkdir -p $OUT
git show 1572e70:conf/spark-defaults.conf > /tmp/old-defaults.conf
cp python/sharedstate/conf/spark-defaults.conf /tmp/new-defaults.conf
for r in 1 2 3; do
  for side in old new; do
    if [ $side = old ]; then cp /tmp/old-defaults.conf python/sharedstate/conf/spark-defaults.conf; export SHAREDSTATE_JAR=/work/ci5/python/sharedstate/jars/sharedstate-spark_2.13-0.1.0.jar
    else cp /tmp/new-defaults.conf python/sharedstate/conf/spark-defaults.conf; unset SHAREDSTATE_JAR; fi
    echo "$side-$r start $(date -Is) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT/loads.txt
    .venv/bin/python benchmarks/durability_overhead.py --batches 20 --rows 5000 --out $OUT/$side-$r > $OUT/$side-$r.log 2>&1
    echo "$side-$r end $(date -Is) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT/loads.txt
  done
done
cp /tmp/new-defaults.conf python/sharedstate/conf/spark-defaults.conf
