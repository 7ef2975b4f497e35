package io.sharedstate.bench.state;

import io.sharedstate.core.FetchAnswer;
import io.sharedstate.core.Key;
import io.sharedstate.core.State;
import java.lang.management.ManagementFactory;
import java.util.Random;

/**
 * The FetchLatestBenchmark and ApplyBenchmark loops (engine only), scored per second of CPU the JVM
 * used as well as per second of wall time. On a machine shared with other work the wall-time score
 * says how much CPU the benchmark was given; the CPU-time score is what one core does, whatever the
 * load (the JVM's CPU includes the JIT and GC threads, so it is, if anything, low). Not JMH: one JVM,
 * warm-up rounds, then measured rounds, one JSON line each.
 *
 *   java -Xmx12g -XX:+UseParallelGC -Djava.util.concurrent.ForkJoinPool.common.parallelism=1 \
 *     -cp <bench classpath> io.sharedstate.bench.state.CpuTimeThroughput fetch|apply [rounds]
 */
public final class CpuTimeThroughput {
  private static final com.sun.management.OperatingSystemMXBean OS =
      (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

  public static void main(String[] args) {
    String what = args.length > 0 ? args[0] : "fetch";
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
    if (what.equals("fetch")) fetch(rounds);
    else if (what.equals("apply")) apply(rounds);
    else throw new IllegalArgumentException("fetch or apply, not " + what);
  }

  private static void fetch(int rounds) {
    State engine = BenchData.engine(8, false);
    int n = 1 << 20;
    Key[] keys = BenchData.keyObjects();
    int[] keyIdx = new int[n];
    long[] times = new long[n];
    Random r = new Random(42);
    for (int j = 0; j < n; j++) {
      keyIdx[j] = r.nextInt(BenchData.keys());
      times[j] = Math.floorMod(r.nextLong(), 1000L * BenchData.versions());
    }
    long found = 0;
    int perRound = 4 * n;
    for (int round = -3; round < rounds; round++) {
      long cpu0 = OS.getProcessCpuTime();
      long wall0 = System.nanoTime();
      for (int i = 0; i < perRound; i++) {
        int j = i & (n - 1);
        if (engine.fetchLatest(keys[keyIdx[j]], times[j]) instanceof FetchAnswer.Found) found++;
      }
      report("fetch", round, perRound, cpu0, wall0);
    }
    if (found == 42) System.out.println();
  }

  private static void apply(int rounds) {
    if (BenchData.values().length != BenchData.versions()) throw new IllegalStateException();
    long ops = (long) BenchData.keys() * BenchData.versions();
    for (int round = -2; round < rounds; round++) {
      long cpu0 = OS.getProcessCpuTime();
      long wall0 = System.nanoTime();
      State s = BenchData.engine(1, true);
      report("apply", round, ops, cpu0, wall0);
      if (s.hashCode() == 42) System.out.println();
    }
  }

  private static void report(String what, int round, long ops, long cpu0, long wall0) {
    double cpu = (OS.getProcessCpuTime() - cpu0) / 1e9;
    double wall = (System.nanoTime() - wall0) / 1e9;
    double[] load = new double[] {OS.getSystemLoadAverage()};
    System.out.printf(
        "{\"what\": \"%s\", \"round\": %d, \"warmup\": %b, \"ops\": %d, \"cpu_s\": %.3f, \"wall_s\": %.3f, "
            + "\"ops_per_cpu_s\": %.0f, \"ops_per_wall_s\": %.0f, \"load1\": %.2f}%n",
        what, round, round < 0, ops, cpu, wall, ops / cpu, ops / wall, load[0]);
  }
}
