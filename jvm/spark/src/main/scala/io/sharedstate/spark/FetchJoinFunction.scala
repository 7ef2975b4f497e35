package io.sharedstate.spark

import io.sharedstate.core.{EventTime, FetchAnswer, Key, SharedStateException}
import io.sharedstate.spark.distributed.StateClient
import org.apache.spark.TaskContext
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.encoders.ExpressionEncoder
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.streaming.GroupState
import scala.collection.mutable.ArrayBuffer

/**
 * The per-key step of a fetch join. Events not yet answerable (read-committed: time not below U;
 * read-uncommitted: time - staleness not below U) stay in the key's checkpointed operator state
 * with an event-time timeout at the earliest of their reply times; the query's watermark follows U
 * (see [[FetchJoin]]), so the key comes back in the micro-batch after U passes them, with or without
 * new input. No task ever waits for U.
 *
 * Besides answers it emits bookkeeping rows that the join observes and then filters out (see
 * [[FetchJoinRows]]): late events (with a lateness: their fetch would read below the join's own
 * fetch progress F), and one row per key still waiting, with how many wait and the earliest time.
 */
final class FetchJoinFunction(spec: FetchJoinSpec, streaming: Boolean, metricsName: String, reportsProgress: Boolean)
  extends ((Row, Iterator[Row], GroupState[Row]) => Iterator[Row]) with Serializable {

  @transient private lazy val keySerializer = ExpressionEncoder(spec.keySchema).createSerializer()
  @transient private lazy val cells = new FetchAnswerCells(spec)
  // This join's own F, fixed during a micro-batch (the driver reports it between batches).
  @transient private lazy val ownProgress: Long =
    if (!streaming || !reportsProgress) EventTime.MinusInfinity
    else Option(TaskContext.get()).flatMap(c => Option(c.getLocalProperty("sql.streaming.queryId")))
      .flatMap(q => StateClient.of(spec.stateName).readerProgress(FetchProgressListener.readerId(q, metricsName)))
      .getOrElse(EventTime.MinusInfinity)
  private val width = spec.eventSchema.length

  override def apply(key: Row, rows: Iterator[Row], group: GroupState[Row]): Iterator[Row] = {
    val events = if (streaming) rows.filter(_.isNullAt(width)).map(r => Row.fromSeq(r.toSeq.take(width))) else rows
    if (streaming && !group.exists && !events.hasNext) return Iterator.empty // the progress ticks' own group
    val state = StateClient.of(spec.stateName)
    val k = new Key(keySerializer(key).asInstanceOf[UnsafeRow].copy().getBytes)
    val now = System.currentTimeMillis()
    val waiting: Iterator[(Row, Long)] =
      if (group.exists) group.get.getSeq[Row](0).iterator.zip(group.get.getSeq[Long](1).iterator) else Iterator.empty
    val out = ArrayBuffer.empty[Row]
    val still = ArrayBuffer.empty[Row]
    val stillArrived = ArrayBuffer.empty[Long]
    var minReply = Long.MaxValue
    // The key's waiting events and its new ones that are not late, asked of the owner in one request.
    val asked = ArrayBuffer.empty[(Row, Long, Long)] // event, time, arrival (ms)
    waiting.foreach { case (event, arrived) => asked += ((event, EventTimes.micros(event.get(spec.timeOrdinal)), arrived)) }
    events.foreach { event =>
      val t = EventTimes.micros(event.get(spec.timeOrdinal))
      if (t - spec.rule.windowMicros < ownProgress) out += FetchJoinRows.late(event, cells.width, t)
      else asked += ((event, t, now))
    }
    val requests = asked.map { case (_, t, _) => spec.rule.request(k, t, spec.mode, spec.valueType) }.toIndexedSeq
    val answers = if (requests.isEmpty) Array.empty[FetchAnswer] else state.fetch(requests)
    var i = 0
    while (i < asked.length) {
      val (event, t, arrivedMs) = asked(i)
      answers(i) match {
        case FetchAnswer.NotYet =>
          still += event; stillArrived += arrivedMs; minReply = math.min(minReply, requests(i).replyTime)
        case answer =>
          val c = cells(answer, event.get(spec.timeOrdinal))
          if (c.matched || !spec.inner) out += FetchJoinRows.answered(event, c.values, now - arrivedMs, t)
      }
      i += 1
    }
    if (still.isEmpty) {
      if (group.exists) group.remove()
    } else if (!streaming) {
      throw new SharedStateException(s"Fetch join on a batch DataFrame: ${still.size} event(s) are not yet " +
        s"answerable from State '${spec.stateName}' (U=${EventTime.show(state.updateProgress)}), so a " +
        "read-committed answer is not final yet. Use a streaming DataFrame, whose rows wait for U.")
    } else {
      group.update(Row(still.toSeq, stillArrived.toSeq))
      // Fires once the watermark (U, in ms) is past the earliest reply time, i.e. once U > it.
      group.setTimeoutTimestamp(math.max(1L, Math.floorDiv(minReply, 1000L)))
      val times = still.iterator.map(e => EventTimes.micros(e.get(spec.timeOrdinal))).toSeq
      out += FetchJoinRows.waiting(still.head, cells.width, still.size, times.min, times.max)
    }
    out.iterator
  }
}
