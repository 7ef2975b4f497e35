package io.sharedstate.bench.state;

import io.sharedstate.core.FetchAnswer;
import io.sharedstate.core.Key;
import io.sharedstate.core.State;
import io.sharedstate.core.fetch.FetchAnswers;
import io.sharedstate.core.fetch.FetchRequest;
import io.sharedstate.core.fetch.FetchRule;
import io.sharedstate.core.fetch.ReadMode;
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
    String keys = args.length > 2 ? args[2] : "scattered";
    if (what.equals("fetch")) fetch(rounds, keys);
    else if (what.equals("batch")) batch(rounds, keys, args.length > 3 ? args[3] : "into");
    else if (what.equals("apply")) apply(rounds);
    else throw new IllegalArgumentException("fetch or apply, not " + what);
  }

  /**
   * `keys`: how the caller holds the key it fetches. "scattered": picks it from the 1M key objects
   * made at load time (a miss on the array slot and one on the object before the engine starts, as
   * FetchLatestBenchmark does); "in_hand": the fetch sequence's own key objects, made in sequence
   * order, so the caller streams through them as a join streams through its rows; "from_bytes": a
   * new Key from the key row per fetch (hashing included), as a join does; "probe": in-hand keys,
   * only the key table look-up (no answer), to tell the table's share from the value set's.
   */
  private static void fetch(int rounds, String keys) {
    State engine = BenchData.engine(8, false);
    int n = 1 << 20;
    Key[] all = BenchData.keyObjects();
    int[] keyIdx = new int[n];
    long[] times = new long[n];
    Random r = new Random(42);
    for (int j = 0; j < n; j++) {
      keyIdx[j] = r.nextInt(BenchData.keys());
      times[j] = Math.floorMod(r.nextLong(), 1000L * BenchData.versions());
    }
    Key[] inHand = new Key[n];
    byte[][] rows = new byte[n][];
    if (!keys.equals("scattered")) {
      for (int j = 0; j < n; j++) {
        rows[j] = BenchData.keyBytes()[keyIdx[j]].clone();
        inHand[j] = new Key(rows[j]);
      }
    }
    long found = 0;
    int perRound = 4 * n;
    for (int round = -3; round < rounds; round++) {
      long cpu0 = OS.getProcessCpuTime();
      long wall0 = System.nanoTime();
      switch (keys) {
        case "scattered":
          for (int i = 0; i < perRound; i++) {
            int j = i & (n - 1);
            if (engine.fetchLatest(all[keyIdx[j]], times[j]) instanceof FetchAnswer.Found) found++;
          }
          break;
        case "in_hand":
          for (int i = 0; i < perRound; i++) {
            int j = i & (n - 1);
            if (engine.fetchLatest(inHand[j], times[j]) instanceof FetchAnswer.Found) found++;
          }
          break;
        case "from_bytes":
          for (int i = 0; i < perRound; i++) {
            int j = i & (n - 1);
            if (engine.fetchLatest(new Key(rows[j]), times[j]) instanceof FetchAnswer.Found) found++;
          }
          break;
        case "probe":
          for (int i = 0; i < perRound; i++) {
            int j = i & (n - 1);
            Key k = inHand[j];
            if (engine.partitionOf(k).get(k) != null) found++;
          }
          break;
        default:
          throw new IllegalArgumentException("scattered, in_hand, from_bytes or probe, not " + keys);
      }
      report("fetch-" + keys, round, perRound, cpu0, wall0);
    }
    if (found == 42) System.out.println();
  }

  /**
   * The FetchBatchBenchmark loop: chunks of 4096 read-committed `latest` requests, `State.fetchInto` a
   * reused FetchAnswers ("into"), or `State.fetch(requests)`, an answer object each ("objects", which
   * main's engine also has). `keys` as for fetch: "scattered" or "in_hand".
   */
  private static void batch(int rounds, String keys, String api) {
    State engine = BenchData.engine(8, false);
    int chunk = 4096;
    int chunks = 256;
    Random r = new Random(42);
    FetchRequest[][] requests = new FetchRequest[chunks][chunk];
    for (int c = 0; c < chunks; c++) {
      for (int j = 0; j < chunk; j++) {
        int k = r.nextInt(BenchData.keys());
        Key key = keys.equals("scattered") ? BenchData.keyObjects()[k] : new Key(BenchData.keyBytes()[k].clone());
        requests[c][j] = new FetchRequest(key, Math.floorMod(r.nextLong(), 1000L * BenchData.versions()),
            FetchRule.Latest$.MODULE$, ReadMode.Committed$.MODULE$);
      }
    }
    boolean into = api.equals("into");
    FetchAnswers answers = into ? new FetchAnswers(chunk) : null;
    long found = 0;
    int perRound = 1024;
    for (int round = -3; round < rounds; round++) {
      long cpu0 = OS.getProcessCpuTime();
      long wall0 = System.nanoTime();
      for (int c = 0; c < perRound; c++) {
        if (into) {
          engine.fetchInto(requests[c % chunks], chunk, answers);
          for (int j = 0; j < chunk; j++) if (answers.kind(j) == FetchAnswers.Found()) found += answers.time(j);
        } else {
          FetchAnswer[] out = engine.fetch(requests[c % chunks]);
          for (int j = 0; j < chunk; j++) if (out[j] instanceof FetchAnswer.Found) found++;
        }
      }
      report("batch-" + api + "-" + keys, round, (long) perRound * chunk, cpu0, wall0);
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
