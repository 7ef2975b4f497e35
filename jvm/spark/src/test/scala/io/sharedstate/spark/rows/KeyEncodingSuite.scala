package io.sharedstate.spark.rows

import io.sharedstate.spark.write.RowBinder
import java.util.Arrays
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.encoders.ExpressionEncoder
import org.apache.spark.sql.catalyst.expressions.{BoundReference, CreateNamedStruct, Literal}
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/**
 * A fetch finds an update only if the sink and the reader encode the key to the same bytes. Every
 * path that encodes a key (the sink's RowBinder, the fetch join's event rows, the continuous join's
 * external Rows, the SQL function's key expression) is checked against the others on random keys.
 */
class KeyEncodingSuite extends AnyFunSuite {
  private val input = StructType(Seq(
      StructField("name", StringType), StructField("ts", TimestampType), StructField("n", LongType),
      StructField("d", DoubleType), StructField("v", StringType)))
  private val keyOrdinals = Array(0, 2, 3)
  private val keySchema = StructType(keyOrdinals.map(input(_)))
  private val toInternal = ExpressionEncoder(input).createSerializer()

  private def randomRow(rnd: Random): Row = Row(
    if (rnd.nextInt(10) == 0) null else rnd.nextString(rnd.nextInt(40)),
    new java.sql.Timestamp(rnd.nextLong() >>> 24), rnd.nextLong(), rnd.nextGaussian(), "x")

  test("sink, fetch join, continuous join and SQL function give identical key bytes for random keys") {
    val binder = new RowBinder(input, keyOrdinals, Array(4))
    val events = KeyEncoder.columns(input, keyOrdinals)
    val external = KeyEncoder.externalRows(keySchema)
    // sharedstate_fetch(state, named_struct(name, n, d), ts) over the input row
    val struct = CreateNamedStruct(keyOrdinals.toSeq.flatMap { i =>
      Seq(Literal(input(i).name), BoundReference(i, input(i).dataType, input(i).nullable))
    })
    val sql = KeyEncoder.expression(struct, keySchema)
    val single = KeyEncoder.expression(BoundReference(2, LongType, nullable = true), StructType(Seq(input(2))))
    val singleColumn = KeyEncoder.columns(input, Array(2))
    val rnd = new Random(17)
    for (_ <- 0 until 2000) {
      val row = randomRow(rnd)
      val internal: InternalRow = toInternal(row)
      val fromSink = binder.keyBytes(internal)
      assert(Arrays.equals(fromSink, events.bytes(internal)), s"fetch join, key $row")
      assert(Arrays.equals(fromSink, external(Row(row.get(0), row.get(2), row.get(3))).bytes),
        s"continuous join, key $row")
      assert(Arrays.equals(fromSink, sql.bytes(internal)), s"SQL function, key $row")
      assert(Arrays.equals(singleColumn.bytes(internal), single.bytes(internal)), s"one-column key $row")
    }
  }

  test("bytes handed out are copies, not the projection's reused buffer") {
    val binder = new RowBinder(input, keyOrdinals, Array(4))
    val a = binder.keyBytes(toInternal(Row("a", null, 1L, 1.0, "x")).copy())
    val aCopy = a.clone()
    binder.keyBytes(toInternal(Row("b", null, 2L, 2.0, "y")).copy())
    assert(Arrays.equals(a, aCopy))
  }
}
