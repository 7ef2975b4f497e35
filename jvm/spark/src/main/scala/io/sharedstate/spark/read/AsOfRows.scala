package io.sharedstate.spark.read

import io.sharedstate.spark.rows.{StateSchemas, StoredPairs, StoredRows}

import io.sharedstate.core.partial.PartialValues

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, JoinedRow}

/** Rows of an as-of read: key columns, value columns, and the timestamp of the value (see AsOfPairs). */
private[sharedstate] object AsOfRows {

  /**
   * A partial State's as-of rows by instance: per key, one row per instance with its value in the
   * newest version at or before the time (the version's timestamp).
   */
  def instanceRows(pairs: StoredPairs, schemas: StateSchemas): Iterator[InternalRow] = {
    val keyWidth = schemas.key.length
    val valueWidth = schemas.value.length
    Iterator.range(0, pairs.size).flatMap { i =>
      val stored = pairs.values(i)
      PartialValues.instances(stored).iterator.zip(PartialValues.values(stored).iterator).map { case (instance, v) =>
        new JoinedRow(
          new JoinedRow(StoredRows.wrap(pairs.keys(i), keyWidth), new GenericInternalRow(Array[Any](instance))),
          new JoinedRow(StoredRows.wrap(v, valueWidth), new GenericInternalRow(Array[Any](pairs.times(i))))
        ).copy()
      }
    }
  }

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
