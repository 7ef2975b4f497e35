package io.sharedstate.spark.fetch

import io.sharedstate.spark.cluster.StateClient

import java.util.concurrent.ConcurrentHashMap
import org.apache.spark.TaskContext
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution

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
