package io.sharedstate.spark.cluster

import io.sharedstate.spark.cluster.Messages.Host

import io.sharedstate.core.{EventTime, Key, State, StateSpec, UpdateBatch}
import io.sharedstate.core.fetch.FetchRequest
import io.sharedstate.core.row.BinaryRowWriter
import java.nio.file.{Files, Path, Paths}
import java.util.concurrent.atomic.{AtomicBoolean, AtomicLong}
import org.apache.spark.SparkConf
import org.apache.spark.sharedstate.RpcBridge
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.functions.{col, max_by}
import org.apache.spark.sql.streaming.Trigger
import scala.collection.mutable.ArrayBuffer

/**
 * benchmarks/elasticity: one State partition of 10K, 100K and 1M keys moved live between two hosts
 * (host A in this JVM, host B behind its own Spark RPC server, as in LiveMoveSuite) while a writer
 * commits an epoch every 100 ms and a reader fetches keys of every partition (the moving one too)
 * through the routed client all the while. Per move: the pause (the fence: Move.millis), the whole
 * call (pre-copy included), the p99 and the longest fetch latency in the 10 s around the move against
 * the 10 s before it (one fetch at a time: a fetch the fence holds is one sample, however long, so
 * the longest shows what the p99 cannot). With pre-copy (the default) and without (the fence copies
 * the whole partition), three moves each (A to B, back, and again).
 *
 * Beside it, in the same run, what a Spark user does today to change a stateful query's partitioning:
 * stop it and start it again from a fresh checkpoint with the new number of shuffle partitions, which
 * rebuilds the state from the source (Spark 4.2 keeps a checkpoint's number of state partitions and
 * has no public tool to repartition it). Timed: the restarted query (local[2], a streaming last-value
 * aggregation over the same number of keys, 2 then 4 shuffle partitions) until it has read all input.
 *
 * usage: spark/Test/runMain io.sharedstate.spark.cluster.MovePauseBench OUT_JSON [keys,...] [runs]
 */
object MovePauseBench {
  private val Window = 10000L // ms: the steady window before, and the window around the move

  private def row(v: Long): Array[Byte] = { val w = new BinaryRowWriter(1); w.setLong(0, v); w.toBytes }

  final case class MoveRun(pauseMs: Long, callMs: Double, steadyP99Ms: Double, aroundP99Ms: Double, fetches: Int,
      steadyMaxMs: Double, aroundMaxMs: Double, heldMs: Long, steadyCommitMaxMs: Double, aroundCommitMaxMs: Double,
      load: Double)

  // The 1-minute load average when a move starts (the box is shared: what else ran shows here).
  private def loadAverage: Double =
    try Files.readString(Paths.get("/proc/loadavg")).trim.split("\\s+")(0).toDouble
    catch { case _: Exception => Double.NaN }

  def main(args: Array[String]): Unit = {
    val out = Paths.get(args.headOption.getOrElse("benchmarks/results/elasticity/moves.json"))
    val sizes = args.lift(1).map(_.split(",").map(_.trim.toInt).toSeq).getOrElse(Seq(10000, 100000, 1000000))
    val runs = args.lift(2).map(_.toInt).getOrElse(3)
    val conf = new SparkConf(false).set("spark.rpc.askTimeout", "120s").set("spark.app.id", "move-pause-bench")
      .set("spark.rpc.message.maxSize", "512")
    val serverA = RpcBridge.newStandaloneServer("bench-a", "127.0.0.1", conf)
    val serverB = RpcBridge.newStandaloneServer("bench-b", "127.0.0.1", conf)
    val hostA = new HostService(HostId("1", "127.0.0.1", serverA.port))
    val hostB = new HostService(HostId("2", "127.0.0.1", serverB.port))
    serverA.serve(HostService.Endpoint, hostA, MessageAllowList)
    serverB.serve(HostService.Endpoint, hostB, MessageAllowList)
    val moves =
      try sizes.map(n => n -> Seq(true, false).map(pre => pre -> measureMoves(n, runs, pre, hostA, hostB, serverA)))
      finally { serverA.shutdown(); serverB.shutdown() }
    val restarts = sizes.map(n => n -> sparkRestart(n, runs))
    def arr(xs: Seq[Double]) = xs.map(d => f"$d%.2f").mkString("[", ", ", "]")
    val json = new StringBuilder("{\n  \"moves\": [\n")
    json ++= moves.flatMap { case (n, modes) =>
      modes.map { case (pre, rs) =>
        s"""    {"keys": $n, "pre_copy": $pre, "pause_ms": ${arr(rs.map(_.pauseMs.toDouble))}, """ +
          s""""call_ms": ${arr(rs.map(_.callMs))}, "steady_fetch_p99_ms": ${arr(rs.map(_.steadyP99Ms))}, """ +
          s""""around_move_fetch_p99_ms": ${arr(rs.map(_.aroundP99Ms))}, """ +
          s""""steady_fetch_max_ms": ${arr(rs.map(_.steadyMaxMs))}, "around_move_fetch_max_ms": """ +
          s"""${arr(rs.map(_.aroundMaxMs))}, "fetches": [${rs.map(_.fetches).mkString(", ")}], """ +
          s""""commits_held_ms": ${arr(rs.map(_.heldMs.toDouble))}, "steady_commit_max_ms": """ +
          s"""${arr(rs.map(_.steadyCommitMaxMs))}, "around_move_commit_max_ms": ${arr(
              rs.map(_.aroundCommitMaxMs))}, """ +
          s""""load_average": ${arr(rs.map(_.load))}}"""
      }
    }.mkString(",\n")
    json ++= "\n  ],\n  \"spark_restart\": [\n"
    json ++= restarts.map { case (n, ms) => s"""    {"keys": $n, "downtime_ms": ${arr(ms)}}""" }.mkString(",\n")
    json ++= "\n  ]\n}\n"
    Files.createDirectories(out.getParent)
    Files.writeString(out, json.toString)
    println(json)
  }

  private def measureMoves(keys: Int, runs: Int, preCopy: Boolean, hostA: HostService, hostB: HostService,
      serverA: RpcBridge.Server): Seq[MoveRun] = {
    val partitions = 4
    val spec = StateSpec(s"bench_${keys}_$preCopy", "k BIGINT", "v BIGINT", partitions, "replace")
    val route = StateRoute(spec, 1L, Array(hostA.id, hostA.id, hostB.id, hostB.id))
    var driver: ClusterStateController = null
    val node = new ClusterNode(
      serverA,
      hostA,
      new ClusterNode.CoordinatorAccess {
        override def route(state: String): StateRoute = driver.route
        override def updateProgress(state: String): Long = EventTime.MinusInfinity
        override def ensureReader(state: String, reader: String): Unit = ()
        override def readerProgress(state: String, reader: String): Option[Long] = None
        override def askDriver[T](request: DriverRequest[T]): T = request.onDriver()
      }
    )
    route.hosts.foreach(h =>
      HostLink.await[Any](node.link(h).ask(Host(spec, 1L, route.partitionsOf(h).toArray)), h, spec.name, Nil))
    driver = new ClusterStateController(new State(spec), route, node)
    driver.registerWriter("w")
    val client = new RecoveringStateClient(spec.name, node)
    // `keys` keys in partition 0 (the one that moves), up to 100K in the others
    val moving = ArrayBuffer.empty[Array[Byte]]
    val others = ArrayBuffer.empty[Array[Byte]]
    var i = 0L
    while (moving.size < keys || others.size < math.min(keys, 100000)) {
      val k = row(i * 7919)
      if (new Key(k).partition(partitions) == 0) { if (moving.size < keys) moving += k }
      else if (others.size < math.min(keys, 100000)) others += k
      i += 1
    }
    val all = moving ++ others
    var epoch = 0L
    for (v <- 0 until 2) { // two versions of every key
      val b = new UpdateBatch
      all.indices.foreach(j => b.add(all(j), 1000L * epoch + j % 1000, row(j + v)))
      client.stage("w", epoch, 0, b)
      driver.commitEpoch("w", epoch, 1000L * (epoch + 1))
      epoch += 1
    }
    val stop = new AtomicBoolean(false)
    val nextEpoch = new AtomicLong(epoch)
    // each epoch's stage and commit: the writer's back-pressure shows in how long a commit waits
    val commits = java.util.Collections.synchronizedList(new java.util.ArrayList[(Long, Long)]())
    val writer = new Thread(() => {
      val r = new scala.util.Random(3)
      while (!stop.get()) {
        val e = nextEpoch.getAndIncrement()
        val b = new UpdateBatch
        (0 until 1000).foreach(_ => b.add(all(r.nextInt(all.size)), 1000L * e + r.nextInt(1000), row(e)))
        val t0 = System.nanoTime()
        client.stage("w", e, 0, b)
        driver.commitEpoch("w", e, 1000L * (e + 1))
        commits.add((t0, System.nanoTime() - t0))
        Thread.sleep(100)
      }
    })
    val latencies = java.util.Collections.synchronizedList(new java.util.ArrayList[(Long, Long)]())
    val reader = new Thread(() => {
      val r = new scala.util.Random(1)
      while (!stop.get()) {
        val k = all(r.nextInt(all.size))
        val t0 = System.nanoTime()
        client.fetch(FetchRequest(new Key(k), driver.updateProgress - 1))
        latencies.add((t0, System.nanoTime() - t0))
      }
    })
    writer.start(); reader.start()
    try (0 until runs).map { run =>
        latencies.clear(); commits.clear()
        Thread.sleep(Window + Window / 2)
        val target = if (run % 2 == 0) hostB.id else hostA.id
        val load = loadAverage
        val started = System.nanoTime()
        val m = driver.move(Seq(0), target, "move", preCopy).head
        val ended = System.nanoTime()
        Thread.sleep(Window / 2)
        val (steady, around) = (ArrayBuffer.empty[Long], ArrayBuffer.empty[Long])
        val aroundFrom = started - Window / 2 * 1000000L
        latencies.synchronized(latencies.forEach { case (t, l) =>
          if (t >= aroundFrom) around += l else if (t >= aroundFrom - Window * 1000000L) steady += l
        })
        val (steadyCommits, aroundCommits) = (ArrayBuffer.empty[Long], ArrayBuffer.empty[Long])
        commits.synchronized(commits.forEach { case (t, l) =>
          if (t >= aroundFrom) aroundCommits += l else if (t >= aroundFrom - Window * 1000000L) steadyCommits += l
        })
        def p99(xs: ArrayBuffer[Long]) = if (xs.isEmpty) Double.NaN else xs.sorted.apply((xs.size * 0.99).toInt) / 1e6
        def max(xs: ArrayBuffer[Long]) = if (xs.isEmpty) Double.NaN else xs.max / 1e6
        val result = MoveRun(
          m.millis,
          (ended - started) / 1e6,
          p99(steady),
          p99(around),
          steady.size + around.size,
          max(steady),
          max(around),
          m.heldMillis,
          max(steadyCommits),
          max(aroundCommits),
          load
        )
        println(s"keys=$keys preCopy=$preCopy run=$run $result (to ${target.executorId})")
        result
      }
    finally {
      stop.set(true); writer.join(); reader.join()
      Seq(hostA, hostB).foreach(_.handle(Messages.Drop(spec.name)))
    }
  }

  // Spark's own way: stop, then start again from a fresh checkpoint with another number of shuffle partitions.
  private def sparkRestart(keys: Int, runs: Int): Seq[Double] = {
    val spark = SparkSession.builder().master("local[2]").appName("spark-restart-peer")
      .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate()
    val dir: Path = Files.createTempDirectory("elastic-peer")
    try {
      spark.range(keys.toLong).selectExpr("id AS k", "id % 1000 AS ts", "id * 7 AS v").write
        .parquet(dir.resolve("input").toString)
      def run(shufflePartitions: Int, checkpoint: String): Double = {
        spark.conf.set("spark.sql.shuffle.partitions", shufflePartitions.toString)
        val started = System.nanoTime()
        val q = spark.readStream.schema("k BIGINT, ts BIGINT, v BIGINT").parquet(dir.resolve("input").toString)
          .groupBy("k").agg(max_by(col("v"), col("ts")).as("v")).writeStream.format("noop").outputMode("update")
          .option("checkpointLocation", checkpoint).trigger(Trigger.AvailableNow()).start()
        q.awaitTermination()
        (System.nanoTime() - started) / 1e6
      }
      run(2, dir.resolve("ck-first").toString) // the query as it ran before, with its state
      (0 until runs).map { r =>
        val ms = run(4, dir.resolve(s"ck-restart-$r").toString)
        println(s"keys=$keys spark restart run=$r: $ms ms")
        ms
      }
    } finally spark.stop()
  }
}
