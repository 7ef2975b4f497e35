package io.sharedstate.spark.fetch

import io.sharedstate.spark.cluster.StateClient
import io.sharedstate.spark.rows.{EventTimes, KeyEncoder}

import io.sharedstate.core.FetchAnswer
import java.util.concurrent.{LinkedBlockingQueue, TimeUnit}
import org.apache.spark.sql.Row

/** `clientOf` finds the State's client in the task's JVM (tests put a stand-in there). */
private[sharedstate] final class ContinuousFetchFunction(spec: FetchJoinSpec,
    clientOf: String => StateClient = StateClient.of)
    extends (Iterator[Row] => Iterator[Row]) with Serializable {
  @transient private lazy val keys = KeyEncoder.externalRows(spec.keySchema)
  @transient private lazy val cells = new FetchAnswerCells(spec)

  override def apply(events: Iterator[Row]): Iterator[Row] = {
    val state = clientOf(spec.stateName)
    spec.checkIncarnation(state)
    ContinuousFetchReaders.ensure(state)
    new AnswerIterator(state, events)
  }

  // Answers complete on other threads (the one that advances U, RPC replies); they are turned into
  // rows here, on the task thread: Spark's deserializers (in `cells`) are not thread-safe.
  private final class AnswerIterator(state: StateClient, events: Iterator[Row]) extends Iterator[Row] {
    private val ready = new LinkedBlockingQueue[(Row, Either[Throwable, FetchAnswer])]()
    private var outstanding = 0
    private var nextRow: Row = _

    override def hasNext: Boolean = {
      while (nextRow == null) {
        val done = ready.poll()
        if (done != null) take(done)
        else if (events.hasNext) issue(events.next())
        else if (outstanding == 0) return false
        else Option(ready.poll(100, TimeUnit.MILLISECONDS)).foreach(take)
      }
      true
    }

    override def next(): Row = {
      if (!hasNext) throw new NoSuchElementException
      val r = nextRow
      nextRow = null
      r
    }

    private def take(done: (Row, Either[Throwable, FetchAnswer])): Unit = {
      outstanding -= 1
      val (event, result) = done
      result match {
        case Left(e) => throw e
        case Right(answer) =>
          val c = cells(answer, event.get(spec.timeOrdinal))
          // null: an inner join drops the event
          nextRow = if (c.matched || !spec.inner) Row.fromSeq(event.toSeq ++ c.values) else null
      }
    }

    private def issue(event: Row): Unit = {
      val k = keys(Row.fromSeq(spec.keyOrdinals.toSeq.map(event.get)))
      outstanding += 1
      state.fetchAsync(spec.request(k, EventTimes.micros(event.get(spec.timeOrdinal))))
        .whenComplete((answer: FetchAnswer, error: Throwable) =>
          ready.add(event -> (if (error != null) Left(error) else Right(answer))))
    }
  }
}
