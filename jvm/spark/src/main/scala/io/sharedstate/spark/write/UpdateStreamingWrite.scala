package io.sharedstate.spark.write

import io.sharedstate.spark.cluster.{Coordinator, Incarnations, StateController}
import io.sharedstate.spark.config.UpdateOptions
import io.sharedstate.spark.durable.DurableStates

import io.sharedstate.core.EventTime
import org.apache.spark.internal.Logging
import org.apache.spark.sql.connector.write.{PhysicalWriteInfo, WriterCommitMessage}
import org.apache.spark.sql.connector.write.streaming.{StreamingDataWriterFactory, StreamingWrite}

/**
 * The driver side of a streaming write into a State. The query is registered as an update writer
 * (holding U back until it commits); each epoch commit stages the epoch's updates and reports the
 * writer's progress, its event-time watermark: max event time seen minus the allowed lateness.
 */
private[sharedstate] final class UpdateStreamingWrite(options: UpdateOptions, writer: String)
    extends StreamingWrite with Logging {

  private val state: StateController = Coordinator.get.state(options.stateName)
  state.registerWriter(writer)
  private val committer = new EpochCommitter(state, writer, options.latenessMicros)
  @volatile private var tasks: Option[Int] = None // the input partitions of a partial State's writer

  // Spark asks for a factory per micro-batch, which only runs when there is input.
  override def createStreamingWriterFactory(info: PhysicalWriteInfo): StreamingDataWriterFactory = {
    WriterLifecycle.input(options.stateName, writer)
    tasks = Some(PartialInstance.checkTasks(options, writer, tasks, info.numPartitions))
    new UpdateWriterFactory(options, writer, DurableStates.target(options.stateName))
  }

  override def useCommitCoordinator(): Boolean = true

  override def commit(epochId: Long, messages: Array[WriterCommitMessage]): Unit = {
    Incarnations.check(options.stateName, options.incarnation, Coordinator.get.state(options.stateName).incarnation,
      "writer")
    // A continuous query commits epochs with or without input: only input counts against idleness.
    if (messages.exists { case m: UpdateCommitMessage => m.staged + m.rejected > 0; case _ => false })
      WriterLifecycle.input(options.stateName, writer)
    val outcome = committer.commit(epochId, messages)
    logInfo(s"State ${state.name}: writer $writer epoch $epochId committed " +
      s"(accepted ${outcome.accepted}, rejected ${outcome.rejected}, U=${EventTime.show(outcome.updateProgress)})")
  }

  override def abort(epochId: Long, messages: Array[WriterCommitMessage]): Unit =
    state.abortEpoch(writer, epochId)
}
