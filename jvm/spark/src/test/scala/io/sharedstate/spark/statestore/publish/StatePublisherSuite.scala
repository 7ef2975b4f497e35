package io.sharedstate.spark.statestore.publish

import io.sharedstate.spark.SharedState
import io.sharedstate.spark.statestore.StoreCommitHook

import io.sharedstate.core.{EventTime, SharedStateException}
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Path}
import java.sql.Timestamp
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeqLog
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.functions.{col, window}
import org.apache.spark.sql.types.{LongType, StringType, StructField, StructType, TimestampType}
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

/**
 * The publishing listener called directly, as the shared state store calls it after each durable
 * commit: versions of a windowed count published per partition, the epoch committed only when every
 * partition has published, U at the batch's watermark, evictions keeping their value, versions
 * committed again (a task retry, a restarted run) published once.
 */
class StatePublisherSuite extends AnyFunSuite with BeforeAndAfterAll {
  private lazy val spark = SparkSession.builder().master("local[2]").appName("statestore-publish")
    .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC").getOrCreate()

  override def afterAll(): Unit = spark.stop()

  private val Window = StructType(Seq(StructField("start", TimestampType), StructField("end", TimestampType)))
  private val KeySchema = StructType(Seq(StructField("campaign", StringType), StructField("window", Window)))
  private val ValueSchema = StructType(Seq(StructField("count", LongType)))
  private val keyRow = UnsafeProjection.create(KeySchema)
  private val valueRow = UnsafeProjection.create(ValueSchema)

  private def sec(s: Long): Long = s * 1000000L
  private def key(campaign: String, start: Long, end: Long): UnsafeRow =
    keyRow(InternalRow(UTF8String.fromString(campaign), InternalRow(sec(start), sec(end)))).copy()
  private def value(count: Long): UnsafeRow = valueRow(InternalRow(count)).copy()

  /** An offset log entry as Spark 4.2 writes it (v1, the metadata line, one source offset). */
  private def offsets(checkpoint: Path, batch: Long, watermarkMs: Long): Unit = {
    Files.createDirectories(checkpoint.resolve("offsets"))
    Files.write(
      checkpoint.resolve(s"offsets/$batch"),
      ("v1\n{\"batchWatermarkMs\":" + watermarkMs + ",\"batchTimestampMs\":0,\"conf\":{" +
        "\"spark.sql.shuffle.partitions\":\"2\",\"spark.sql.streaming.stateStore.providerClass\":\"x\"}}\n0")
        .getBytes(StandardCharsets.UTF_8)
    )
  }

  test("the offset log of a real stateful query gives each batch's watermark and state partitions") {
    val session = spark
    import session.implicits._
    implicit val sqlContext: org.apache.spark.sql.SQLContext = session.sqlContext
    val ck = Files.createTempDirectory("publish-offsets")
    val input = MemoryStream[(String, Timestamp)]
    val q = input.toDF().toDF("campaign", "ts").withWatermark("ts", "10 seconds")
      .groupBy(window(col("ts"), "10 seconds"), col("campaign")).count()
      .writeStream.format("noop").outputMode("update").option("checkpointLocation", ck.toString).start()
    try {
      input.addData(("a", new Timestamp(100000L)))
      q.processAllAvailable()
      input.addData(("a", new Timestamp(150000L)))
      q.processAllAvailable()
    } finally q.stop()
    // Spark's own reader of its offset log is the oracle.
    val log = new OffsetSeqLog(spark, ck.resolve("offsets").toString, false)
    val batches = log.getLatestBatchId().get
    assert(batches >= 1)
    for (b <- 0L to batches) {
      val meta = log.offsetSeqMetadataForBatchId(b).get
      val read = OffsetLogBatch.read(ck.resolve("state").toString, b, spark.sparkContext.hadoopConfiguration)
      assert(read == OffsetLogBatch(meta.batchWatermarkMs, meta.conf("spark.sql.shuffle.partitions").toInt))
    }
    assert(OffsetLogBatch.read(ck.resolve("state").toString, batches, spark.sparkContext.hadoopConfiguration)
      .watermarkMs == 140000L)
  }

  test("windowed versions: committed when every partition published, at the window end, U at the watermark") {
    val state = SharedState.create(spark, "pub_totals", key = "campaign STRING", value = "count BIGINT",
      rule = "replace", partitions = 4)
    val ck = Files.createTempDirectory("publish-versions")
    val root = ck.resolve("state").toString
    val hadoop = spark.sparkContext.hadoopConfiguration
    offsets(ck, 0, 0L); offsets(ck, 1, 5000L); offsets(ck, 2, 25000L)
    val query = "11111111-2222-3333-4444-555555555555"
    PublishTargets.started(query, "pub_totals")
    val writer = PublishTargets.writerOf(query)
    def publish(run: String, version: Long, partition: Int, changes: (UnsafeRow, UnsafeRow)*): Unit =
      StatePublisher.publish(query, run, StateStoreId(root, 0, partition), version, changes, KeySchema, ValueSchema,
        hadoop)
    // version 1 (batch 0, watermark 0)
    publish("run1", 1, 0, key("a", 0, 10) -> value(3))
    assert(state.progress.updateProgress == EventTime.MinusInfinity, "one partition of two published: no commit")
    publish("run1", 1, 1, key("b", 0, 10) -> value(1))
    assert(state.progress.updateProgress == 0L)
    // version 2 (batch 1, watermark 5 s): a's first window grows, a second opens; b's window evicted
    publish("run1", 2, 0, key("a", 0, 10) -> value(5), key("a", 10, 20) -> value(2))
    publish("run1", 2, 0, key("a", 0, 10) -> value(5), key("a", 10, 20) -> value(2)) // the task retried
    publish("run1", 2, 1, key("b", 0, 10) -> null)
    assert(state.progress.updateProgress == sec(5))
    assert(state.writers.find(_.writer == writer).get.lastEpoch == 2L)
    // The query restarts and runs batch 1 again: version 2 is committed again, the State ignores it.
    val before = state.progress
    publish("run2", 2, 0, key("a", 0, 10) -> value(5), key("a", 10, 20) -> value(2))
    publish("run2", 2, 1, key("b", 0, 10) -> null)
    assert(state.progress.updateProgress == before.updateProgress)
    assert(state.progress.updatesApplied == before.updatesApplied)
    // version 3 (batch 2, watermark 25 s)
    publish("run2", 3, 0, key("a", 10, 20) -> null)
    publish("run2", 3, 1, key("b", 20, 30) -> value(7))
    assert(state.progress.updateProgress == sec(25))

    def asOf(t: String): Map[String, (Long, Long)] = state.asOf(t).collect().map { r =>
      r.getString(0) -> (r.getLong(1), r.getTimestamp(2).getTime / 1000)
    }.toMap
    assert(asOf("1970-01-01 00:00:09") == Map.empty) // no window had ended
    assert(asOf("1970-01-01 00:00:10") == Map("a" -> (5L, 10L), "b" -> (1L, 10L)))
    // b's window was evicted after the watermark passed it: its value stays valid as of later times
    assert(asOf("1970-01-01 00:00:24") == Map("a" -> (2L, 20L), "b" -> (1L, 10L)))
    assert(state.lateUpdates.count() == 0)
    PublishTargets.stopped(query)
    assert(state.writers.find(_.writer == writer).get.status == "paused")
  }

  test("a State whose columns do not match the operator's fails naming both; a non-replace State is refused") {
    SharedState.create(spark, "pub_wrong", key = "campaign INT", value = "count BIGINT")
    val ck = Files.createTempDirectory("publish-wrong")
    offsets(ck, 0, 0L)
    val query = "99999999-2222-3333-4444-555555555555"
    PublishTargets.started(query, "pub_wrong")
    val e = intercept[SharedStateException](StatePublisher.publish(query, "r",
        StateStoreId(
          ck.resolve("state").toString, 0, 0), 1, Seq(key("a", 0, 10) -> value(1)), KeySchema, ValueSchema,
        spark.sparkContext.hadoopConfiguration))
    assert(e.getMessage.contains("pub_wrong") && e.getMessage.contains("campaign STRING") &&
        e.getMessage.contains("campaign INT"), e.getMessage)
    PublishTargets.stopped(query)

    SharedState.create(spark, "pub_sum", key = "campaign STRING", value = "count BIGINT", rule = "sum")
    val off = intercept[SharedStateException](PublishCheck.validate(spark, "q", "pub_sum"))
    assert(off.getMessage.contains("spark.sharedstate.statestore.publish=true"), off.getMessage)
    StoreCommitHook.register(StatePublisher)
    try {
      val r = intercept[SharedStateException](PublishCheck.validate(spark, "q", "pub_sum"))
      assert(r.getMessage.contains("spark.sharedstate.statestore.publish.q=pub_sum") &&
          r.getMessage.contains("'replace'"), r.getMessage)
    } finally StoreCommitHook.unregister(StatePublisher)
  }

  test("a query whose writer could not be registered when it started fails its tasks, naming why") {
    val query = "77777777-2222-3333-4444-555555555555"
    intercept[Exception](PublishTargets.started(query, "pub_no_such_state"))
    val ck = Files.createTempDirectory("publish-failed")
    offsets(ck, 0, 0L)
    val e = intercept[SharedStateException](StatePublisher.publish(query, "r",
        StateStoreId(
          ck.resolve("state").toString, 0, 0), 1, Seq(key("a", 0, 10) -> value(1)), KeySchema, ValueSchema,
        spark.sparkContext.hadoopConfiguration))
    assert(e.getMessage.contains("pub_no_such_state") && e.getMessage.contains(query), e.getMessage)
    PublishTargets.stopped(query)
  }

  test("null key columns are rejected updates, evictions publish nothing, the time is the window end") {
    val shape = new PublishedShape(KeySchema, ValueSchema)
    assert(shape.windowOrdinal.contains(1) && shape.stateKey.fieldNames.toSeq == Seq("campaign"))
    val nullKey = keyRow(InternalRow(null, InternalRow(sec(0), sec(10)))).copy()
    val batch = StatePublisher.toUpdates(shape, "w", 1,
      Seq(nullKey -> value(1), key("a", 10, 20) -> value(2),
        key("b", 0, 10) -> null), watermarkMicros = 77L)
    assert(batch.size == 1 && batch.timeAt(0) == sec(20) && batch.rejectedCount == 1)
    val plain = new PublishedShape(StructType(Seq(StructField("campaign", StringType))), ValueSchema)
    val unwindowed = StatePublisher.toUpdates(plain, "w", 1,
      Seq(UnsafeProjection.create(plain.stateKey)(InternalRow(UTF8String.fromString("a"))).copy() -> value(2)), 77L)
    assert(unwindowed.size == 1 && unwindowed.timeAt(0) == 77L)
  }
}
