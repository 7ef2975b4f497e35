package io.sharedstate.spark

import io.sharedstate.core.{EventTime, FetchAnswer, Key, SharedStateException}
import io.sharedstate.core.fetch.{FetchRequest, FetchRule}
import io.sharedstate.spark.distributed.StateClient
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.encoders.ExpressionEncoder
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.streaming.GroupState
import scala.collection.mutable.ArrayBuffer

/**
 * The per-key step of a `latest` fetch join. Events not yet answerable (read-committed: time not
 * below U; read-uncommitted: time - staleness not below U) stay in the group's (checkpointed) state with a processing-time timeout, so a later batch, with
 * or without new input, answers them once U has passed. No task ever waits for U.
 */
final class FetchLatestFunction(spec: FetchJoinSpec, streaming: Boolean)
  extends ((Row, Iterator[Row], GroupState[Row]) => Iterator[Row]) with Serializable {

  @transient private lazy val keySerializer = ExpressionEncoder(spec.keySchema).createSerializer()
  @transient private lazy val valueDeserializer =
    ExpressionEncoder(spec.schemas.value).resolveAndBind().createDeserializer()
  private val valueWidth = spec.schemas.value.length

  override def apply(key: Row, events: Iterator[Row], group: GroupState[Row]): Iterator[Row] = {
    val state = StateClient.of(spec.stateName)
    val k = new Key(keySerializer(key).asInstanceOf[UnsafeRow].copy().getBytes)
    val waiting = if (group.exists) group.get.getSeq[Row](0).iterator else Iterator.empty
    val out = ArrayBuffer.empty[Row]
    val still = ArrayBuffer.empty[Row]
    // One batch per key (one message to its owner when the partition is remote).
    val all = (waiting ++ events).toIndexedSeq
    val answers = state.fetch(all.map(e => FetchRequest(k, EventTimes.micros(e.get(spec.timeOrdinal)), FetchRule.Latest, spec.mode)))
    all.indices.foreach { i =>
      val event = all(i)
      val timeValue = event.get(spec.timeOrdinal)
      answers(i) match {
        case FetchAnswer.NotYet => still += event
        case FetchAnswer.Absent => if (!spec.inner) out += Row.fromSeq(event.toSeq ++ Seq.fill(valueWidth + 1)(null))
        case FetchAnswer.Found(t, bytes) =>
          val value = valueDeserializer(StoredRows.wrap(bytes, valueWidth))
          out += Row.fromSeq(event.toSeq ++ value.toSeq :+ EventTimes.external(t, timeValue))
        case other => throw new IllegalStateException(s"a latest fetch answered $other")
      }
    }
    if (still.isEmpty) {
      if (group.exists) group.remove()
    } else if (!streaming) {
      throw new SharedStateException(s"Fetch join on a batch DataFrame: ${still.size} event(s) are not yet below " +
        s"the update progress of State '${spec.stateName}' (U=${EventTime.show(state.updateProgress)}), so a " +
        "read-committed answer is not final yet. Use a streaming DataFrame, whose rows wait for U.")
    } else {
      group.update(Row(still.toSeq))
      group.setTimeoutDuration(spec.pollIntervalMs)
    }
    out.iterator
  }
}
