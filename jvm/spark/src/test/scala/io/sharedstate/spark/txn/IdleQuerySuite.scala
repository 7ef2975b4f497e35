package io.sharedstate.spark.txn

import io.sharedstate.spark.SharedState
import java.nio.file.Files
import java.sql.Timestamp
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

/**
 * A query that found no new data runs no batch, yet Spark records a progress for that trigger with the
 * id of the batch that will run next. The batch that ends the idleness must still be committed on the
 * group (it once was taken as committed by that progress, and U stopped for good).
 */
class IdleQuerySuite extends AnyFunSuite with BeforeAndAfterAll {
  private lazy val spark: SparkSession = SparkSession.builder().master("local[2]").appName("idle-query")
    .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.sql.streaming.noDataProgressEventInterval", "200ms") // Spark's default: 10 s
    .getOrCreate()

  override def afterAll(): Unit = spark.stop()

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
      def idleProgress = query.recentProgress.count(p => p.numInputRows == 0 && !p.durationMs.containsKey("addBatch"))
      val idleBefore = idleProgress
      val deadline = System.nanoTime() + 30L * 1000000000L
      while (idleProgress == idleBefore && System.nanoTime() < deadline) Thread.sleep(100)
      assert(idleProgress > idleBefore, "Spark recorded no progress for an idle trigger: the test checks nothing")
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
}
