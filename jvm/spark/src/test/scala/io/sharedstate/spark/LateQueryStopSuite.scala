package io.sharedstate.spark

import io.sharedstate.core.WriterStatus
import io.sharedstate.spark.fetch.FetchProgressListener
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
 * restart keeps its part: a writer still holds U, a fetch join's reader is still registered.
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
}
