package io.sharedstate.spark

import io.sharedstate.core.{EventTime, FetchAnswer, Key, SharedStateException}
import io.sharedstate.spark.distributed.StateClient
import org.apache.spark.TaskContext
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.encoders.ExpressionEncoder
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.runtime.{MicroBatchExecution, StreamExecution}
import org.apache.spark.sql.streaming.GroupState
import scala.collection.mutable.ArrayBuffer

/**
 * The step of a fetch join for one group of rows (a bucket and reply-time slot, see
 * [[FetchJoinGroups]]). Events not yet answerable (read-committed: time not below U; read-uncommitted:
 * time - staleness not below U) stay in the group's checkpointed operator state; the tick rows of each
 * U step bring the groups it passed back in the same micro-batch, with or without new input, so
 * no task ever waits for U and no timeout (no extra no-data batch) is needed.
 *
 * Besides answers it emits bookkeeping rows that the join observes and then filters out (see
 * [[FetchJoinRows]]): late events (with a lateness: their fetch would read below the join's own
 * fetch progress F), and one row per group still waiting, with how many wait and the earliest time.
 */
final class FetchJoinFunction(spec: FetchJoinSpec, streaming: Boolean, metricsName: String, reportsProgress: Boolean)
  extends ((Row, Iterator[Row], GroupState[Row]) => Iterator[Row]) with Serializable {

  @transient private lazy val keySerializer = ExpressionEncoder(spec.keySchema).createSerializer()
  @transient private lazy val cells = new FetchAnswerCells(spec)
  // The U this micro-batch answers below and the join's own F, fixed per batch on the driver
  // (see BatchBounds), so a re-run batch answers exactly the same events and counts the same ones late.
  @transient private lazy val bound: BatchBound =
    if (!streaming) BatchBound(EventTime.PlusInfinity, EventTime.MinusInfinity)
    else Option(TaskContext.get()).flatMap { c =>
      for (q <- Option(c.getLocalProperty(StreamExecution.QUERY_ID_KEY)); b <- Option(c.getLocalProperty(MicroBatchExecution.BATCH_ID_KEY)))
        yield BatchBounds.of(q, metricsName, b.toLong, spec.stateName)
    }.getOrElse(BatchBound(EventTime.PlusInfinity, EventTime.MinusInfinity))
  @transient private lazy val batchBound: Long = bound.u
  @transient private lazy val ownProgress: Long = if (reportsProgress) bound.f else EventTime.MinusInfinity
  private val width = spec.eventSchema.length

  override def apply(group: Row, rows: Iterator[Row], groupState: GroupState[Row]): Iterator[Row] = {
    // Rows are the event columns then (tick U, previous U, group): a null U marks an event. Only the
    // event columns of a row are read (and copied, into an answer or into the waiting state).
    val events = rows.filter(_.isNullAt(width))
    if (streaming && !groupState.exists && !events.hasNext) return Iterator.empty // only ticks, nothing waits here
    val waiting: Iterator[(Row, Long)] =
      if (groupState.exists) groupState.get.getSeq[Row](0).iterator.zip(groupState.get.getSeq[Long](1).iterator)
      else Iterator.empty
    val still = ArrayBuffer.empty[Row]
    val stillArrived = ArrayBuffer.empty[Long]
    val now = System.currentTimeMillis()
    // The group's waiting events, then its new ones, in chunks: each chunk one batched request, its
    // answers emitted before the next chunk is read, so only the events that keep waiting are held.
    val inputs: Iterator[(Row, Long)] = waiting ++ events.map(e => (e, -1L))
    val answered = inputs.grouped(FetchJoinFunction.Chunk).flatMap(chunk => step(chunk, now, still, stillArrived))
    answered ++ Iterator.single(()).flatMap(_ => finish(groupState, still, stillArrived))
  }

  // One chunk: null times and late events answered at once, the rest asked of the State in one request.
  private def step(chunk: Seq[(Row, Long)], now: Long, still: ArrayBuffer[Row], stillArrived: ArrayBuffer[Long]): Iterator[Row] = {
    val out = ArrayBuffer.empty[Row]
    val asked = ArrayBuffer.empty[(Row, Long, Long)] // event, time, arrival (ms)
    chunk.foreach { case (event, arrivedMs) =>
      val time = event.get(spec.timeOrdinal)
      if (time == null) { // nothing to fetch at no time: no match
        if (!spec.inner) out += FetchJoinRows.answered(event, width, cells.nulls, 0L, EventTime.MinusInfinity)
      } else {
        val t = EventTimes.micros(time)
        if (arrivedMs < 0 && t - spec.rule.windowMicros < ownProgress) out += FetchJoinRows.late(event, width, cells.width, t)
        else {
          val arrived = if (arrivedMs >= 0) arrivedMs else now // one that waited already was not late on arrival
          if (spec.mode.replyTime(t) < batchBound) asked += ((event, t, arrived))
          else { still += FetchJoinRows.prefix(event, width); stillArrived += arrived }
        }
      }
    }
    if (asked.nonEmpty) {
      val state = StateClient.of(spec.stateName)
      val requests = asked.map { case (event, t, _) => spec.rule.request(keyOf(event), t, spec.mode, spec.valueType) }.toIndexedSeq
      val answers = state.fetch(requests)
      var i = 0
      var notYet = 0
      while (i < asked.length) {
        val (event, t, arrivedMs) = asked(i)
        answers(i) match {
          case FetchAnswer.NotYet =>
            still += FetchJoinRows.prefix(event, width); stillArrived += arrivedMs; notYet += 1
          case answer =>
            val c = cells(answer, event.get(spec.timeOrdinal))
            if (c.matched || !spec.inner) out += FetchJoinRows.answered(event, width, c.values, now - arrivedMs, t)
        }
        i += 1
      }
      if (notYet > 0 && !streaming) {
        throw new SharedStateException(s"Fetch join on a batch DataFrame: event(s) are not yet " +
          s"answerable from State '${spec.stateName}' (U=${EventTime.show(state.updateProgress)}), so a " +
          "read-committed answer is not final yet. Use a streaming DataFrame, whose rows wait for U.")
      }
    }
    out.iterator
  }

  // After the group's last chunk: keep what still waits, and one bookkeeping row for it.
  private def finish(groupState: GroupState[Row], still: ArrayBuffer[Row], stillArrived: ArrayBuffer[Long]): Iterator[Row] =
    if (still.isEmpty) {
      if (groupState.exists) groupState.remove()
      Iterator.empty
    } else {
      groupState.update(Row(still.toSeq, stillArrived.toSeq))
      val times = still.iterator.map(e => EventTimes.micros(e.get(spec.timeOrdinal))).toSeq
      Iterator.single(FetchJoinRows.waiting(still.head, width, cells.width, still.size, times.min, times.max))
    }

  private def keyOf(event: Row): Key =
    new Key(keySerializer(Row.fromSeq(spec.keyOrdinals.toSeq.map(event.get))).asInstanceOf[UnsafeRow].copy().getBytes)
}

object FetchJoinFunction {
  /** Events per batched fetch request; also bounds what a group holds besides its waiting events. */
  val Chunk = 4096
}
