package io.sharedstate.bench.elastic

import io.sharedstate.core._
import io.sharedstate.core.fetch.FetchRequest
import io.sharedstate.core.row.BinaryRowWriter
import java.nio.file.{Files, Paths}
import java.util.concurrent.atomic.AtomicBoolean
import scala.collection.mutable.ArrayBuffer

/**
 * The engine's share of a live partition move's pause (docs/elasticity.md): one partition of
 * `keys` keys (2 versions each, BIGINT key and value rows) handed over by one State and taken over
 * by another in the same JVM (State.handOver, then State.takeOver: snapshot encode, decode and
 * restore, and the staged shares), without the RPC hop between executors (the snapshot's bytes are
 * reported: a cluster move sends them once over Spark's RPC). Meanwhile a thread fetches keys of the
 * other partitions at the old owner; their p99 latency in the second around each move is set against
 * the steady state before. Not JMH: one move is one measurement, repeated `runs` times.
 *
 * usage: bench/runMain io.sharedstate.bench.elastic.HandOverPause OUT_JSON [keys,...] [runs]
 */
object HandOverPause {
  private val Versions = 2

  private def row(v: Long): Array[Byte] = { val w = new BinaryRowWriter(1); w.setLong(0, v); w.toBytes }

  final case class Result(keys: Int, runs: Int, pauseMs: Seq[Double], snapshotBytes: Long, steadyP99Us: Double,
      aroundP99Us: Double)

  def main(args: Array[String]): Unit = {
    val out = Paths.get(args.headOption.getOrElse("benchmarks/results/elasticity/handover.json"))
    val sizes = args.lift(1).map(_.split(",").map(_.trim.toInt).toSeq).getOrElse(Seq(10000, 100000, 1000000))
    val runs = args.lift(2).map(_.toInt).getOrElse(3)
    val results = sizes.map(n => measure(n, runs))
    Files.createDirectories(out.getParent)
    val json = results.map { r =>
      s"""{"keys": ${r.keys}, "runs": ${r.runs}, "pause_ms": [${r.pauseMs.map(d => f"$d%.2f").mkString(", ")}], """ +
        s""""snapshot_bytes": ${r.snapshotBytes}, "steady_fetch_p99_us": ${f"${r.steadyP99Us}%.1f"}, """ +
        s""""around_move_fetch_p99_us": ${f"${r.aroundP99Us}%.1f"}}"""
    }.mkString("[\n  ", ",\n  ", "\n]\n")
    Files.writeString(out, json)
    println(json)
  }

  private def measure(keys: Int, runs: Int): Result = {
    val partitions = 4
    val spec = StateSpec("bench", "k BIGINT", "v BIGINT", partitions, "replace")
    // `keys` keys in partition 0 (the one that moves) and as many spread over the others
    val moving = ArrayBuffer.empty[Array[Byte]]
    val others = ArrayBuffer.empty[Array[Byte]]
    var i = 0L
    val otherKeys = math.min(keys, 100000) // what the fetching thread reads
    while (moving.size < keys || others.size < otherKeys) {
      val k = row(i * 7919)
      if (new Key(k).partition(partitions) == 0) { if (moving.size < keys) moving += k }
      else if (others.size < otherKeys) others += k
      i += 1
    }
    val pauses = ArrayBuffer.empty[Double]
    var bytes = 0L
    val steady = ArrayBuffer.empty[Long]
    val around = ArrayBuffer.empty[Long]
    (0 until runs).foreach { _ =>
      val from = new State(spec)
      from.registerWriter("w")
      (0 until Versions).foreach { v =>
        val b = new UpdateBatch
        (moving.iterator ++ others.iterator).zipWithIndex.foreach { case (k, j) =>
          b.add(k, 1000L * v + j % 1000, row(j + v))
        }
        from.stage("w", v, 0, b)
        from.commitEpoch("w", v, 1000L * (v + 1))
      }
      // an epoch staged but not committed: its share of the moving partition moves too
      val pending = new UpdateBatch
      moving.take(1000).foreach(k => pending.add(k, 1000L * (Versions + 1), row(1)))
      from.stage("w", Versions, 0, pending)
      val to = new State(spec)
      to.restoreProgress(from.progressImage)

      val stop = new AtomicBoolean(false)
      val latencies = java.util.Collections.synchronizedList(new java.util.ArrayList[(Long, Long)]())
      val reader = new Thread(() => {
        val r = new scala.util.Random(1)
        while (!stop.get()) {
          val k = others(r.nextInt(others.size))
          val t0 = System.nanoTime()
          from.fetch(FetchRequest(new Key(k), 1000L * Versions))
          val t1 = System.nanoTime()
          latencies.add((t0, t1 - t0))
        }
      })
      reader.start()
      Thread.sleep(1000)
      val started = System.nanoTime()
      val handOver = from.handOver(Seq(0))
      to.takeOver(handOver)
      val ended = System.nanoTime()
      Thread.sleep(1000)
      stop.set(true)
      reader.join()
      pauses += (ended - started) / 1e6
      bytes = handOver.snapshots.map(_.length.toLong).sum
      latencies.forEach { case (t, l) =>
        if (t < started - 100000000L) steady += l
        else if (t >= started - 500000000L && t <= ended + 500000000L) around += l
      }
      require(to.partition(0).keyCount == keys && from.partition(0).keyCount == 0, "the partition moved whole")
      from.close(); to.close()
    }
    def p99(xs: ArrayBuffer[Long]): Double =
      if (xs.isEmpty) Double.NaN else xs.sorted.apply((xs.size * 0.99).toInt) / 1e3
    Result(keys, runs, pauses.toSeq, bytes, p99(steady), p99(around))
  }
}
