package io.sharedstate.spark.fetch

import io.sharedstate.spark.rows.{StoredRows, UnsafeColumnCopy}

import io.sharedstate.core.FetchAnswer
import io.sharedstate.core.fetch.FetchAnswers
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.types.DataType
import org.apache.spark.unsafe.Platform

/**
 * Writes the fetch join operator's output rows ([[FetchJoinRows.schema]]: the event's columns, the
 * rule's cells, the bookkeeping columns) straight into one reused UnsafeRow: the event columns and the
 * stored answer bytes are copied as they are ([[UnsafeColumnCopy]]), nothing is boxed or decoded.
 * Events are on-heap UnsafeRows whose first columns are the event columns.
 */
private[sharedstate] final class FetchJoinOutput(spec: FetchJoinSpec) {
  private val schemas = spec.schemas
  private val events = new UnsafeColumnCopy(spec.eventSchema.fields.map(_.dataType))
  private val values = new UnsafeColumnCopy(schemas.value.fields.map(_.dataType))
  private val aggregates = spec.rule match {
    case a: FetchJoinRule.Aggregate => new UnsafeColumnCopy(a.resultSchema(schemas).fields.map(_.dataType))
    case _ => null
  }
  private val cellTypes: Array[DataType] = spec.rule.addedColumns(schemas).map(_.dataType).toArray
  // A range answer's one cell (an array of (time, value...) structs) is built generically, then copied.
  private lazy val pairsRow = UnsafeProjection.create(cellTypes)
  private lazy val pairWriter = new UnsafeRowWriter(1 + values.width, 32)
  private val cells = new UnsafeColumnCopy(cellTypes)
  private val eventWidth = events.width
  private val bookkeeping = eventWidth + cells.width
  private val writer = new UnsafeRowWriter(bookkeeping + FetchJoinRows.Bookkeeping, 64)
  // Points at a found value where it lies in the answers' buffer (see answered).
  private val stored = new UnsafeRow(values.width)

  /**
   * Starts a row for `event` with its cells from `answer`; false (and null cells) when the fetch found
   * nothing. Finish it with [[answeredRow]].
   */
  def answered(event: UnsafeRow, answer: FetchAnswer): Boolean = {
    start(event)
    answer match {
      case FetchAnswer.Absent => nullCells(); false
      case FetchAnswer.Found(t, bytes) =>
        val value = StoredRows.wrap(bytes, values.width)
        if (value == null) values.nulls(writer, eventWidth) else values.copy(value, writer, eventWidth)
        writer.write(eventWidth + values.width, t)
        true
      case p: FetchAnswer.Pairs => pairs(p); p.size > 0
      case FetchAnswer.Aggregate(bytes, rowType, emptyRange) =>
        aggregates.copy(StoredRows.wrap(bytes, rowType.size), writer, eventWidth)
        !emptyRange
      case FetchAnswer.NotYet => throw new IllegalStateException("a fetch that is not answerable yet has no cells")
    }
  }

  /**
   * [[answered]] with answer `i` of `answers`: a found `latest` value is copied into the row from the
   * answers' buffer, where it lies (no answer object, no value array per answer).
   */
  def answered(event: UnsafeRow, answers: FetchAnswers, i: Int): Boolean = answers.kind(i) match {
    case FetchAnswers.Found =>
      start(event)
      stored.pointTo(answers.valueArray(i), Platform.BYTE_ARRAY_OFFSET + answers.valueOffset(i), answers.valueLength(i))
      values.copy(stored, writer, eventWidth)
      writer.write(eventWidth + values.width, answers.time(i))
      true
    case _ => answered(event, answers.answer(i))
  }

  /** Starts a row for `event` with null cells (nothing fetched, or a summary row). */
  def unanswered(event: UnsafeRow): Unit = { start(event); nullCells() }

  /** Ends the row started last as an answered event; the row is reused by the next one. */
  def answeredRow(): UnsafeRow = {
    writer.write(bookkeeping, FetchJoinRows.AnsweredKind)
    var i = 1
    while (i < FetchJoinRows.Bookkeeping) { writer.setNullAt(bookkeeping + i); i += 1 }
    writer.getRow
  }

  /** Ends the row started last as the task's summary row. */
  def summaryRow(tally: FetchJoinTally): UnsafeRow = {
    writer.write(bookkeeping, FetchJoinRows.SummaryKind)
    tally.write(writer, bookkeeping + 1)
    writer.getRow
  }

  private def start(event: UnsafeRow): Unit = {
    writer.reset()
    writer.zeroOutNullBytes()
    events.copy(event, writer, 0)
  }

  private def nullCells(): Unit = cells.nulls(writer, eventWidth)

  private def pairs(p: FetchAnswer.Pairs): Unit = {
    val structs = new Array[Any](p.size)
    var i = 0
    while (i < p.size) {
      pairWriter.reset()
      pairWriter.zeroOutNullBytes()
      pairWriter.write(0, p.times(i))
      val value = StoredRows.wrap(p.values(i), values.width)
      if (value == null) values.nulls(pairWriter, 1) else values.copy(value, pairWriter, 1)
      structs(i) = pairWriter.getRow.copy()
      i += 1
    }
    cells.copy(pairsRow(new GenericInternalRow(Array[Any](new GenericArrayData(structs)))), writer, eventWidth)
  }

}
