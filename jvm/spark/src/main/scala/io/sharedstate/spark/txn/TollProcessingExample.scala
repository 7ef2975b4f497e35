package io.sharedstate.spark.txn

import org.apache.spark.sql.Row

/**
 * An example of the class form ([[RowTransactionLogic]]), shipped so that it can be named from
 * Python (`logic="io.sharedstate.spark.txn.TollProcessingExample"`): TStream's Toll Processing over
 * position reports (`vehicle INT, segment INT, speed BIGINT`), reading a segment's speed totals as
 * `s` (a State `segment INT` -> `total BIGINT, reports BIGINT`) and its set of vehicles as `c`
 * (`segment INT` -> `vehicles ARRAY<INT>`), and writing both back with this report added (into
 * the States those reads name, whatever their names). The toll
 * (Linear Road's 2 * (vehicles - 50)^2 when the average speed is below 40) is computed downstream
 * from the values read, in the outcomes.
 */
class TollProcessingExample extends RowTransactionLogic {
  override def decide(txn: RowTransaction): Unit = {
    val segment = txn.event.getAs[Integer]("segment")
    val s = txn.read("s")
    val (total, reports) = if (s == null) (0L, 0L) else (s.getLong(0), s.getLong(1))
    txn.write(txn.stateOf("s"), segment, Row(total + txn.event.getAs[Long]("speed"), reports + 1))
    val c = txn.read("c")
    val seen = if (c == null || c.isNullAt(0)) Seq.empty[Int] else c.getSeq[Int](0)
    val vehicle = txn.event.getAs[Int]("vehicle")
    txn.write(txn.stateOf("c"), segment, Row(if (seen.contains(vehicle)) seen else seen :+ vehicle))
  }
}
