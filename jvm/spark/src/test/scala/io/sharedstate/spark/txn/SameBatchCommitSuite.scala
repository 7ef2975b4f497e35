package io.sharedstate.spark.txn

import io.sharedstate.spark.SharedState

import java.nio.file.Files
import java.sql.Timestamp
import java.util.concurrent.ConcurrentLinkedQueue
import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import scala.util.Random

/**
 * [[SameBatchCommit]]: a transaction's outcome comes out in the micro-batch that read its event when
 * the writer's own progress makes it final, each outcome exactly once, and a batch evaluated twice
 * (a foreachBatch reading it twice) gives the same rows both times. Counters per key, checked
 * against the sequential oracle (the count of earlier events of the key).
 */
class SameBatchCommitSuite extends AnyFunSuite with BeforeAndAfterAll {
  private lazy val spark = SparkSession.builder().master("local[2]").appName("same-batch-commit")
    .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC").getOrCreate()

  override def afterAll(): Unit = spark.stop()

  private type Event = (Long, Int, Timestamp)

  // A counter per key: each event reads its key's count and adds one.
  private def counting(name: String, events: MemoryStream[Event]): DataFrame = {
    SharedState.create(spark, name, key = "k INT", value = "n BIGINT")
    SharedState.transact(events.toDF().toDF("event_id", "k", "ts"), "ts", Seq(("c", name, "k")), "true",
      Seq((name, "k", "coalesce(c.n, 0) + 1")), lateness = "5 seconds")
  }

  private def seconds(s: Int): Timestamp = new Timestamp(s * 1000L)

  test("outcomes the batch's own progress makes final come out in that batch, each once, as the oracle reads") {
    val session = spark
    import session.implicits._
    implicit val sqlContext: org.apache.spark.sql.SQLContext = session.sqlContext
    val events = MemoryStream[Event]
    val rows = new ConcurrentLinkedQueue[(Long, Long, Option[Long])]() // (batch, event id, count read)
    val query = counting("sbc_counts", events).writeStream.foreachBatch { (batch: DataFrame, id: Long) =>
      batch.collect().foreach(r =>
        rows.add((id, r.getAs[Long]("event_id"), Option(r.getAs[Row]("c")).map(_.getLong(0)))))
    }.option("checkpointLocation", Files.createTempDirectory("sbc").toString).start()
    try {
      val r = new Random(7)
      // Five arrivals of 40 events, out of order within each; times 1..200 s, a sentinel at 10,000 s.
      val all = r.shuffle((1 to 200).toVector).zipWithIndex.map { case (t, i) => (i.toLong, r.nextInt(6), seconds(t)) }
      val arrivals = all.sortBy(_._3.getTime).grouped(40).map(r.shuffle(_)).toVector :+ Vector((-1L, 0, seconds(10000)))
      arrivals.foreach { arrival =>
        events.addData(arrival)
        query.processAllAvailable()
        // The batch that read this arrival emitted every outcome below its watermark (max time - 5 s).
        val batch = query.recentProgress.filter(_.numInputRows > 0).map(_.batchId).max
        val watermark = arrival.map(_._3.getTime).max - 5000
        val due = all.filter(_._3.getTime < watermark).map(_._1).toSet
        val out = rows.asScala.filter(_._1 <= batch).map(_._2).toSet
        assert(due.subsetOf(out), s"batch $batch: outcomes of ${(due -- out).toSeq.sorted} are due but not out")
      }
      val got = rows.asScala.toVector
      assert(got.map(_._2).sorted == all.map(_._1).sorted, "one outcome per event")
      val expected = all.sortBy(_._3.getTime).foldLeft((Map.empty[Int, Long], Map.empty[Long, Option[Long]])) {
        case ((counts, reads), (id, k, _)) =>
          (counts.updated(k, counts.getOrElse(k, 0L) + 1), reads + (id -> counts.get(k)))
      }._2
      got.foreach { case (_, id, read) => assert(read == expected(id), s"event $id read $read") }
    } finally query.stop()
  }

  test("a batch evaluated twice gives the same outcomes both times, and each outcome once over the query") {
    val session = spark
    import session.implicits._
    implicit val sqlContext: org.apache.spark.sql.SQLContext = session.sqlContext
    val events = MemoryStream[Event]
    val differing = new ConcurrentLinkedQueue[Long]()
    val kept = new ConcurrentLinkedQueue[Long]()
    val query = counting("sbc_twice", events).writeStream.foreachBatch { (batch: DataFrame, id: Long) =>
      val first = batch.select("event_id").collect().map(_.getLong(0)).sorted.toSeq
      val second = batch.select("event_id").collect().map(_.getLong(0)).sorted.toSeq
      if (first != second) differing.add(id)
      kept.addAll(first.asJava)
      ()
    }.option("checkpointLocation", Files.createTempDirectory("sbc-twice").toString).start()
    try {
      (0 until 4).foreach { a =>
        events.addData((0 until 25).map(i => ((a * 25 + i).toLong, i % 3, seconds(a * 25 + i + 1))))
        query.processAllAvailable()
      }
      events.addData((-1L, 0, seconds(10000)))
      query.processAllAvailable()
      assert(differing.isEmpty, s"batches ${differing.asScala.mkString(", ")} gave other rows when read again")
      assert(kept.asScala.toSeq.sorted == (0L until 100L), "one outcome per event")
    } finally query.stop()
  }
}
