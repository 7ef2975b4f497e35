#!/usr/bin/env bash
# One run of the State engine's speed benchmarks (issue 28): fetch `latest` one at a time, batched
# fetch, apply, footprint, each beside its peers, with the 1-minute load average before and after
# every step. Run it under the benchmark lock:
#
#   flock /work/bench.lock benchmarks/jmh/state_speed_run.sh <classpath file> <out dir> [steps]
#
# <classpath file> holds `bench/Jmh/fullClasspath` (bin/sbt "bench/Jmh/compile" "export bench/Jmh/fullClasspath");
# steps: any of fetch, batch, apply, footprint, cpu (default: the first four). `cpu` runs the same loops
# scored per second of CPU the JVM used (CpuTimeThroughput), which the machine's load changes much less
# than wall time; CPU_CP (a classpath) runs it with other classes (main's engine: its core classes first),
# BATCH_API=objects for an engine without State.fetchInto.
set -euo pipefail
cp_file=$1
out=$2
steps=${3:-"fetch batch apply footprint"}
cp=$(cat "$cp_file")
mkdir -p "$out"
jmh=(java -Djmh.ignoreLock=true -cp "$cp" org.openjdk.jmh.Main -f 1)
load() { echo "$1 $(date -Is) $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/loads.txt"; }
for step in $steps; do
  load "$step-before"
  case $step in
    fetch)
      "${jmh[@]}" -wi 2 -i 3 -w 2s -r 2s -rf json -rff "$out/fetch.json" \
        io.sharedstate.bench.state.FetchLatestBenchmark > "$out/fetch.log" 2>&1 ;;
    batch)
      "${jmh[@]}" -wi 2 -i 3 -w 2s -r 2s -rf json -rff "$out/batch.json" \
        io.sharedstate.bench.state.FetchBatchBenchmark > "$out/batch.log" 2>&1 ;;
    apply)
      "${jmh[@]}" -rf json -rff "$out/apply.json" \
        io.sharedstate.bench.state.ApplyBenchmark > "$out/apply.log" 2>&1 ;;
    footprint)
      for impl in engine skiplist locked_treemap; do
        java -Xmx10g -XX:+UseParallelGC -cp "$cp" io.sharedstate.bench.state.StateFootprint $impl >> "$out/footprint.jsonl"
      done ;;
    cpu)
      cpu_cp=${CPU_CP:-$cp}
      for keys in scattered in_hand; do
        java -Xmx12g -XX:+UseParallelGC -cp "$cpu_cp" io.sharedstate.bench.state.CpuTimeThroughput fetch 3 $keys >> "$out/cpu.jsonl"
        java -Xmx12g -XX:+UseParallelGC -cp "$cpu_cp" io.sharedstate.bench.state.CpuTimeThroughput batch 3 $keys ${BATCH_API:-into} >> "$out/cpu.jsonl"
      done
      java -Xmx12g -XX:+UseParallelGC -Djava.util.concurrent.ForkJoinPool.common.parallelism=1 -cp "$cpu_cp" \
        io.sharedstate.bench.state.CpuTimeThroughput apply 3 >> "$out/cpu.jsonl" ;;
    *) echo "unknown step $step (fetch, batch, apply, footprint, cpu)" >&2; exit 2 ;;
  esac
  load "$step-after"
done
