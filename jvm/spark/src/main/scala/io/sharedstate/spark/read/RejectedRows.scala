package io.sharedstate.spark.read

import io.sharedstate.spark.rows.{StateSchemas, StoredRows}

import io.sharedstate.core.{EventTime, RejectedUpdate}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.unsafe.types.UTF8String

/** The late and rejected updates of a State, with the reason and the U they arrived at. */
private[sharedstate] object RejectedRows {
  def rows(rejected: Seq[RejectedUpdate], s: StateSchemas): Iterator[InternalRow] =
    rejected.iterator.map { r =>
      new GenericInternalRow(Array[Any](
          StoredRows.wrap(r.key, s.key.length),
          if (r.time == null) null else r.time.longValue(),
          StoredRows.wrap(s.updateValue(r.value), s.value.length),
          UTF8String.fromString(r.reason),
          UTF8String.fromString(r.writer),
          r.epoch,
          if (EventTime.isFinite(r.updateProgressAtArrival)) r.updateProgressAtArrival else null
        ))
    }
}
