package io.sharedstate.spark

import io.sharedstate.core.{SharedStateException, StateMetrics, StateSpec, WriterStatus}
import io.sharedstate.spark.cluster.{ClusterStateController, Coordinator, StateController}
import io.sharedstate.spark.config.ReadOptions
import io.sharedstate.spark.durable.{DurableStates, SnapshotRound}
import io.sharedstate.spark.fetch.FetchJoin
import io.sharedstate.spark.rows.StateSchemas
import org.apache.spark.sql.{DataFrame, SparkSession}

/** A handle on one State of this application: what Scala and (through py4j) Python call. */
final class StateHandle private[spark] (spark: SparkSession, val name: String) {
  private def controller: StateController = Coordinator.get.state(name)

  def spec: StateSpec = controller.spec
  def schemas: StateSchemas = StateSchemas.of(spec)

  /** The column fetch joins and as-of reads put the timestamp of the value used in. */
  def timeColumn: String = schemas.timeColumn

  /** U, F, per-writer and per-reader progress, sizes and counts. A read-only State catches up first. */
  def progress: StateMetrics = {
    DurableStates.catchUp(name)
    controller.metrics
  }

  /** Per key, the newest final value at or before `time` (a timestamp in the session time zone). */
  def asOf(time: String): DataFrame =
    spark.read.format("sharedstate").option("state", name).option(ReadOptions.AsOf, time).load()

  /** A partial State as of `time` by instance: per key and instance, its value in the newest version at or before it. */
  def asOfInstances(time: String): DataFrame = spark.read.format("sharedstate").option("state", name)
    .option(ReadOptions.AsOf, time).option(ReadOptions.Instances, "true").load()

  /** Per key, the newest final value. */
  def latest: DataFrame = spark.read.format("sharedstate").option("state", name).load()

  /** Late and rejected updates, with the reason and the U they arrived at. */
  def lateUpdates: DataFrame =
    spark.read.format("sharedstate").option("state", name).option(ReadOptions.Table, ReadOptions.RejectedTable).load()

  /** The change stream (see changes.ChangeMicroBatchStream): `earliest` or `latest`. */
  def changes(startingOffsets: String = ReadOptions.Earliest): DataFrame =
    spark.readStream.format("sharedstate").option("state", name).option(ReadOptions.StartingOffsets, startingOffsets)
      .load()

  /** See fetch.FetchJoin. */
  def fetchJoin(events: DataFrame, keys: Seq[String], time: String, rule: String = "latest",
      mode: String = "committed", how: String = "left", staleness: String = null, window: String = null,
      continuous: Boolean = false, lateness: String = null, scope: String = "global"): DataFrame =
    FetchJoin(events, name, keys, time, rule, mode, how, staleness, window, continuous, lateness, scope)

  /** Takes a snapshot round of a durable State now (see durable.Snapshotter); what it did. */
  def snapshot(): SnapshotRound = DurableStates.snapshot(name)

  /** The newest snapshot rounds this application's owner took (on request, periodic, on change), oldest first. */
  def snapshotRounds: Seq[SnapshotRound] = DurableStates.recentRounds(name)

  /** The root directory of a durable State's Delta tables; None for an in-memory State. */
  def root: Option[String] = DurableStates.rootOf(name)

  /** Why this application has the (durable) State read-only (it follows the owner); None when it may write. */
  def readOnly: Option[String] = DurableStates.readOnly(name)

  /** The executor id hosting each partition; empty in local mode, where the driver's JVM hosts them all. */
  def hosts: Seq[String] = controller.owners.map(_.executorId)

  /** Partitions that changed executor: rebuilt after theirs was lost, or moved live (cluster mode). */
  def moves: Seq[PartitionMove] = controller.moves.map(StateHandle.partitionMove)

  /**
   * Moves `partition` to executor `executor` while writers, fetch joins and change streams go on (cluster
   * mode; see docs/elasticity.md); what moved (nothing if it is there already).
   */
  def move(partition: Int, executor: String): Seq[PartitionMove] =
    Coordinator.get.move(name, Seq(partition), executor).map(StateHandle.partitionMove)

  /** Spreads the partitions evenly over the live executors, moving them live; what moved (nothing in local mode). */
  def rebalance(): Seq[PartitionMove] = Coordinator.get.rebalance(name).map(StateHandle.partitionMove)

  /**
   * The State's update writers: progress, last committed epoch, and status (`active`: holds U back;
   * `paused`: its query is not running or it is idle; `finished`). A writer's id is its query's id.
   */
  def writers: Seq[WriterStatus] = controller.writerStatuses

  /** `writer` is done for good: it no longer holds U back (once every writer is done, U is +infinity). */
  def finishWriter(writer: String): Unit = { requireWriter(writer); controller.finishWriter(writer) }

  /** Forgets `writer` and what it staged: it no longer holds U back; if it runs again it joins at the current U. */
  def removeWriter(writer: String): Unit = { requireWriter(writer); controller.deregisterWriter(writer) }

  /** The State's readers (fetch joins, change streams) and their fetch progress F, in microseconds. */
  def readers: Map[String, Long] = controller.metrics.readers

  /** Forgets `reader`: it no longer holds F (and so compaction) back. */
  def removeReader(reader: String): Unit = {
    if (controller.readerProgress(reader).isEmpty) throw new SharedStateException(
      s"State '$name' has no reader '$reader'. Its readers: ${readers.keys.toSeq.sorted.mkString(", ")}.")
    controller.deregisterReader(reader)
  }

  private def requireWriter(writer: String): Unit =
    if (!writers.exists(_.writer == writer)) throw new SharedStateException(
      s"State '$name' has no writer '$writer'. Its writers: ${writers.map(_.writer).mkString(", ")}.")

  def drop(): Boolean = Coordinator.get.drop(name)

  override def toString: String = s"StateHandle($name)"
}

private object StateHandle {
  def partitionMove(m: ClusterStateController.Move): PartitionMove =
    PartitionMove(m.partitions, m.from.executorId, m.to.executorId, m.millis, m.reason)
}
