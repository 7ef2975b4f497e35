package io.sharedstate.spark.write

import io.sharedstate.spark.cluster.{Incarnations, StateClient}
import io.sharedstate.spark.config.UpdateOptions
import io.sharedstate.spark.durable.ChangelogTarget

import io.sharedstate.core.{EventTime, RejectedUpdate, UpdateBatch}
import io.sharedstate.core.partial.PartialValues
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.write.{DataWriter, WriterCommitMessage}

/**
 * Buffers one task's updates and stages them in the State when the task commits; a retried task
 * replaces its earlier attempt. Nothing becomes visible before the driver commits the epoch.
 */
private[sharedstate] final class UpdateDataWriter(options: UpdateOptions, writer: String, partition: Int, epoch: Long,
    changelog: Option[ChangelogTarget] = None)
    extends DataWriter[InternalRow] {

  private val binder = new RowBinder(options.inputSchema, options.keyOrdinals, options.valueOrdinals)
  private var batch = new UpdateBatch
  private val instance = PartialInstance.of(options, writer, partition)
  // Updates further ahead of this task's clock are rejected, so a typo such as 9999-12-31 never moves U.
  private val latestAllowed =
    if (options.maxAheadMicros == UpdateOptions.NoMaxAhead) Long.MaxValue
    else Math.addExact(Math.multiplyExact(System.currentTimeMillis(), 1000L), options.maxAheadMicros)

  override def write(row: InternalRow): Unit = {
    val value = binder.valueBytes(row)
    if (binder.keyHasNull(row)) {
      val time =
        if (row.isNullAt(options.timeOrdinal)) null else java.lang.Long.valueOf(row.getLong(options.timeOrdinal))
      batch.reject(RejectedUpdate(null, time, value, RejectedUpdate.NullKey, writer, epoch, EventTime.MinusInfinity))
    } else if (row.isNullAt(options.timeOrdinal)) {
      batch.reject(RejectedUpdate(binder.keyBytes(row), null, value, RejectedUpdate.NullTime, writer, epoch,
          EventTime.MinusInfinity))
    } else if (row.getLong(options.timeOrdinal) > latestAllowed) {
      batch.reject(RejectedUpdate(binder.keyBytes(row), row.getLong(options.timeOrdinal), value,
          RejectedUpdate.AheadOfClock, writer, epoch, EventTime.MinusInfinity))
    } else {
      batch.add(binder.keyBytes(row), row.getLong(options.timeOrdinal),
        if (instance < 0) value else PartialValues.single(instance, value))
    }
  }

  override def commit(): WriterCommitMessage = {
    // Durable State: the task's updates go to the changelog as files first (not visible until the epoch commits).
    val files = changelog.map(_.writeTask(writer, epoch, partition, batch)).getOrElse(Nil)
    val client = StateClient.of(options.stateName)
    Incarnations.check(options.stateName, options.incarnation, client.incarnation, "writer")
    client.stage(writer, epoch, partition, batch)
    UpdateCommitMessage(batch.size, batch.rejectedCount, batch.maxEventTime, files)
  }

  override def abort(): Unit = batch = new UpdateBatch

  override def close(): Unit = ()

  override def currentMetricsValues(): Array[CustomTaskMetric] = Array(
    UpdateMetrics.task(UpdateMetrics.RowsStaged, batch.size),
    UpdateMetrics.task(UpdateMetrics.RowsRejectedInTask, batch.rejectedCount))
}
