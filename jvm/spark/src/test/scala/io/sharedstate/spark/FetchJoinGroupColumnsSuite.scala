package io.sharedstate.spark

import io.sharedstate.core.fetch.ReadMode
import java.sql.Timestamp
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.types.{LongType, StringType, StructField, StructType, TimestampType}
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/**
 * The column expressions that group a fetch join's events must put each event in the ring slot that
 * the progress stream's ticks visit for its reply time ([[FetchJoinGroups.ring]], exact integer
 * arithmetic), also before 1970, on slot boundaries and with a staleness.
 */
class FetchJoinGroupColumnsSuite extends AnyFunSuite with BeforeAndAfterAll {
  private lazy val spark = SparkSession.builder().master("local[1]").appName("fetch-join-groups")
    .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC").getOrCreate()

  override def afterAll(): Unit = spark.stop()

  private val schema = StructType(Seq(StructField("k", StringType), StructField("n", LongType), StructField("ts", TimestampType)))

  private def times(rnd: Random): Seq[Long] = {
    val slot = FetchJoinGroups.SlotMicros
    val edges = Seq(0L, -1L, 1L, slot, slot - 1, -slot, -slot - 1, -slot + 1, 1700000000000000L / slot * slot)
    val near = (0 until 300).map(_ => (rnd.nextLong() % 5000000L) * slot + (rnd.nextInt(3) - 1))
    val wide = (0 until 300).map(_ => rnd.nextLong() % 250000000000000000L)
    edges ++ near ++ wide
  }

  for ((mode, label) <- Seq(ReadMode.Committed -> "committed", ReadMode.Uncommitted(250001L) -> "uncommitted 250001 us",
      ReadMode.Uncommitted(0L) -> "uncommitted 0")) {
    test(s"ring slot of the reply time, $label, and buckets in range") {
      val ts = times(new Random(11))
      val rows = ts.zipWithIndex.map { case (t, i) => Row(s"key$i", i.toLong, DateTimeUtils.toJavaTimestamp(t)) } :+
        Row("nulltime", -1L, null)
      val df = spark.createDataFrame(spark.sparkContext.parallelize(rows, 3), schema)
      val (bucket, ring) = FetchJoinGroups.groupOf(schema, Seq(0), 2, mode, 32)
      val got = df.select(df("n"), df("ts"), bucket.as("b"), ring.as("r"),
        FetchJoinGroups.groupColumn(bucket, ring, 32).as("g")).collect()
      assert(got.length == rows.length)
      got.foreach { r =>
        val b = r.getInt(2)
        assert(b >= 0 && b < 32)
        assert(r.getInt(4) == FetchJoinGroups.group(b, r.getInt(3), 32), "the group column is the group of (bucket, ring)")
        if (r.isNullAt(1)) assert(r.getInt(3) == FetchJoinGroups.NoTime)
        else {
          val t = DateTimeUtils.fromJavaTimestamp(r.getAs[Timestamp](1))
          assert(r.getInt(3) == FetchJoinGroups.ring(mode.replyTime(t)), s"time $t")
        }
      }
      // the same key always lands in the same bucket
      val again = df.select(bucket.as("b")).collect().map(_.getInt(0))
      assert(again.toSeq == got.map(_.getInt(2)).toSeq)
    }
  }
}
