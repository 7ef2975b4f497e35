package io.sharedstate.spark.fetch

import io.sharedstate.spark.fetch.batch.{BatchBound, BatchBounds, WaitingEventFiles}

import io.sharedstate.core.{EventTime, SharedStateException}
import org.apache.hadoop.fs.Path
import org.apache.spark.TaskContext
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.util.SerializableConfiguration

/**
 * The fetch join's physical operator: narrow, one task per input partition, no shuffle and no sort.
 * Each task answers what it can with batched requests to the State and writes what must wait for U
 * to its file of the micro-batch's waiting events (see [[WaitingEventFiles]]); the next micro-batch's
 * tasks take them over. What a batch answers is fixed by its [[BatchBound]] (recorded when Spark plans
 * it), so a re-run batch reads the same waiting events, answers the same ones and leaves the same ones
 * waiting. A batch DataFrame is answered in one pass (bound U = +infinity), nothing waits.
 */
private[sharedstate] final case class FetchJoinExec(spec: FetchJoinSpec, join: String, streaming: Boolean,
    reportsProgress: Boolean,
    output: Seq[Attribute], child: SparkPlan)
    extends UnaryExecNode {

  override protected def doExecute(): RDD[InternalRow] = {
    val (spec, join, streaming, reportsProgress) = (this.spec, this.join, this.streaming, this.reportsProgress)
    val input = child.execute()
    // A micro-batch with no input partitions still carries its waiting events to the next one.
    val rows =
      if (input.getNumPartitions > 0 || !streaming) input else sparkContext.parallelize(Seq.empty[InternalRow], 1)
    val tasks = rows.getNumPartitions
    val conf = if (streaming) FetchJoinExec.hadoopConf(session) else null // batch: no waiting-event files
    rows.mapPartitionsWithIndex { (part, rows) =>
      val width = spec.eventSchema.length
      val events = UnsafeProjection.create(spec.eventSchema)
      // The tick rows (non-null U past the event columns) only make Spark run a batch when U moves.
      // An UnsafeRow input is kept whole (the task reads the event columns by ordinal), only copied.
      val fresh = rows.filter(_.isNullAt(width)).map {
        case r: UnsafeRow => (r.copy(), -1L)
        case r => (events(r).copy(), -1L)
      }
      if (!streaming) new FetchJoinTask(spec, BatchBound(EventTime.PlusInfinity, EventTime.MinusInfinity),
        EventTime.MinusInfinity, fresh, None)
      else {
        val context = TaskContext.get()
        val (query, batch) = FetchJoinExec.batchOf(context, join)
        val bound = BatchBounds.of(query, join, batch, spec.stateName)
        val files = new WaitingEventFiles(new Path(bound.waitingDir), conf.value.value)
        val waiting = files.writer(batch, part, tasks)
        context.addTaskCompletionListener[Unit](_ => waiting.cancel()) // published only by close(), once all is read
        val taken = files.reader(bound.previous, bound.previousParts, part, tasks, width)
        new FetchJoinTask(spec, bound, if (reportsProgress) bound.f else EventTime.MinusInfinity, taken ++ fresh,
          Some(waiting))
      }
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): FetchJoinExec = copy(child = newChild)
}

private[sharedstate] object FetchJoinExec {

  // A streaming query plans every micro-batch with its own session (cloned when the query starts, so
  // its settings stay put): its Hadoop configuration is broadcast once, not once per micro-batch.
  private val confs = new java.util.WeakHashMap[SparkSession, Broadcast[SerializableConfiguration]]()

  /** The session's Hadoop configuration, broadcast (once per session) for the tasks' waiting-event files. */
  def hadoopConf(session: SparkSession): Broadcast[SerializableConfiguration] = confs.synchronized {
    var conf = confs.get(session)
    if (conf == null) {
      conf = session.sparkContext.broadcast(new SerializableConfiguration(session.sessionState.newHadoopConf()))
      confs.put(session, conf)
    }
    conf
  }

  /** The query and micro-batch a streaming fetch join's task runs in (Spark's local properties). */
  def batchOf(context: TaskContext, join: String): (String, Long) = {
    Option(context).flatMap(c => BatchBounds.microBatch(c.getLocalProperty)).getOrElse(throw new SharedStateException(
        s"Fetch join $join: a streaming fetch join runs in a micro-batch query (its tasks found no query or batch id)."))
  }
}
