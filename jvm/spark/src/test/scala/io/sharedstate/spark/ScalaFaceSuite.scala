package io.sharedstate.spark

import io.sharedstate.spark.fetch.FetchJoinTask

import java.nio.file.Files
import java.sql.Timestamp
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

/** The Scala face end to end on local Spark: a streaming update query and a fetch join. */
class ScalaFaceSuite extends AnyFunSuite with BeforeAndAfterAll {
  private lazy val spark = SparkSession.builder().master("local[3]").appName("scala-face")
    .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC").getOrCreate()

  override def afterAll(): Unit = spark.stop()

  private def ts(seconds: Long) = new Timestamp(seconds * 1000)

  test("updates through the sink, fetch join and as-of read, with the answers of an as-of join") {
    val session = spark
    import session.implicits._
    implicit val sqlContext: org.apache.spark.sql.SQLContext = session.sqlContext
    val dir = Files.createTempDirectory("scala-face").toString
    val campaigns = SharedState.create(spark, "scala_campaigns", key = "ad_id STRING", value = "campaign STRING")
    val updates = MemoryStream[(String, Timestamp, String)]
    val writer = updates.toDF().toDF("ad_id", "ts", "campaign").writeStream.format("sharedstate")
      .option("state", campaigns.name).option("key", "ad_id").option("time", "ts").option("lateness", "1 second")
      .option("checkpointLocation", s"$dir/ck-u").start()
    val views = MemoryStream[(Long, String, Timestamp)]
    val reader = campaigns.fetchJoin(views.toDF().toDF("id", "ad_id", "ts"), Seq("ad_id"), "ts")
      .writeStream.format("memory").queryName("scala_out").option("checkpointLocation", s"$dir/ck-v")
      .trigger(Trigger.ProcessingTime("200 milliseconds")).start()

    views.addData((1L, "a", ts(12)), (2L, "b", ts(15)), (3L, "a", ts(31)), (4L, "zz", ts(20)))
    updates.addData(("a", ts(10), "c1"), ("b", ts(14), "c2"), ("a", ts(30), "c3"))
    writer.processAllAvailable()
    updates.addData(("x", ts(60), "later")) // moves U to 59s: every view above is now final
    writer.processAllAvailable()
    val deadline = System.nanoTime() + 60L * 1000 * 1000 * 1000
    while (spark.table("scala_out").count() < 4 && System.nanoTime() < deadline) Thread.sleep(200)
    writer.stop(); reader.stop()

    val got = spark.table("scala_out").as[(Long, String, Timestamp, String, Timestamp)].collect().sortBy(_._1)
    assert(got.map(r => (r._1, Option(r._4), Option(r._5))).toSeq == Seq(
      (1L, Some("c1"), Some(ts(10))), (2L, Some("c2"), Some(ts(14))), (3L, Some("c3"), Some(ts(30))), (4L, None, None)))
    assert(campaigns.progress.updateProgress == 59L * 1000000)
    val asOf = campaigns.asOf("1970-01-01 00:00:20").as[(String, String, Timestamp)].collect().sortBy(_._1)
    assert(asOf.toSeq == Seq(("a", "c1", ts(10)), ("b", "c2", ts(14))))
    assert(campaigns.lateUpdates.count() == 0)
    assert(SharedState.get(spark, "scala_campaigns").name == "scala_campaigns")
  }

  test("a batch fetch join of several chunks of events over mixed BIGINT keys gives the as-of join's answers") {
    val session = spark
    import session.implicits._
    val state = SharedState.create(spark, "scala_chunks", key = "k BIGINT", value = "v INT")
    val random = new scala.util.Random(7)
    val updates = Seq.tabulate(300)(i => (random.nextInt(20).toLong, random.nextInt(1000).toLong, i))
    updates.toDF("k", "s", "v").selectExpr("k", "timestamp_seconds(s) AS ts", "v")
      .write.format("sharedstate").option("state", state.name).option("key", "k").option("time", "ts").mode("append")
      .save()
    val events =
      Seq.tabulate(3 * FetchJoinTask.Chunk)(i => (i.toLong, random.nextInt(25).toLong, random.nextInt(1100).toLong))
    val got =
      state.fetchJoin(events.toDF("id", "k", "s").selectExpr("id", "k", "timestamp_seconds(s) AS ts").repartition(2),
        Seq("k"), "ts").as[(Long, Long, Timestamp, Option[Int], Option[Timestamp])].collect().map(r =>
        r._1 -> (r._4, r._5)).toMap
    // The oracle: per event, the update of its key with the latest time at or before the event's (ties: the last written).
    val expected = events.map { case (id, k, s) =>
      val before = updates.zipWithIndex.filter { case ((uk, us, _), _) => uk == k && us <= s }
      id -> before.maxByOption { case ((_, us, _), i) => (us, i) }.map { case ((_, us, v), _) =>
        (Some(v), Some(ts(us)))
      }
        .getOrElse((None, None))
    }.toMap
    assert(got === expected)
  }

  test("the handle describes the State; open and get find it; Python's entry adapts the same handle") {
    val h = SharedState.create(spark, "scala_face_handle", key = "k STRING", value = "v BIGINT", rule = "SUM",
      partitions = 3)
    assert(h.spec.updateRule == "sum" && h.spec.partitions == 3 && h.timeColumn == "scala_face_handle_time")
    assert(h.hosts.isEmpty && h.root.isEmpty && h.readOnly.isEmpty && h.moves.isEmpty)
    assert(SharedState.open(spark, h.name).spec == h.spec && SharedState.get(spark, h.name).spec == h.spec)
    val notDurable = intercept[io.sharedstate.core.SharedStateException](SharedState.open(spark, h.name, Some(true)))
    assert(notDurable.getMessage.contains("read_only applies to durable States"))
    val described = new com.fasterxml.jackson.databind.ObjectMapper().readTree(SharedStateApi.describe(h))
    assert(described.get("rule").asText == "sum" && described.get("partitions").asInt == 3)
    assert(described.get("root").isNull && described.get("hosts").size == 0)
    assert(SharedStateApi.names().contains(h.name))
    assert(h.drop() && !SharedState.names.contains(h.name))
    assert(intercept[io.sharedstate.core.SharedStateException](SharedState.get(spark, h.name)).getMessage
        .contains("Unknown State 'scala_face_handle'"))
  }
}
