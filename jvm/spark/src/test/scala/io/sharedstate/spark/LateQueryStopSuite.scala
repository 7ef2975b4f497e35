package io.sharedstate.spark

import io.sharedstate.core.WriterStatus
import io.sharedstate.spark.fetch.FetchProgressListener
import io.sharedstate.spark.txn.TransactionListener
import java.nio.file.Files
import java.sql.Timestamp
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.streaming.{StreamingQuery, StreamingQueryListener}
import org.apache.spark.sql.streaming.StreamingQueryListener.QueryTerminatedEvent
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite
import scala.reflect.ClassTag

/**
 * Spark delivers a query's stop to listeners through its asynchronous bus but a start synchronously,
 * so the stop of a run can arrive after a restart (same query id, new run id) started. Each test
 * delivers the old run's stop late, by hand, to the plugin's listener, and checks that the running
 * restart keeps its part: a writer still holds U, a fetch join's reader is still registered, and a
 * transactional query's last batch of the old run is committed, not dropped.
 */
class LateQueryStopSuite extends AnyFunSuite with BeforeAndAfterAll {
  private lazy val spark = SparkSession.builder().master("local[2]").appName("late-query-stop")
    .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC").getOrCreate()

  override def afterAll(): Unit = spark.stop()

  private def jsonDir(rows: Seq[(String, Long, String)]): String = {
    val session = spark
    import session.implicits._
    val dir = Files.createTempDirectory("late-stop-input").toString + "/in"
    rows.map { case (k, s, v) => (k, new Timestamp(s * 1000), v) }.toDF("ad_id", "ts", "campaign")
      .write.json(dir)
    dir
  }

  private def input(dir: String): DataFrame =
    spark.readStream.schema("ad_id STRING, ts TIMESTAMP, campaign STRING").json(dir)

  private def waitFor(what: String)(done: => Boolean): Unit = {
    val deadline = System.nanoTime() + 60L * 1000000000L
    while (!done && System.nanoTime() < deadline) Thread.sleep(50)
    assert(done, s"timed out waiting for $what")
  }

  private def listener[L <: StreamingQueryListener: ClassTag]: L =
    spark.streams.listListeners().collectFirst { case l: L => l }.getOrElse(fail("the plugin's listener is not added"))

  private def lateStop(query: StreamingQuery, oldRun: java.util.UUID): QueryTerminatedEvent =
    new QueryTerminatedEvent(query.id, oldRun, None)

  test("a writer restarted before its old run's stop arrives keeps holding U") {
    val state = SharedState.create(spark, "late_stop_writer", key = "ad_id STRING", value = "campaign STRING")
    val in = jsonDir(Seq(("a", 10L, "c1"), ("b", 20L, "c2")))
    val checkpoint = Files.createTempDirectory("late-stop-writer").toString
    def start(): StreamingQuery = input(in).writeStream.format("sharedstate").option("state", state.name)
      .option("key", "ad_id").option("time", "ts").option("checkpointLocation", checkpoint).start()
    def status(q: StreamingQuery) = state.writers.find(_.writer == q.id.toString).map(_.status)

    val first = start()
    first.processAllAvailable()
    val firstRun = first.runId
    first.stop()
    waitFor("the stopped writer to be paused")(status(first).contains(WriterStatus.Paused))

    val restarted = start() // Spark posts the start before start() returns
    assert(restarted.id == first.id && restarted.runId != firstRun)
    assert(status(restarted).contains(WriterStatus.Active))
    listener[QueryLifecycleListener].onQueryTerminated(lateStop(restarted, firstRun))
    assert(status(restarted).contains(WriterStatus.Active), "the old run's stop paused the running restart")

    restarted.stop()
    waitFor("the restarted writer to be paused at its own stop")(status(restarted).contains(WriterStatus.Paused))
  }

  test("a fetch join restarted before its old run's stop arrives keeps its reader") {
    val state = SharedState.create(spark, "late_stop_reader", key = "ad_id STRING", value = "campaign STRING")
    val in = jsonDir(Seq(("a", 10L, "view")))
    val checkpoint = Files.createTempDirectory("late-stop-reader").toString
    def start(): StreamingQuery = state.fetchJoin(input(in).select("ad_id", "ts"), Seq("ad_id"), "ts")
      .writeStream.format("noop").option("checkpointLocation", checkpoint).start()

    val first = start()
    assert(state.readers.nonEmpty, "the fetch join registered no reader at its start")
    val firstRun = first.runId
    first.stop()
    waitFor("the stopped join's reader to be removed")(state.readers.isEmpty)

    val restarted = start()
    val readers = state.readers.keySet
    assert(readers.nonEmpty)
    listener[FetchProgressListener].onQueryTerminated(lateStop(restarted, firstRun))
    assert(state.readers.keySet == readers, "the old run's stop removed the running restart's reader")

    restarted.stop()
    waitFor("the restarted join's reader to be removed at its own stop")(state.readers.isEmpty)
  }

  test("a transactional query restarted before its old run's progress and stop arrive commits that run's last batch") {
    val session = spark
    import session.implicits._
    val names = Seq("late_stop_counts_a", "late_stop_counts_b")
    names.foreach(n => SharedState.create(spark, n, key = "k INT", value = "n BIGINT"))
    val dir = Files.createTempDirectory("late-stop-txn").toString + "/in"
    def arrive(events: Seq[(Long, Int, Long)]): Unit =
      events.map { case (id, k, s) => (id, k, new Timestamp(s * 1000)) }.toDF("event_id", "k", "ts")
        .write.mode("append").json(dir)
    val first = (0L until 20L).map(i => (i, (i % 4).toInt, 40L - i)) // out of order
    val second = (20L until 30L).map(i => (i, (i % 4).toInt, i + 20L))
    val sentinel = Seq((99L, 99, 1000L)) // moves the writers' progress, and U, past every event above
    arrive(first)
    val checkpoint = Files.createTempDirectory("late-stop-txn-ck").toString
    // Two transactional operators in one query: its epochs commit only once Spark reports each batch.
    def outcomes(): DataFrame = {
      val events = spark.readStream.schema("event_id BIGINT, k INT, ts TIMESTAMP").json(dir)
      names.map(n =>
        SharedState.transact(events, "ts", Seq(("c", n, "k")), "true", Seq((n, "k", "coalesce(c.n, 0) + 1"))))
        .reduce(_.union(_))
    }
    def start(): StreamingQuery =
      outcomes().writeStream.format("noop").option("checkpointLocation", checkpoint).start()

    outcomes() // defining a transactional stream adds the listener
    val txn = listener[TransactionListener]
    val old = start()
    spark.streams.removeListener(txn) // the old run's progress and stop are not delivered (yet)
    old.processAllAvailable()
    val oldRun = old.runId
    old.stop()
    spark.streams.addListener(txn)
    val restarted = start()
    txn.onQueryTerminated(lateStop(restarted, oldRun))
    arrive(second ++ sentinel)
    restarted.processAllAvailable()
    try {
      val expected = (first ++ second).groupBy(_._2).map { case (k, es) => k -> es.size.toLong }
      names.foreach { n =>
        val state = SharedState.get(spark, n)
        waitFor(s"U of $n to pass every event")(state.progress.updateProgress >= 1000L * 1000000)
        val got = state.latest.collect().map(r => r.getInt(0) -> r.getLong(1)).toMap
        assert(got == expected, s"$n: the counts miss the old run's last batch")
      }
    } finally restarted.stop()
  }
}
