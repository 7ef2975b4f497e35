package io.sharedstate.spark

import io.sharedstate.core.{EventTime, FetchAnswer, Key, SharedStateException}
import io.sharedstate.spark.distributed.StateClient
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.encoders.ExpressionEncoder
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.streaming.GroupState
import scala.collection.mutable.ArrayBuffer

/**
 * The per-key step of a fetch join. Events not yet answerable (read-committed: time not below U;
 * read-uncommitted: time - staleness not below U) stay in the key's checkpointed operator state, and
 * a 1 ms processing-time timeout brings every waiting key back in the next micro-batch, with or
 * without new input, so no task ever waits for U.
 *
 * Besides answers it emits bookkeeping rows that the join observes and then filters out (see
 * [[FetchJoinRows]]): events behind the events' watermark (late: fetch progress F may already have
 * passed them), and one row per key still waiting, which carries how many wait and the earliest
 * waiting time, so the driver knows the fetch side's progress F and its pending fetches.
 */
final class FetchJoinFunction(spec: FetchJoinSpec, streaming: Boolean, hasWatermark: Boolean)
  extends ((Row, Iterator[Row], GroupState[Row]) => Iterator[Row]) with Serializable {

  @transient private lazy val keySerializer = ExpressionEncoder(spec.keySchema).createSerializer()
  @transient private lazy val cells = new FetchAnswerCells(spec)

  override def apply(key: Row, events: Iterator[Row], group: GroupState[Row]): Iterator[Row] = {
    val state = StateClient.of(spec.stateName)
    val k = new Key(keySerializer(key).asInstanceOf[UnsafeRow].copy().getBytes)
    val now = System.currentTimeMillis()
    val watermarkMicros = if (hasWatermark) group.getCurrentWatermarkMs() * 1000L else EventTime.MinusInfinity
    val waiting: Iterator[(Row, Long)] =
      if (group.exists) group.get.getSeq[Row](0).iterator.zip(group.get.getSeq[Long](1).iterator) else Iterator.empty
    val out = ArrayBuffer.empty[Row]
    val still = ArrayBuffer.empty[Row]
    val stillArrived = ArrayBuffer.empty[Long]
    // The key's waiting and new events go out as one batch: one message when the key's owner is remote.
    val candidates = ArrayBuffer.empty[(Row, Long)]
    candidates ++= waiting
    events.foreach { event =>
      // Spark does not filter late rows for this operator: behind the watermark, F may have passed them.
      if (EventTimes.micros(event.get(spec.timeOrdinal)) < watermarkMicros) out += FetchJoinRows.late(event, cells.width)
      else candidates += ((event, now))
    }
    val answers = state.fetch(candidates.toIndexedSeq.map { case (event, _) =>
      spec.rule.request(k, EventTimes.micros(event.get(spec.timeOrdinal)), spec.mode, spec.valueType)
    })
    candidates.indices.foreach { i =>
      val (event, arrivedMs) = candidates(i)
      answers(i) match {
        case FetchAnswer.NotYet => still += event; stillArrived += arrivedMs
        case answer =>
          val c = cells(answer, event.get(spec.timeOrdinal))
          if (c.matched || !spec.inner) out += FetchJoinRows.answered(event, c.values, now - arrivedMs)
      }
    }
    if (still.isEmpty) {
      if (group.exists) group.remove()
    } else if (!streaming) {
      throw new SharedStateException(s"Fetch join on a batch DataFrame: ${still.size} event(s) are not yet " +
        s"answerable from State '${spec.stateName}' (U=${EventTime.show(state.updateProgress)}), so a " +
        "read-committed answer is not final yet. Use a streaming DataFrame, whose rows wait for U.")
    } else {
      group.update(Row(still.toSeq, stillArrived.toSeq))
      group.setTimeoutDuration(1L)
      out += FetchJoinRows.waiting(still.head, cells.width, still.size,
        still.iterator.map(e => EventTimes.micros(e.get(spec.timeOrdinal))).min)
    }
    out.iterator
  }
}
