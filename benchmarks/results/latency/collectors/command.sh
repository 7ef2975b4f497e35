#!/bin/bash
cd /work/wt-realtime3
export SHAREDSTATE_CACHE=/work/cache
B="benchmarks/latency/end_to_end.py --epoch '1 minute' --seconds 20 --warmup 5 --runs 1 --rates 10000 --modes realtime,realtime-no-state --ladder ''"
run() { # name, extra args
  local name=$1; shift
  echo "== $name $(cat /proc/loadavg) $(date -Is)"
  eval .venv/bin/python $B --out /tmp/latency-collectors/$name --work /tmp/rt3/work-exp2-$name --pause-logs /tmp/latency-collectors/$name/pauses "$@" > /tmp/latency-collectors/$name.log 2>&1
  echo "   end $(cat /proc/loadavg) $(date -Is)"
  grep '^{' /tmp/latency-collectors/$name.log | cut -c1-200
}
run default
run zgc "'--driver-jvm=-XX:+UseZGC'" "'--broker-jvm=-XX:+UseZGC'"
run g1-10ms "'--driver-jvm=-XX:MaxGCPauseMillis=10'" "'--broker-jvm=-XX:+UseParallelGC -Xmn64m'"
run default2
