package io.sharedstate.spark.rows

import java.util.Arrays
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.encoders.ExpressionEncoder
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/**
 * The sink encodes keys from InternalRows with a projection; the fetch join encodes them from Rows
 * with an encoder. A fetch finds an update only if both give the same bytes for the same key.
 */
class KeyEncodingSuite extends AnyFunSuite {
  private val input = StructType(Seq(
    StructField("name", StringType), StructField("ts", TimestampType), StructField("n", LongType),
    StructField("d", DoubleType), StructField("v", StringType)))
  private val keyOrdinals = Array(0, 2, 3)
  private val keySchema = StructType(keyOrdinals.map(input(_)))

  test("sink and fetch-join key bytes are identical for random keys") {
    val binder = new RowBinder(input, keyOrdinals, Array(4))
    val toInternal = ExpressionEncoder(input).createSerializer()
    val keySerializer = ExpressionEncoder(keySchema).createSerializer()
    val rnd = new Random(17)
    for (_ <- 0 until 2000) {
      val name = rnd.nextString(rnd.nextInt(40))
      val row = Row(name, new java.sql.Timestamp(rnd.nextLong() >>> 24), rnd.nextLong(), rnd.nextGaussian(), "x")
      val fromSink = binder.keyBytes(toInternal(row))
      val fromJoin = keySerializer(Row(row.get(0), row.get(2), row.get(3))).asInstanceOf[UnsafeRow].copy().getBytes
      assert(Arrays.equals(fromSink, fromJoin), s"key $name")
    }
  }

  test("bytes handed out are copies, not the projection's reused buffer") {
    val binder = new RowBinder(input, keyOrdinals, Array(4))
    val toInternal = ExpressionEncoder(input).createSerializer()
    val a = binder.keyBytes(toInternal(Row("a", null, 1L, 1.0, "x")).copy())
    val aCopy = a.clone()
    binder.keyBytes(toInternal(Row("b", null, 2L, 2.0, "y")).copy())
    assert(Arrays.equals(a, aCopy))
  }
}
