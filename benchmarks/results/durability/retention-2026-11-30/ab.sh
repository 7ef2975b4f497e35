#!/bin/bash
# A/B of retention_rounds.py: old = main at 46b77a9 (retention's snapshot removal a Delta-Spark DELETE),
# new = this change (one Kernel commit of remove actions); alternating, three runs each, 1M keys.
set -e
cd /work/integ
OUT=benchmarks/results/durability/retention-2026-11-30
for r in 1 2 3; do
  for side in old new; do
    if [ $side = old ]; then export SHAREDSTATE_JAR=/work/runs/old-46b77a9.jar; else unset SHAREDSTATE_JAR; fi
    echo "$side-$r start $(date -Is) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT/loads.txt
    PYTHONPATH=python .venv/bin/python benchmarks/durability/retention_rounds.py --keys 1000000 --out $OUT/$side-$r 2>&1 | grep -v WARN > $OUT/$side-$r.log
    echo "$side-$r end $(date -Is) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT/loads.txt
  done
done
