package io.sharedstate.spark.fetch

import io.sharedstate.spark.cluster.StateClient
import io.sharedstate.spark.rows.{EventTimes, KeyEncoder}

import io.sharedstate.core.FetchAnswer
import java.util.concurrent.{ConcurrentHashMap, LinkedBlockingQueue, TimeUnit}
import org.apache.spark.TaskContext
import org.apache.spark.sql.{DataFrame, Encoders, Row}
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution

/**
 * The fetch join for continuous-mode queries, where Spark runs no stateful operators: each event
 * becomes an asynchronous fetch in the State's pending queue, answered on the thread that advances
 * U. Within an epoch, answers that are ready are emitted before the next event is read (replies
 * first); an epoch ends only once every fetch it issued is answered, so an acknowledged epoch has
 * emitted all its events and a restart from the last epoch loses none.
 */
private[sharedstate] object ContinuousFetchJoin {
  def apply(events: DataFrame, spec: FetchJoinSpec): DataFrame =
    events.mapPartitions(new ContinuousFetchFunction(spec))(Encoders.row(spec.outputSchema))
}

/** `clientOf` finds the State's client in the task's JVM (tests put a stand-in there). */
private[sharedstate] final class ContinuousFetchFunction(spec: FetchJoinSpec,
    clientOf: String => StateClient = StateClient.of)
    extends (Iterator[Row] => Iterator[Row]) with Serializable {
  @transient private lazy val keys = KeyEncoder.externalRows(spec.keySchema)
  @transient private lazy val cells = new FetchAnswerCells(spec)

  override def apply(events: Iterator[Row]): Iterator[Row] = {
    val state = clientOf(spec.stateName)
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
      state.fetchAsync(spec.rule.request(k, EventTimes.micros(event.get(spec.timeOrdinal)), spec.mode, spec.valueType))
        .whenComplete((answer: FetchAnswer, error: Throwable) =>
          ready.add(event -> (if (error != null) Left(error) else Right(answer))))
    }
  }
}

/**
 * A continuous fetch join is a reader of its State (it holds F where it was when the query started,
 * since continuous queries have no watermark), registered by the first task of each run of the query
 * on each JVM and removed by [[FetchProgressListener]] when the query stops.
 */
private[sharedstate] object ContinuousFetchReaders {
  val Prefix = "continuous-fetch-join:"
  // ContinuousExecution.EPOCH_COORDINATOR_ID_KEY: "<run id>--<uuid>", new for every run of a query
  private val RunKey = "__epoch_coordinator_id"
  // (State, reader, run) registered from this JVM. The join's function runs once per epoch, and
  // asking the coordinator each time waits on the State's lock behind every writer commit: on a
  // cluster that made each epoch slower than the epoch interval, so the join fell ever further behind.
  private val registered = ConcurrentHashMap.newKeySet[(String, String, String)]()

  def ensure(state: StateClient): Unit = Option(TaskContext.get()).foreach { c =>
    ensure(state, c.getLocalProperty(StreamExecution.QUERY_ID_KEY), c.getLocalProperty(RunKey))
  }

  /** Registers query `queryId`'s reader with the coordinator once per `run` and JVM. */
  private[spark] def ensure(state: StateClient, queryId: String, run: String): Unit =
    if (queryId != null) {
      val reader = s"$Prefix$queryId"
      val once = (state.name, reader, String.valueOf(run))
      if (registered.add(once)) {
        try state.ensureReader(reader)
        catch { case e: Throwable => registered.remove(once); throw e }
      }
    }
}
