package io.sharedstate.spark.durable

import io.sharedstate.core.{EventTime, RejectedUpdate, State, StateReplay, UpdateBatch}
import io.sharedstate.spark.durable.ChangelogSchema.{Events, JournalPartition}
import java.util.concurrent.{Callable, Executors}
import scala.jdk.CollectionConverters._

/**
 * Rebuilds a State from its changelog: the partitions are read in parallel, then the journal's
 * events are replayed in order (see [[StateReplay]]), each commit with its epoch's updates in the
 * order its tasks sent them. Returns the order number for the next journal event.
 */
object StateRecovery {
  def replay(state: State, log: DeltaChangelog, version: Option[Long] = None, threads: Int = 4): Long = {
    val partitions = JournalPartition until state.partitionCount
    val pool = Executors.newFixedThreadPool(math.max(1, math.min(threads, partitions.size)))
    val rows = try {
      pool.invokeAll(partitions.map(p => (() => log.readPartition(p, version)): Callable[IndexedSeq[ChangelogRow]]).asJava)
        .asScala.flatMap(_.get()).toIndexedSeq
    } finally pool.shutdown()
    val (events, updates) = rows.partition(_.isEvent)
    // (writer, epoch) -> task -> updates in the order the task sent them
    val epochs = updates.groupBy(r => (r.writer, r.epoch)).map { case (id, rs) =>
      id -> rs.groupBy(_.task).toSeq.sortBy(_._1).map { case (_, taskRows) => toBatch(taskRows.sortBy(_.seq)) }
    }
    val replay = new StateReplay(state)
    events.sortBy(_.commitSeq.longValue).foreach { e =>
      e.event match {
        case Events.Register => replay.registered(e.writer, e.writerProgress.longValue)
        case Events.Commit =>
          replay.committed(e.writer, e.epoch, e.updateProgress.longValue, e.writerProgress.longValue, finish = false,
            epochs.getOrElse((e.writer, e.epoch), Nil))
        case Events.Finish => replay.finished(e.writer)
        case Events.Deregister => replay.deregistered(e.writer)
        case other => throw new IllegalStateException(s"Unknown event '$other' in the changelog at ${log.path}")
      }
    }
    replay.finish()
    events.map(_.commitSeq.longValue).foldLeft(-1L)(math.max) + 1
  }

  private def toBatch(rows: Seq[ChangelogRow]): UpdateBatch = {
    val b = new UpdateBatch
    rows.foreach { r =>
      if (r.key == null) b.reject(RejectedUpdate(null, r.timestamp, r.value, RejectedUpdate.NullKey, r.writer, r.epoch, EventTime.MinusInfinity))
      else if (r.timestamp == null) b.reject(RejectedUpdate(r.key, null, r.value, RejectedUpdate.NullTime, r.writer, r.epoch, EventTime.MinusInfinity))
      else b.add(r.key, r.timestamp.longValue, r.value)
    }
    b
  }
}
