package io.sharedstate.spark.durable

import io.sharedstate.core.{EventTime, RejectedUpdate, State, StateReplay, UpdateBatch}
import io.sharedstate.core.codec.{PartitionSnapshot, SnapshotCodec}
import io.sharedstate.spark.durable.ChangelogSchema.{Events, JournalPartition}
import java.util.concurrent.{Callable, Executors}

/**
 * Rebuilds a State from its tables: each partition from its latest snapshot, then the journal's
 * events are replayed in order (see [[StateReplay]]), each commit with those of its epoch's updates
 * that the partition's snapshot does not hold yet, in the order its tasks sent them. Partitions
 * (snapshots and changelog) are read and decoded in parallel. Returns the order number for the next
 * journal event.
 */
object StateRecovery {
  def replay(state: State, log: DeltaChangelog, snapshots: Option[SnapshotTable], threads: Int = 4): Long = {
    val partitions = JournalPartition until state.partitionCount
    val pool = Executors.newFixedThreadPool(math.max(1, math.min(threads, partitions.size)))
    val (rows, restored) = try {
      val snapshotReads = (0 until state.partitionCount).map { p =>
        pool.submit((() => snapshots.flatMap(_.latest(p)).map(s => s.id -> SnapshotCodec.decode(s.bytes))): Callable[Option[(Long, PartitionSnapshot)]])
      }
      val rowReads = partitions.map(p => pool.submit((() => log.readPartition(p)): Callable[IndexedSeq[ChangelogRow]]))
      (rowReads.flatMap(_.get()), snapshotReads.map(_.get()))
    } finally pool.shutdown()
    // Per partition, the last journal event its snapshot holds (-1: no snapshot, replay everything).
    val holdsUpTo = restored.map(_.fold(-1L)(_._1))
    restored.flatten.foreach { case (_, snapshot) => state.restorePartition(snapshot) }
    val (events, allUpdates) = rows.partition(_.isEvent)
    val commitSeq = events.filter(_.event == Events.Commit).map(e => (e.writer, e.epoch) -> e.commitSeq.longValue).toMap
    val updates = allUpdates.filter { r =>
      r.partition == JournalPartition || commitSeq.get((r.writer, r.epoch)).forall(_ > holdsUpTo(r.partition))
    }
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
