package io.sharedstate.spark.rules

import io.sharedstate.spark.SharedState
import org.apache.spark.sql.SparkSession
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

/**
 * `min`/`max` States written through the sink agree with Spark SQL's `min(x)`/`max(x)` on the same
 * input with NaN, infinities and zeros of both signs (NaN above every value; -0.0 and 0.0 compare
 * equal here, as Spark SQL counts them equal).
 */
class SparkNaNOrderingSuite extends AnyFunSuite with BeforeAndAfterAll {
  private lazy val spark = SparkSession.builder().master("local[2]").appName("nan-ordering")
    .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC").getOrCreate()

  override def afterAll(): Unit = spark.stop()

  test("a min and a max State updated through the sink match SELECT min(x), max(x) with NaNs") {
    val session = spark
    import session.implicits._
    val r = new scala.util.Random(17)
    val specials = Seq(Double.NaN, Double.PositiveInfinity, Double.NegativeInfinity, 0.0, -0.0)
    val rows = Seq.tabulate(2000) { i =>
      val x = if (r.nextInt(4) == 0) specials(r.nextInt(specials.size)) else r.nextGaussian() * 100
      (s"k${r.nextInt(40)}", i.toLong, x, x.toFloat)
    } ++ Seq(("allnan", 5000L, Double.NaN, Float.NaN), ("allnan", 5001L, Double.NaN, Float.NaN))
    val input = r.shuffle(rows).toDF("k", "s", "x", "f").selectExpr("k", "timestamp_seconds(s) AS ts", "x", "f")
    input.createOrReplaceTempView("nan_input")
    val want = spark.sql("SELECT k, min(x), max(x), min(f), max(f) FROM nan_input GROUP BY k").as[
      (String, Double, Double, Float, Float)].collect().map(w => w._1 -> w).toMap

    val states = Seq("min", "max").map { rule =>
      val s = SharedState.create(spark, s"nan_$rule", key = "k STRING", value = "x DOUBLE, f FLOAT", rule = rule,
        partitions = 3)
      input.repartition(4).write.format("sharedstate").option("state", s.name).option("key", "k").option("time", "ts")
        .mode("append").save()
      rule -> s.asOf("2100-01-01 00:00:00").as[(String, Double, Float, java.sql.Timestamp)].collect()
        .map(g => g._1 -> (g._2, g._3)).toMap
    }.toMap
    def same(a: Double, b: Double): Boolean = java.lang.Double.compare(a, b) == 0 || a == b
    assert(want.size == 41 && states.values.forall(_.size == 41))
    for ((k, (_, minX, maxX, minF, maxF)) <- want) {
      val (gotMinX, gotMinF) = states("min")(k)
      val (gotMaxX, gotMaxF) = states("max")(k)
      assert(same(gotMinX, minX) && same(gotMinF, minF), s"min of $k: got ($gotMinX, $gotMinF), want ($minX, $minF)")
      assert(same(gotMaxX, maxX) && same(gotMaxF, maxF), s"max of $k: got ($gotMaxX, $gotMaxF), want ($maxX, $maxF)")
    }
    assert(states("min")("allnan")._1.isNaN && want.values.count(_._3.isNaN) > 20, "NaN is common in max")
    assert(want.values.count(w => !w._2.isNaN) == 40, "and never the min of a key with a number")
  }
}
