package io.sharedstate.spark.txn

import io.sharedstate.spark.SharedState

import io.sharedstate.core.SharedStateException
import java.nio.file.Files
import java.sql.Timestamp
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/** A logic that writes a key its query did not declare (the segment after the report's). */
class NextSegmentLogic extends RowTransactionLogic {
  override def decide(txn: RowTransaction): Unit =
    txn.write(txn.stateOf("s"), txn.event.getAs[Int]("segment") + 1, Row(1L, 1L))
}

/** Not a transaction logic. */
class NotALogic

/**
 * The class form on local Spark: Toll Processing as a user class ([[TollProcessingExample]]) over
 * out-of-order position reports gives the sequential oracle's outcomes (the values each report
 * read) and final States; a write outside the declared set aborts naming it; a missing class, a
 * class of the wrong interface and a condition beside a class fail when the query is defined.
 */
class ClassTransactionSuite extends AnyFunSuite with BeforeAndAfterAll {
  private lazy val spark = SparkSession.builder().master("local[3]").appName("class-transactions")
    .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC").getOrCreate()

  override def afterAll(): Unit = spark.stop()

  private type Report = (Long, Int, Option[Int], Long, Timestamp)
  private val reads = Seq(("s", "speeds", "segment"), ("c", "counts", "segment"))
  private val writes = Seq(("speeds", "segment"), ("counts", "segment"))

  private def states(prefix: String): (String, String) = {
    SharedState.create(spark, s"${prefix}_speeds", key = "segment INT", value = "total BIGINT, reports BIGINT")
    SharedState.create(spark, s"${prefix}_counts", key = "segment INT", value = "vehicles ARRAY<INT>")
    (s"${prefix}_speeds", s"${prefix}_counts")
  }

  private def renamed(prefix: String, accesses: Seq[(String, String)]) = accesses.map { case (s, k) =>
    (s"${prefix}_$s", k)
  }

  private def awaitRows(table: String, n: Long): Unit = {
    val deadline = System.nanoTime() + 120L * 1000 * 1000 * 1000
    while (spark.table(table).count() < n && System.nanoTime() < deadline) Thread.sleep(200)
  }

  test("Toll Processing as a user class equals the sequential oracle on out-of-order reports") {
    val session = spark
    import session.implicits._
    implicit val sqlContext: org.apache.spark.sql.SQLContext = session.sqlContext
    val dir = Files.createTempDirectory("class-txn").toString
    val (speeds, counts) = states("tp")
    val r = new Random(24)
    // Distinct times (ms) so the oracle needs no tie rule; arrival shuffled within 4 batches.
    val times = r.shuffle((1 to 4000).toVector).take(240).sorted
    val reports: Seq[Report] = times.zipWithIndex.map { case (t, i) =>
      (i.toLong, r.nextInt(12), Some(r.nextInt(6)), r.nextInt(100).toLong, new Timestamp(t.toLong))
    }
    val events = MemoryStream[Report]
    val logicClass = "io.sharedstate.spark.txn.TollProcessingExample"
    val outcomes = SharedState.transactClass(
      events.toDF().toDF("event_id", "vehicle", "segment", "speed", "ts"),
      "ts",
      logicClass,
      reads.map { case (n, s, k) => (n, s"tp_$s", k) },
      renamed("tp", writes),
      outcomes = true,
      lateness = "5 seconds"
    )
    val query = outcomes.writeStream.format("memory").queryName("class_tp_out")
      .option("checkpointLocation", s"$dir/ck").trigger(Trigger.ProcessingTime("200 milliseconds")).start()
    r.shuffle(reports).grouped(60).foreach(b => events.addData(b))
    events.addData((-1L, 0, None, 0L, new Timestamp(3600L * 1000))) // sentinel: U passes every report
    awaitRows("class_tp_out", reports.size)
    query.stop()

    // The oracle: reports one by one in time order.
    val speedOf = scala.collection.mutable.Map.empty[Int, (Long, Long)]
    val seenOf = scala.collection.mutable.Map.empty[Int, Seq[Int]]
    val expected = reports.sortBy(_._5.getTime).map { case (id, vehicle, at, speed, _) =>
      val segment = at.get
      val s = speedOf.get(segment)
      val c = seenOf.get(segment)
      val (total, n) = s.getOrElse((0L, 0L))
      speedOf(segment) = (total + speed, n + 1)
      val seen = c.getOrElse(Seq.empty)
      seenOf(segment) = if (seen.contains(vehicle)) seen else seen :+ vehicle
      id -> (s, c)
    }.toMap

    val got = spark.table("class_tp_out").collect()
    assert(got.map(_.getAs[Long]("event_id")).sorted.toSeq == reports.map(_._1).sorted, "one outcome per report")
    got.foreach { row =>
      val id = row.getAs[Long]("event_id")
      assert(row.getAs[Boolean]("committed"), s"report $id: ${row.getAs[String]("reason")}")
      val s = Option(row.getAs[Row]("s")).map(v => (v.getLong(0), v.getLong(1)))
      val c = Option(row.getAs[Row]("c")).map(_.getSeq[Int](0))
      assert((s, c) == expected(id), s"report $id read other values")
    }
    val finalSpeeds = SharedState.get(spark, speeds).latest.collect()
      .map(v => v.getAs[Int]("segment") -> (v.getAs[Long]("total"), v.getAs[Long]("reports"))).toMap
    assert(finalSpeeds == speedOf.toMap)
    val finalCounts = SharedState.get(spark, counts).latest.collect()
      .map(v => v.getAs[Int]("segment") -> v.getSeq[Int](v.fieldIndex("vehicles"))).toMap
    assert(finalCounts == seenOf.toMap)
  }

  test("a write outside the declared write set aborts the transaction, naming the key") {
    val session = spark
    import session.implicits._
    implicit val sqlContext: org.apache.spark.sql.SQLContext = session.sqlContext
    val dir = Files.createTempDirectory("class-txn-bad").toString
    states("bad")
    val events = MemoryStream[Report]
    val outcomes = SharedState.transact(
      events.toDF().toDF("event_id", "vehicle", "segment", "speed", "ts"),
      "ts",
      classOf[NextSegmentLogic],
      Seq(("s", "bad_speeds", "segment")),
      Seq(("bad_speeds", "segment")),
      outcomes = true,
      lateness = null
    )
    val query = outcomes.writeStream.format("memory").queryName("class_bad_out")
      .option("checkpointLocation", s"$dir/ck").trigger(Trigger.ProcessingTime("200 milliseconds")).start()
    events.addData((1L, 1, Some(3), 10L, new Timestamp(1000)), (-1L, 0, None, 0L, new Timestamp(60000)))
    awaitRows("class_bad_out", 1)
    query.stop()
    val row = spark.table("class_bad_out").collect().find(_.getAs[Long]("event_id") == 1L).get
    assert(!row.getAs[Boolean]("committed"))
    val reason = row.getAs[String]("reason")
    assert(reason.startsWith("undeclared_write: State 'bad_speeds' key 4 is not in the declared write set"), reason)
    assert(SharedState.get(spark, "bad_speeds").latest.count() == 0, "an aborted transaction writes nothing")
  }

  test("a missing class, a class of the wrong interface and a condition beside a class fail at definition") {
    val session = spark
    import session.implicits._
    implicit val sqlContext: org.apache.spark.sql.SQLContext = session.sqlContext
    states("def")
    val events = MemoryStream[Report].toDF().toDF("event_id", "vehicle", "segment", "speed", "ts")
    def define(logic: String) = SharedState.transactClass(events, "ts", logic, Seq(("s", "def_speeds", "segment")),
      Seq(("def_speeds", "segment")), outcomes = true, lateness = null)
    val missing = intercept[SharedStateException](define("com.example.NoSuchLogic")).getMessage
    assert(missing.contains("'com.example.NoSuchLogic' is not on the classpath"), missing)
    val wrong = intercept[SharedStateException](define(classOf[NotALogic].getName)).getMessage
    assert(wrong.contains("does not implement io.sharedstate.spark.txn.RowTransactionLogic"), wrong)
    val both = intercept[SharedStateException](TransactionProgram.compile(
        events.schema,
        Seq(TransactionAccess("s", "def_speeds", "segment", null)),
        "true",
        Seq(TransactionAccess(null, "def_speeds", "segment", null)),
        _ =>
          io.sharedstate.spark.rows.StateSchemas.of(io.sharedstate.spark.cluster.Coordinator.get.state("def_speeds")
              .spec),
        classOf[TollProcessingExample].getName
      )).getMessage
    assert(both.contains("a condition ('true') and a logic class"), both)
  }
}
