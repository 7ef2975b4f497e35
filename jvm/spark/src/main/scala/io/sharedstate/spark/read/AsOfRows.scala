package io.sharedstate.spark.read

import io.sharedstate.spark.rows.{StateSchemas, StoredPairs, StoredRows}

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, JoinedRow}

/** Rows of an as-of read: key columns, value columns, and the timestamp of the value (see AsOfPairs). */
private[sharedstate] object AsOfRows {
  def rows(pairs: StoredPairs, schemas: StateSchemas): Iterator[InternalRow] = {
    val keyWidth = schemas.key.length
    val valueWidth = schemas.value.length
    Iterator.range(0, pairs.size).map { i =>
      val time = new GenericInternalRow(Array[Any](pairs.times(i)))
      new JoinedRow(StoredRows.wrap(pairs.keys(i), keyWidth),
        new JoinedRow(StoredRows.wrap(schemas.shown(pairs.values(i)), valueWidth), time)).copy()
    }
  }
}
