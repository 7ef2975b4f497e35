package io.sharedstate.spark.write

import io.sharedstate.spark.cluster.{Coordinator, StateController}
import io.sharedstate.spark.config.UpdateOptions
import io.sharedstate.spark.durable.{ChangelogTarget, DurableStates}

import io.sharedstate.core.EventTime
import java.util.UUID
import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.write.{
  BatchWrite,
  DataWriter,
  DataWriterFactory,
  PhysicalWriteInfo,
  WriterCommitMessage
}

/**
 * A batch write into a State (bulk load): one writer that commits a single epoch and then finishes,
 * so it no longer holds U back. With no streaming writer left, every value is final (U = +infinity)
 * until a streaming writer registers; with streaming writers, updates below U are late like any other.
 */
private[sharedstate] final class BulkLoadWrite(options: UpdateOptions) extends BatchWrite with Logging {
  private val writer = s"bulk-load-${UUID.randomUUID()}"
  private val state: StateController = Coordinator.get.state(options.stateName)
  state.registerWriter(writer)

  override def createBatchWriterFactory(info: PhysicalWriteInfo): DataWriterFactory =
    new BulkLoadWriterFactory(options, writer, DurableStates.target(options.stateName))

  override def useCommitCoordinator(): Boolean = true

  override def commit(messages: Array[WriterCommitMessage]): Unit = DurableStates.bulkLoading(options.stateName) {
    val outcome =
      new EpochCommitter(state, writer, options.latenessMicros).commit(BulkLoadWrite.Epoch, messages, finish = true)
    logInfo(s"State ${state.name}: bulk load $writer committed (accepted ${outcome.accepted}, " +
      s"rejected ${outcome.rejected}, U=${EventTime.show(state.updateProgress)})")
    // A load that filled a partition past spark.sharedstate.snapshot.afterUpdates returns once its data
    // is in snapshots (as a load batch on RocksDB flushes its memtables): recovery then reads it there.
    DurableStates.afterBulkLoad(options.stateName).foreach(r =>
      logInfo(s"State ${state.name}: snapshot round after the bulk load: ${r.written} snapshot(s), " +
        s"${r.entries} entries in ${r.snapshotMs} ms"))
  }

  override def abort(messages: Array[WriterCommitMessage]): Unit = {
    state.abortEpoch(writer, BulkLoadWrite.Epoch)
    state.deregisterWriter(writer)
  }
}

private[sharedstate] object BulkLoadWrite {
  val Epoch = 0L
}

private[sharedstate] final class BulkLoadWriterFactory(options: UpdateOptions, writer: String,
    changelog: Option[ChangelogTarget])
    extends DataWriterFactory {
  override def createWriter(partitionId: Int, taskId: Long): DataWriter[InternalRow] =
    new UpdateDataWriter(options, writer, partitionId, BulkLoadWrite.Epoch, changelog)
}
