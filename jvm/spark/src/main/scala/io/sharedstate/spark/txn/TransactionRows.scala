package io.sharedstate.spark.txn

import io.sharedstate.core.SharedStateException
import io.sharedstate.core.txn.TransactionOutcome
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.{BooleanType, StringType, StructField, StructType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * The outcome rows of a transactional query: the event's columns, `committed`, `reason` (why it
 * aborted: `condition`, `late`, `null_time`, ...; null when committed) and one column per read with the value it read (a struct of the
 * State's value columns, null when the key held nothing or the read was not made).
 */
private[sharedstate] object TransactionRows {
  val Committed = "committed"
  val Reason = "reason"

  /** The observed metric of a batch's events: their largest time (µs), the writer's watermark before lateness. */
  val MaxEventMicros = "maxEventMicros"
  val MetricsPrefix = "sharedstate_txn"

  def schema(program: TransactionProgram): StructType = {
    val added = Seq(StructField(Committed, BooleanType, nullable = false), StructField(Reason, StringType)) ++
      program.reads.map(r => StructField(r.name, TransactionExpressions.nullableStruct(program.schemas(r.state).value)))
    val clashes = added.map(_.name).filter(a => program.eventSchema.fieldNames.exists(_.equalsIgnoreCase(a)))
    if (clashes.nonEmpty) throw new SharedStateException(
      s"Transaction: the outcomes would add column(s) ${clashes.mkString(", ")}, which the events already have. " +
        "Rename or drop them in the events first.")
    StructType(program.eventSchema.fields ++ added)
  }

  /** `sharedstate_txn:<group>:<n>`: the operator's name in its query (its metrics and writer). */
  def name(group: String, n: Int): String = s"$MetricsPrefix:$group:$n"

  /** Turns outcomes into output rows. Not thread-safe: one per task. */
  final class Writer(program: TransactionProgram) {
    private val width = program.eventSchema.length
    private val projection = UnsafeProjection.create(schema(program))
    private val readWidths = program.reads.map(r => program.schemas(r.state).value.length).toArray

    def row(o: TransactionOutcome): UnsafeRow = {
      val event = new UnsafeRow(width)
      event.pointTo(o.payload, o.payload.length)
      // The outcome lists the reads that were made: the event's keys say which (the same on every run).
      val readsMade = program.readsMade(event)
      val values = new Array[Any](2 + readWidths.length)
      values(0) = o.committed
      values(1) = if (o.committed) null else UTF8String.fromString(o.reason)
      var made = 0
      // A late transaction made no read (its reads are empty): every read column is null.
      readWidths.indices.foreach { i =>
        if (readsMade(i) && made < o.reads.length) {
          values(2 + i) = o.reads(made).map { bytes =>
            val r = new UnsafeRow(readWidths(i)); r.pointTo(bytes, bytes.length); r
          }.orNull
          made += 1
        }
      }
      projection(new JoinedRow(event, new GenericInternalRow(values)))
    }

    /** An event with no time: aborted at once, as `null_time`. */
    def nullTime(event: InternalRow): UnsafeRow = {
      val values = new Array[Any](2 + readWidths.length)
      values(0) = false
      values(1) = UTF8String.fromString("null_time")
      projection(new JoinedRow(event, new GenericInternalRow(values)))
    }
  }
}
