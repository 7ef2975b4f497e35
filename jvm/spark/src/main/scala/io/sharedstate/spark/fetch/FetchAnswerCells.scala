package io.sharedstate.spark.fetch

import io.sharedstate.spark.rows.{EventTimes, StoredRows}

import io.sharedstate.core.FetchAnswer
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.encoders.ExpressionEncoder
import org.apache.spark.sql.types.StructType

/**
 * Turns the engine's answer for one event into the cells the fetch join appends: the value columns
 * (and timestamp) for `latest`, an array of (time, value) structs for `range`, the result columns of
 * an aggregate. An event whose fetch found nothing is `unmatched`: a left join still emits it, with
 * nulls, or with 0 / an empty array for `count`, `collect` and `range` (as SQL aggregates an empty
 * group); an inner join drops it. Stored values are UnsafeRow bytes, decoded with Spark's encoders.
 */
private[sharedstate] final class FetchAnswerCells(spec: FetchJoinSpec) {
  private val schemas = spec.schemas
  private val valueWidth = schemas.value.length
  private val valueDecoder = decoder(schemas.value)
  private val aggregateDecoder = spec.rule match {
    case a: FetchJoinRule.Aggregate => decoder(a.resultSchema(schemas))
    case _ => null
  }

  val width: Int = spec.rule.addedColumns(schemas).length

  def nulls: Seq[Any] = Seq.fill(width)(null)

  /** `timeLike` is the event's own time object, so added timestamps have the same Java type. */
  def apply(answer: FetchAnswer, timeLike: Any): FetchAnswerCells.Cells = answer match {
    case FetchAnswer.Absent => FetchAnswerCells.Cells(nulls, matched = false)
    case FetchAnswer.Found(t, bytes) => FetchAnswerCells.Cells(
        valueDecoder(StoredRows.wrap(bytes, valueWidth)).toSeq :+ EventTimes.external(t, timeLike), matched = true)
    case p: FetchAnswer.Pairs =>
      val pairs = Array.tabulate(p.size) { i =>
        Row.fromSeq(EventTimes.external(p.times(i), timeLike) +: valueDecoder(StoredRows.wrap(p.values(i), valueWidth)).toSeq)
      }.toSeq
      FetchAnswerCells.Cells(Seq(pairs), matched = p.size > 0)
    case FetchAnswer.Aggregate(bytes, rowType, emptyRange) =>
      FetchAnswerCells.Cells(aggregateDecoder(StoredRows.wrap(bytes, rowType.size)).toSeq, matched = !emptyRange)
    case FetchAnswer.NotYet => throw new IllegalStateException("a fetch that is not answerable yet has no cells")
  }

  private def decoder(schema: StructType) = ExpressionEncoder(schema).resolveAndBind().createDeserializer()
}

private[sharedstate] object FetchAnswerCells {

  /** The appended cells, and whether the fetch found anything (inner joins keep only matched events). */
  final case class Cells(values: Seq[Any], matched: Boolean)
}
