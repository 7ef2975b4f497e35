package io.sharedstate.spark

import java.nio.file.Files
import java.sql.Timestamp
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.streaming.StreamingQuery
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

/**
 * A query that found no new data runs no batch, yet Spark records a progress for that trigger with the
 * id of the batch that will run next. The batch that ends the idleness must still count: committed on
 * the group (it once was taken as committed by that progress, and U stopped for good), and reported
 * as a fetch join's F (its report was skipped).
 */
class IdleQuerySuite extends AnyFunSuite with BeforeAndAfterAll {
  private lazy val spark: SparkSession = SparkSession.builder().master("local[2]").appName("idle-query")
    .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.sql.streaming.noDataProgressEventInterval", "200ms") // Spark's default: 10 s
    .getOrCreate()

  override def afterAll(): Unit = spark.stop()

  private def waitUntil(what: String, now: => Any)(done: => Boolean): Unit = {
    val deadline = System.nanoTime() + 60L * 1000000000L
    while (!done && System.nanoTime() < deadline) Thread.sleep(100)
    assert(done, s"timed out waiting for $what; now $now")
  }

  // Waits until Spark recorded a progress for an idle trigger of `query` since `before` of them.
  private def idleTrigger(query: StreamingQuery): Unit = {
    def idle = query.recentProgress.count(p => p.numInputRows == 0 && !p.durationMs.containsKey("addBatch"))
    val before = idle
    val deadline = System.nanoTime() + 30L * 1000000000L
    while (idle == before && System.nanoTime() < deadline) Thread.sleep(100)
    assert(idle > before, "Spark recorded no progress for an idle trigger: the test checks nothing")
  }

  test("a transactional query idle past the no-data progress interval commits the batch that ends it") {
    val session = spark
    import session.implicits._
    implicit val sqlContext: org.apache.spark.sql.SQLContext = session.sqlContext
    val name = "idle_counts"
    SharedState.create(spark, name, key = "k INT", value = "n BIGINT")
    val events = MemoryStream[(Long, Int, Timestamp)]
    val query = SharedState.transact(events.toDF().toDF("event_id", "k", "ts"), "ts", Seq(("c", name, "k")), "true",
      Seq((name, "k", "coalesce(c.n, 0) + 1"))).writeStream.format("noop")
      .option("checkpointLocation", Files.createTempDirectory("idle-query").toString).start()
    def at(ids: Range): Seq[(Long, Int, Timestamp)] = ids.map(i => (i.toLong, i % 3, new Timestamp(i * 1000L)))
    try {
      events.addData(at(0 until 10))
      query.processAllAvailable()
      idleTrigger(query)
      events.addData(at(10 until 20) :+ ((99L, 99, new Timestamp(1000000L)))) // the last moves U past the others
      query.processAllAvailable()
      val state = SharedState.get(spark, name)
      val until = System.nanoTime() + 60L * 1000000000L
      while (state.progress.updateProgress < 1000L * 1000000 && System.nanoTime() < until) Thread.sleep(100)
      assert(state.progress.updateProgress == 1000L * 1000000,
        "U stopped: the batch after the idle trigger was not committed")
      val got = state.latest.collect().map(r => r.getInt(0) -> r.getLong(1)).toMap
      assert(got == (0 until 20).groupBy(_ % 3).map { case (k, ids) => k -> ids.size.toLong })
    } finally query.stop()
  }

  test("a fetch join idle past the no-data progress interval reports F from the batch that ends it") {
    val session = spark
    import session.implicits._
    implicit val sqlContext: org.apache.spark.sql.SQLContext = session.sqlContext
    val dir = Files.createTempDirectory("idle-fetch").toString
    val state = SharedState.create(spark, "idle_campaigns", key = "ad_id STRING", value = "campaign STRING")
    val updates = MemoryStream[(String, Timestamp, String)]
    val writer = updates.toDF().toDF("ad_id", "ts", "campaign").writeStream.format("sharedstate")
      .option("state", state.name).option("key", "ad_id").option("time", "ts")
      .option("checkpointLocation", s"$dir/ck-u").start()
    val views = MemoryStream[(Long, String, Timestamp)]
    val reader = state.fetchJoin(views.toDF().toDF("id", "ad_id", "ts"), Seq("ad_id"), "ts", lateness = "1 second")
      .writeStream.format("noop").option("checkpointLocation", s"$dir/ck-v").start()
    def seconds(s: Long) = new Timestamp(s * 1000L)
    try {
      updates.addData(("a", seconds(1), "c1"), ("a", seconds(100), "c2")) // U at 100 s: every view below is final
      writer.processAllAvailable()
      views.addData((1L, "a", seconds(10)))
      reader.processAllAvailable()
      def f = state.readers.values.min
      idleTrigger(reader)
      views.addData((2L, "a", seconds(50)))
      reader.processAllAvailable()
      waitUntil("F from the batch after the idle trigger (50 s - 1 s lateness)", s"F = ${f / 1000000} s")(
        f == 49L * 1000000)
    } finally { reader.stop(); writer.stop() }
  }
}
