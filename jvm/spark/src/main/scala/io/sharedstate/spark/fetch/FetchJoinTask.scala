package io.sharedstate.spark.fetch

import io.sharedstate.spark.cluster.StateClient
import io.sharedstate.spark.fetch.batch.{BatchBound, WaitingEventFiles}
import io.sharedstate.spark.rows.KeyEncoder

import io.sharedstate.core.{EventTime, SharedStateException}
import io.sharedstate.core.fetch.{FetchAnswers, FetchRequest}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}

/**
 * One task of a fetch join: the waiting events it takes over from the previous micro-batch, then its
 * new events, in chunks of [[FetchJoinTask.Chunk]]. Per event: no time, answered at once with nothing
 * fetched; new and behind the join's F (with a lateness), late; answerable (read-committed: time below
 * the batch's U; read-uncommitted: time - staleness below it), asked of the State in one batched request
 * per chunk; otherwise, or when the State still says not yet, written to `waiting` for the next batch.
 * Emits the output rows of [[FetchJoinRows.schema]] (answers, then one summary row with the task's
 * [[FetchJoinTally]]) as it goes, so only a chunk is held; `waiting` is closed once the input is read.
 *
 * Events are UnsafeRows whose first columns are the event columns (stable: not reused); the output
 * rows are one reused buffer ([[FetchJoinOutput]]).
 */
private[sharedstate] final class FetchJoinTask(spec: FetchJoinSpec, bound: BatchBound, lateBelow: Long,
    input: Iterator[(UnsafeRow, Long)], waiting: Option[WaitingEventFiles#Writer])
    extends Iterator[InternalRow] {
  import FetchJoinTask._
  private val output = new FetchJoinOutput(spec)
  // What waits is written with the event columns only (input rows may carry more).
  private val eventColumns = UnsafeProjection.create(spec.eventSchema)
  private val keys = KeyEncoder.columns(spec.eventSchema, spec.keyOrdinals)
  spec.checkIncarnation(StateClient.of(spec.stateName)) // every task, whether or not it fetches
  private val now = System.currentTimeMillis()
  private val timeOrdinal = spec.timeOrdinal

  // The current chunk: what to emit for each of its events.
  private val events = new Array[UnsafeRow](Chunk)
  private val kinds = new Array[Int](Chunk)
  private val times = new Array[Long](Chunk)
  private val arrivals = new Array[Long](Chunk)
  // The chunk's requests and their answers (event i's is answer answerAt(i)), reused chunk after chunk.
  private val requests = new Array[FetchRequest](Chunk)
  private val answers = new FetchAnswers(Chunk)
  private val answerAt = new Array[Int](Chunk)
  private var filled = 0
  private var pos = 0
  private var started = -1 // the event whose answered row `output` holds, so hasNext twice writes it once
  private var inputDone = false
  private val tally = new FetchJoinTally
  private var sample: UnsafeRow = _ // one of the task's events: its columns carry the summary row
  private var summaryNext = false
  private var summaryDone = false

  override def hasNext: Boolean = {
    while (!ready && !inputDone) fill()
    ready || (!summaryDone && tally.nonEmpty && { summaryNext = true; true })
  }

  override def next(): InternalRow = {
    if (!hasNext) throw new NoSuchElementException("no more fetch join rows")
    if (summaryNext) {
      summaryNext = false
      summaryDone = true
      output.unanswered(sample)
      return output.summaryRow(tally)
    }
    val i = pos
    pos += 1
    if (kinds(i) == NoTime) {
      output.unanswered(events(i))
      tally.answer(0L)
    } else tally.answer(now - arrivals(i)) // its row was started by ready
    output.answeredRow()
  }

  // Whether `pos` is an event to emit; skips those that wait and, for inner joins, unmatched answers.
  private def ready: Boolean = {
    while (pos < filled) {
      kinds(pos) match {
        case Skip => pos += 1
        case Asked =>
          if (started == pos) return true
          if (output.answered(events(pos), answers, answerAt(pos)) || !spec.inner) { started = pos; return true }
          else pos += 1
        case NoTime if spec.inner => pos += 1
        case _ => return true
      }
    }
    false
  }

  private def fill(): Unit = {
    filled = 0
    pos = 0
    started = -1
    var asked = 0
    while (filled < Chunk && input.hasNext) {
      val (event, arrivedMs) = input.next()
      val i = filled
      events(i) = event
      if (sample == null) sample = event
      if (event.isNullAt(timeOrdinal)) kinds(i) = NoTime
      else {
        val t = event.getLong(timeOrdinal)
        times(i) = t
        tally.seen(t)
        if (arrivedMs < 0 && t - spec.rule.windowMicros < lateBelow) { kinds(i) = Skip; tally.lateEvent() }
        else {
          arrivals(i) = if (arrivedMs >= 0) arrivedMs else now // one that waited already was not late on arrival
          if (spec.mode.replyTime(t) < bound.u) { kinds(i) = Asked; asked += 1 }
          else { kinds(i) = Skip; keep(i) }
        }
      }
      filled += 1
    }
    if (asked > 0) ask(asked)
    if (!input.hasNext) { inputDone = true; waiting.foreach(_.close()) }
  }

  // One batched request for the chunk's answerable events; those the State cannot answer yet wait.
  private def ask(asked: Int): Unit = {
    var i = 0
    var r = 0
    while (i < filled) {
      if (kinds(i) == Asked) {
        requests(r) = spec.request(keys.key(events(i)), times(i))
        answerAt(i) = r
        r += 1
      }
      i += 1
    }
    StateClient.of(spec.stateName).fetchInto(requests, asked, answers)
    java.util.Arrays.fill(requests.asInstanceOf[Array[AnyRef]], 0, asked, null)
    i = 0
    while (i < filled) {
      if (kinds(i) == Asked && answers.isNotYet(answerAt(i))) {
        kinds(i) = Skip
        keep(i)
      }
      i += 1
    }
  }

  private def keep(i: Int): Unit = {
    waiting.getOrElse(throw new SharedStateException(s"Fetch join on a batch DataFrame: event(s) are not yet " +
        s"answerable from State '${spec.stateName}' (U=${EventTime.show(StateClient.of(spec.stateName).updateProgress)}), " +
        "so a read-committed answer is not final yet. Use a streaming DataFrame, whose rows wait for U."))
      .write(eventColumns(events(i)), arrivals(i))
    tally.waits(times(i))
  }
}

private[sharedstate] object FetchJoinTask {

  /** Events per batched fetch request; bounds what a task holds besides the reused output row. */
  val Chunk = 4096
  private val Asked = 0
  private val Skip = 1
  private val NoTime = 2
}
