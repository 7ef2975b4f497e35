package io.sharedstate.spark

import io.sharedstate.spark.write.{RealtimeLanes, RealtimeWriters}

import java.nio.file.Files
import java.sql.Timestamp
import java.util.concurrent.ConcurrentLinkedQueue
import org.apache.spark.sql.{ForeachWriter, Row, SparkSession}
import org.apache.spark.sql.execution.streaming.sources.LowLatencyMemoryStream
import org.apache.spark.sql.streaming.{StreamingQuery, StreamingQueryException, Trigger}
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._

/**
 * Real-time mode (`Trigger.RealTime`) on Spark's low-latency memory source: the updater as a
 * query's foreach sink, `sharedstate_fetch` in another real-time query's projection.
 */
class RealtimeSuite extends AnyFunSuite with BeforeAndAfterAll {
  // Real-time tasks run for the whole epoch: a slot for each of the queries' partitions, and one more.
  private lazy val spark = SparkSession.builder().master("local[5]").appName("realtime")
    .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC").getOrCreate()

  override def afterAll(): Unit = spark.stop()

  private def ts(seconds: Long) = new Timestamp(seconds * 1000)
  private val dir = Files.createTempDirectory("realtime").toString

  private def waitFor(what: => String, timeoutS: Int = 60)(cond: => Boolean): Unit = {
    val deadline = System.nanoTime() + timeoutS * 1000000000L
    while (!cond) {
      if (System.nanoTime() > deadline) fail(s"timed out waiting for $what")
      Thread.sleep(50)
    }
  }

  private def updater(state: String, partitions: Int, options: Map[String, String] = Map.empty,
      epoch: String = "5 seconds"): (LowLatencyMemoryStream[(String, Timestamp, String)], StreamingQuery) = {
    val session = spark
    import session.implicits._
    val updates = LowLatencyMemoryStream[(String, Timestamp, String)](partitions)(implicitly, spark.sqlContext)
    val query = updates.toDF().toDF("ad_id", "ts", "campaign").writeStream
      .foreach(SharedState.updater(spark, state, key = "ad_id", time = "ts", lateness = "1 second", options = options))
      .outputMode("update").trigger(Trigger.RealTime(epoch))
      .option("checkpointLocation", s"$dir/ck-$state").start()
    (updates, query)
  }

  test("sub-epoch numbers: rows of the epoch in the low bits, replays skip what an earlier run committed") {
    val e3 = RealtimeWriters.subEpoch(3, 120)
    assert(RealtimeWriters.rowsApplied(3, e3) == 120)
    assert(RealtimeWriters.rowsApplied(4, e3) == 0)
    assert(RealtimeWriters.rowsApplied(2, e3) == Long.MaxValue)
    assert(RealtimeWriters.rowsApplied(0, -1L) == 0)
    assert(RealtimeWriters.subEpoch(3, 121) > e3 && RealtimeWriters.subEpoch(4, 0) > RealtimeWriters.subEpoch(3,
      1L << 31))
    assert(RealtimeWriters.isPartitionOf(RealtimeWriters.writer("q1", 2), "q1"))
    assert(!RealtimeWriters.isPartitionOf(RealtimeWriters.writer("q10", 2), "q1"))
  }

  test("the updater's driver requests pass the RPC allow-list (an executor's tasks send them to the driver)") {
    import io.sharedstate.spark.cluster.{MessageAllowList, Messages}
    import io.sharedstate.spark.durable.ChangelogFile
    import org.apache.spark.sharedstate.RpcBridge
    val file = ChangelogFile(3, "/tmp/changelog/part-3.parquet", 1234L, 5678L)
    for (request <- Seq(RealtimeWriters.Open("s", "q", 2, 1, 7L),
        RealtimeWriters.Commit.of("s", "q#p1", RealtimeWriters.subEpoch(2, 10), 99L, Seq(file)))) {
      val back = RpcBridge.decode(RpcBridge.encode(Messages.AskDriver(request)), MessageAllowList)
      assert(back == Messages.AskDriver(request))
    }
  }

  test("a real-time updater commits within the epoch, one writer per partition; a real-time fetch waits for U") {
    commitsAndWaits("rt_campaigns", lanes = false)
  }

  test("the same through the delivery lanes: flushes and waiting fetches go to the State's reader thread") {
    commitsAndWaits("rt_campaigns_lanes", lanes = true)
  }

  private def commitsAndWaits(name: String, lanes: Boolean): Unit = {
    spark.conf.set("spark.sharedstate.realtime.deliveryLanes", lanes.toString)
    try commitsAndWaitsWith(name, lanes)
    finally spark.conf.unset("spark.sharedstate.realtime.deliveryLanes")
    val readers = Thread.getAllStackTraces.keySet.asScala.map(_.getName)
    assert(readers.contains(s"sharedstate-delivery-$name") == lanes, readers.filter(_.startsWith("sharedstate")))
  }

  private def commitsAndWaitsWith(name: String, withLanes: Boolean): Unit = {
    RealtimeSuite.rows.clear()
    val state = SharedState.create(spark, name, key = "ad_id STRING", value = "campaign STRING")
    // An epoch longer than the test: whatever U does, it does within the first epoch.
    val (updates, writer) = updater(state.name, partitions = 2, epoch = "10 minutes")
    updates.addData(0, Seq(("a", ts(10), "c1"), ("a", ts(30), "c3")))
    updates.addData(1, Seq(("b", ts(14), "c2"), ("b", ts(40), "c4")))
    // U = min over the partitions' watermarks (max event time - 1 s)
    waitFor("U at 29 s")(state.progress.updateProgress == 29L * 1000000)
    assert(state.writers.map(_.writer).sorted == Seq(0, 1).map(p => RealtimeWriters.writer(writer.id.toString, p)))
    val asOf = state.asOf("1970-01-01 00:00:20").collect().map(r => (r.getString(0), r.getString(1))).sortBy(_._1)
    assert(asOf.toSeq == Seq(("a", "c1"), ("b", "c2")))
    // A running query's updates count at once, not at the end of its epoch: U moves while the first
    // epoch is still open (no epoch has ended, so no progress was reported).
    updates.addData(0, Seq(("a", ts(45), "c5")))
    updates.addData(1, Seq(("b", ts(46), "c6")))
    waitFor("U at 44 s")(state.progress.updateProgress == 44L * 1000000)
    assert(writer.lastProgress == null, s"U moved only after an epoch ended: ${writer.lastProgress}")

    val session = spark
    import session.implicits._
    val views = LowLatencyMemoryStream[(Long, String, Timestamp)](1)(implicitly, spark.sqlContext)
    val reader = views.toDF().toDF("id", "ad_id", "ts")
      .selectExpr("id", s"sharedstate_fetch('${state.name}', ad_id, ts).campaign AS campaign")
      .writeStream.foreach(RealtimeSuite.Collect).outputMode("update").trigger(Trigger.RealTime("5 seconds"))
      .option("checkpointLocation", s"$dir/ck-views-$name").start()
    views.addData(Seq((1L, "a", ts(12)), (2L, "b", ts(20)), (3L, "a", ts(50))))
    waitFor("the views U has passed")(RealtimeSuite.rows.size == 2)
    updates.addData(0, Seq(("a", ts(60), "c7"))) // partition 0 at 59 s, partition 1 still at 45 s: U = 45 s
    waitFor("U at 45 s")(state.progress.updateProgress == 45L * 1000000)
    Thread.sleep(300)
    assert(RealtimeSuite.rows.size == 2, "view 3 (50 s) was answered before U passed it")
    updates.addData(1, Seq(("b", ts(70), "c8"))) // U = 59 s
    waitFor("view 3, once U passed it")(RealtimeSuite.rows.size == 3)
    assert(RealtimeSuite.rows.asScala.toSeq.sortBy(_._1) == Seq((1L, "c1"), (2L, "c2"), (3L, "c5")))
    val lanes = if (withLanes) Some(RealtimeLanes.of(name)) else None
    // With lanes: one per running updater task and one for the fetching task (which waited once)
    lanes.foreach(l => assert((l.flushLanesInUse, l.fetchLanesInUse) == (2, 1)))
    reader.stop()
    writer.stop()
    // ... given back when the tasks end, for later tasks to reuse
    lanes.foreach(l =>
      waitFor(s"the lanes given back (${l.flushLanesInUse} flush, ${l.fetchLanesInUse} fetch held)")(
        l.flushLanesInUse == 0 && l.fetchLanesInUse == 0))
    // the query listener pauses them (it hears of the stop asynchronously)
    waitFor("both partition writers paused")(state.writers.forall(_.status == "paused"))
  }

  test("idleTimeout: a partition without input stops holding U, stays paused across epochs, rejoins with input") {
    val idle = SharedState.create(spark, "rt_idle", key = "ad_id STRING", value = "campaign STRING")
    val held = SharedState.create(spark, "rt_held", key = "ad_id STRING", value = "campaign STRING")
    val (idleUpdates, idleWriter) = updater(idle.name, partitions = 2, Map("idleTimeout" -> "3 seconds"))
    val (heldUpdates, heldWriter) = updater(held.name, partitions = 2)
    def status(state: StateHandle, p: Int) =
      state.writers.find(_.writer == RealtimeWriters.writer(if (state eq idle) idleWriter.id.toString
          else heldWriter.id.toString, p))
    try {
      val rows = Seq(("a", ts(10), "c1"), ("a", ts(30), "c3"))
      idleUpdates.addData(0, rows)
      heldUpdates.addData(0, rows)
      // Partition 1 reads nothing: with idleTimeout it is paused and U is partition 0's watermark.
      // Partition 0 is kept active meanwhile (rows at its own time, 30 s, every half second): both
      // idle clocks start with the query, and were it paused first, U would stay where it is (with
      // every writer paused U never jumps), as happened on a loaded machine.
      var started = 0
      var nextBeat = 0L
      waitFor(s"U of the idle-timeout State at 29 s (U ${idle.progress.updateProgress}, writers ${idle.writers})") {
        if (System.nanoTime() > nextBeat) {
          started += 1
          idleUpdates.addData(0, Seq((s"hb0-start-$started", ts(30), "hb")))
          nextBeat = System.nanoTime() + 500L * 1000000
        }
        idle.progress.updateProgress == 29L * 1000000
      }
      assert(status(idle, 1).map(_.status).contains("paused"), idle.writers)
      // Without it, partition 1 holds U back although partition 0 committed the same rows.
      waitFor("partition 0 of the other State at 29 s")(status(held, 0).exists(_.progress == 29L * 1000000))
      assert(held.progress.updateProgress < 29L * 1000000 && status(held, 1).map(_.status).contains("active"))
      // Every epoch (5 s) opens every partition again; that is not input: partition 1 stays paused throughout.
      val until = System.nanoTime() + 6500L * 1000000
      while (System.nanoTime() < until) {
        assert(status(idle, 1).map(_.status).contains("paused"), s"the idle partition woke up: ${idle.writers}")
        Thread.sleep(25)
      }
      assert(idle.progress.updateProgress == 29L * 1000000)
      // Input comes back. A paused writer rejoins at the current U (it never moves U back), so partition 1
      // comes first: its update below U is late (rejected), the other moves U to its watermark (49 s).
      // From here the partitions with input must stay active for the checks of U, however slow the machine:
      // each wait feeds them rows (other keys) at their current times every half second, well within 3 s.
      var beats = 0
      def waitActive(what: String, p0Time: Option[Long], p1Time: Long)(cond: => Boolean): Unit = {
        var next = 0L
        waitFor(s"$what (U ${idle.progress.updateProgress}, writers ${idle.writers})") {
          if (System.nanoTime() > next) {
            beats += 1
            p0Time.foreach(t => idleUpdates.addData(0, Seq((s"hb0-$beats", ts(t), "hb"))))
            idleUpdates.addData(1, Seq((s"hb1-$beats", ts(p1Time), "hb")))
            next = System.nanoTime() + 500L * 1000000
          }
          cond
        }
      }
      idleUpdates.addData(1, Seq(("b", ts(20), "late"), ("b", ts(50), "c5")))
      waitActive("partition 1 active again, U at 49 s", None, 50)(
        status(idle, 1).exists(_.status == "active") && idle.progress.updateProgress == 49L * 1000000)
      // Partition 0 rejoins ahead of it: U is their minimum, partition 1's 49 s ...
      idleUpdates.addData(0, Seq(("a", ts(60), "c6")))
      waitActive("partition 0 active again at 59 s", Some(60), 50)(status(idle, 0).exists(_.progress == 59L * 1000000))
      assert(status(idle, 0).map(_.status).contains("active") && idle.progress.updateProgress == 49L * 1000000,
        idle.writers)
      // ... until partition 1 passes partition 0: U is then partition 0's watermark.
      idleUpdates.addData(1, Seq(("b", ts(80), "c8")))
      waitActive("U at 59 s, partition 0's watermark", Some(60), 80)(idle.progress.updateProgress == 59L * 1000000)
      def asOf(t: String) = idle.asOf(t).collect().map(r => (r.getString(0), r.getString(1)))
        .filterNot(_._1.startsWith("hb")).sortBy(_._1).toSeq
      assert(asOf("1970-01-01 00:00:25") == Seq(("a", "c1")))
      assert(asOf("1970-01-01 00:00:45") == Seq(("a", "c3")))
      assert(asOf("1970-01-01 00:00:55") == Seq(("a", "c3"), ("b", "c5")))
    } finally {
      idleWriter.stop()
      heldWriter.stop()
    }
  }

  test("the change stream as a real-time source: each change arrives as soon as U passes it, then resumes") {
    val state = SharedState.create(spark, "rt_changes", key = "ad_id STRING", value = "campaign STRING")
    val (updates, writer) = updater(state.name, partitions = 1)
    // The reader's first epoch is long enough to hold the first part of the test on a loaded machine.
    def changes(epoch: String) = spark.readStream.format("sharedstate").option("state", state.name).load()
      .selectExpr("ad_id", "campaign").writeStream.foreach(RealtimeSuite.Changes).outputMode("update")
      .trigger(Trigger.RealTime(epoch)).option("checkpointLocation", s"$dir/ck-changes").start()
    val reader = changes("20 seconds")
    updates.addData(Seq(("a", ts(10), "c1"), ("b", ts(12), "c2"), ("a", ts(14), "c3")))
    waitFor("U at 13 s")(state.progress.updateProgress == 13L * 1000000)
    waitFor("the final changes")(RealtimeSuite.changes.size == 2)
    assert(RealtimeSuite.changes.asScala.toSeq == Seq(("a", "c1"), ("b", "c2")))
    updates.addData(Seq(("c", ts(20), "c4"))) // U = 19 s: ("a", 14 s) is final now
    waitFor("the change U passed")(RealtimeSuite.changes.size == 3)
    // At once, not at the end of an epoch: the reader's first epoch has not ended (no progress reported).
    assert(reader.lastProgress == null, s"the change arrived only after an epoch ended: ${reader.lastProgress}")
    // Past the first epoch's end, and restarted from the checkpoint: nothing twice, nothing missed.
    waitFor("the reader's first epoch ended")(reader.lastProgress != null)
    reader.stop()
    updates.addData(Seq(("d", ts(30), "c5"))) // U = 29 s: ("c", 20 s) is final, read by the restarted query
    waitFor("U at 29 s")(state.progress.updateProgress == 29L * 1000000)
    val again = changes("5 seconds")
    waitFor("the change made final while the reader was stopped")(RealtimeSuite.changes.size == 4)
    Thread.sleep(300)
    assert(RealtimeSuite.changes.asScala.toSeq == Seq(("a", "c1"), ("b", "c2"), ("a", "c3"), ("c", "c4")))
    again.stop()
    writer.stop()
  }

  test("a real-time fetch that U does not pass in time fails naming the State, the time and U") {
    val state = SharedState.create(spark, "rt_stalled", key = "ad_id STRING", value = "campaign STRING")
    val (updates, writer) = updater(state.name, partitions = 1)
    updates.addData(Seq(("a", ts(10), "c1")))
    waitFor("U at 9 s")(state.progress.updateProgress == 9L * 1000000)
    spark.conf.set("spark.sharedstate.realtime.fetchTimeout", "1 second")
    try {
      val session = spark
      import session.implicits._
      val views = LowLatencyMemoryStream[(Long, String, Timestamp)](1)(implicitly, spark.sqlContext)
      val reader = views.toDF().toDF("id", "ad_id", "ts")
        .selectExpr("id", s"sharedstate_fetch('${state.name}', ad_id, ts).campaign AS campaign")
        .writeStream.foreach(RealtimeSuite.Collect).outputMode("update").trigger(Trigger.RealTime("5 seconds"))
        .option("checkpointLocation", s"$dir/ck-stalled").start()
      views.addData(Seq((7L, "a", ts(60))))
      val e = intercept[StreamingQueryException](reader.awaitTermination(60000))
      val message = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).map(_.getMessage).mkString(" / ")
      assert(
        message.contains("rt_stalled") && message.contains("1970-01-01T00:01:00Z") &&
          message.contains("U=1970-01-01T00:00:09Z") && message.contains("spark.sharedstate.realtime.fetchTimeout"),
        message
      )
      assert(!RealtimeSuite.rows.asScala.exists(_._1 == 7L))
    } finally {
      spark.conf.unset("spark.sharedstate.realtime.fetchTimeout")
      writer.stop()
    }
  }
}

object RealtimeSuite {
  val rows = new ConcurrentLinkedQueue[(Long, String)]()
  val changes = new ConcurrentLinkedQueue[(String, String)]()

  /** Collects a change stream's (key, value) rows. */
  object Changes extends ForeachWriter[Row] {
    override def open(partitionId: Long, epochId: Long): Boolean = true
    override def process(row: Row): Unit = changes.add((row.getString(0), row.getString(1)))
    override def close(errorOrNull: Throwable): Unit = ()
  }

  /** Collects the rows of a real-time query (local mode: same JVM). */
  object Collect extends ForeachWriter[Row] {
    override def open(partitionId: Long, epochId: Long): Boolean = true
    override def process(row: Row): Unit = rows.add((row.getLong(0), row.getString(1)))
    override def close(errorOrNull: Throwable): Unit = ()
  }
}
