package io.sharedstate.spark

import io.sharedstate.core.StatePartition
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, JoinedRow}
import scala.collection.mutable.ArrayBuffer

/**
 * The State as of a time: for each key, the newest applied pair at or before it. Only applied pairs
 * are read and every applied pair is below U, so the answer never changes once given.
 */
object AsOfScan {
  def rows(partition: StatePartition, schemas: StateSchemas, asOf: Long): Iterator[InternalRow] = {
    val out = ArrayBuffer.empty[InternalRow]
    val keyWidth = schemas.key.length
    val valueWidth = schemas.value.length
    partition.foreachEntry { (key, set) =>
      val i = set.latestIndex(asOf)
      if (i >= 0) {
        val time = new GenericInternalRow(Array[Any](set.timeAt(i)))
        out += new JoinedRow(StoredRows.wrap(key.bytes, keyWidth),
          new JoinedRow(StoredRows.wrap(set.valueAt(i), valueWidth), time)).copy()
      }
    }
    out.iterator
  }
}
