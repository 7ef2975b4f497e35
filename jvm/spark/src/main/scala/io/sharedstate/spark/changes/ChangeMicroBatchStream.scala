package io.sharedstate.spark.changes

import io.sharedstate.spark.cluster.{StateAccess, StateClient, StateController}
import io.sharedstate.spark.rows.StateSchemas

import io.sharedstate.core.{ChangeSubscription, SharedStateException}
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming.{Offset, PartitionOffset, SupportsRealTimeMode}

/**
 * The change stream of a State in micro-batch mode. Offsets are update progress U: a batch reads the
 * applied pairs with timestamps in [previous U, U), which are final, so a re-run batch reads exactly
 * the same changes (exactly-once with any idempotent or transactional sink). The stream is a reader of
 * the State: its fetch progress F is the last committed offset, so compaction keeps every pair it has
 * not read yet, also while the query is stopped.
 *
 * Local mode: the stream subscribes to the State's change feed (core ChangeFeed, through the ESG) and
 * a batch is one input partition that takes the subscription's changes in its range, merged across
 * State partitions in (timestamp, partition, key) order; nothing scans the State per batch. Cluster
 * mode (partitions on executor hosts): the stream subscribes to every host's own feed and a batch is one
 * input partition per host, merged over that host's partitions (see [[HostChangeFeeds]]); the batch in
 * which the layout of partitions changed is read by scan, one input partition per State partition.
 *
 * Real-time mode (`Trigger.RealTime`): continuous mode's long-running readers with Spark's deadline
 * ([[ChangeRealtimeReader]]), one on the subscription in local mode, one per host in a cluster,
 * emit each change as soon as U passes it; an epoch ends wherever Spark ends it, so its offset is
 * the readers' positions ([[ChangePositions]], as in continuous mode).
 */
private[sharedstate] object ChangeMicroBatchStream {

  /** Every host's group of partitions (as the route places them), each at `start`. */
  def hostGroups(stateName: String, start: Long): Seq[ChangePosition] = {
    val route = HostChangeFeeds.layout(stateName)
    route.hosts.map { h =>
      val g = route.partitionsOf(h); ChangePosition(g.min, start, start, 0, g)
    }
  }
}

private[sharedstate] final class ChangeMicroBatchStream(protected val state: StateController, schemas: StateSchemas,
    starting: String,
    checkpointLocation: String)
    extends UpdateProgressOffsets with SupportsRealTimeMode {

  private val reader = ChangeStreams.register(state, checkpointLocation)
  private var subscription: ChangeSubscription = null // local mode, opened at the first planned batch
  private var hostFeeds: HostFeedSet = null // cluster mode, opened at the first planned batch

  override def initialOffset(): Offset = ChangeOffset(ChangeStreams.start(state, starting))

  override def planInputPartitions(start: Offset, end: Offset): Array[InputPartition] = {
    val (from, until) = range(start, end)
    ChangeStreams.subscription(state, subscription, from) match {
      case Some(sub) =>
        subscription = sub
        Array(ChangeFeedRange(state.name, sub.id, from, until))
      case None => clusterPlan(from, until)
    }
  }

  // Host feeds while the layout stays; the batch in which it changed is read by scan (see HostChangeFeeds).
  private def clusterPlan(from: Long, until: Long): Array[InputPartition] = {
    val node = StateAccess.clusterNode
    val route = HostChangeFeeds.layout(state.name)
    var moved = false
    if (hostFeeds != null && !(HostChangeFeeds.sameLayout(hostFeeds.route, route) && from >= hostFeeds.keptFrom)) {
      moved = !HostChangeFeeds.sameLayout(hostFeeds.route, route)
      HostChangeFeeds.close(node, hostFeeds)
      hostFeeds = null
    }
    if (hostFeeds == null && !moved) {
      hostFeeds = HostChangeFeeds.open(node, route, _ => from, () => HostChangeFeeds.layout(state.name)).orNull
    }
    HostChangeFeeds.countPlan(host = hostFeeds != null)
    if (hostFeeds != null) {
      hostFeeds.feeds.map(f => HostChangeRange(state.name, hostFeeds.route.incarnation, f, from, until): InputPartition).toArray
    } else {
      val client = StateClient.of(state.name)
      Array.tabulate[InputPartition](state.partitionCount)(p =>
        ChangeRange(state.name, p, from, until, client.preferredHost(p)))
    }
  }

  override def createReaderFactory(): PartitionReaderFactory = new ChangeRangeReaderFactory(schemas)

  // Real-time mode: one long-running reader per input partition from the epoch's start, as in
  // continuous mode (ChangeContinuousStream): the local subscription's, or one per cluster host.
  override def planInputPartitions(start: Offset): Array[InputPartition] = {
    val positions = start match {
      case ChangeOffset(u) if state.owners.isEmpty => Seq(ChangePosition(ChangePosition.Merged, u, u, 0))
      case ChangeOffset(u) => ChangeMicroBatchStream.hostGroups(state.name, u)
      case ChangePositions(ps) => ps
      case other => throw new SharedStateException(
          s"The real-time change stream of State '${state.name}' cannot resume from offset ${other.json}.")
    }
    positions match {
      case Seq(merged) if merged.partition == ChangePosition.Merged =>
        val (kept, partitions) = ChangeStreams.mergedPlan(state, subscription, merged, "real-time", realtimePerHost)
        subscription = kept
        partitions
      case ps if ps.forall(_.group.nonEmpty) => realtimePerHost(ps)
      case ps => perPartition(ps) // a checkpoint of per-partition readers
    }
  }

  // One reader per host on its subscription while each position's group is a host's partitions (the
  // subscriptions are kept from epoch to epoch while the layout stays); else each group by scan.
  private def realtimePerHost(positions: Seq[ChangePosition]): Array[InputPartition] = {
    val node = StateAccess.clusterNode
    val route = HostChangeFeeds.layout(state.name)
    val byHost = route.hosts.flatMap(h => positions.find(_.group == route.partitionsOf(h)).map(h -> _)).toMap
    val fits = byHost.size == positions.size && byHost.size == route.hosts.size
    if (hostFeeds != null &&
      !(fits && HostChangeFeeds.sameLayout(hostFeeds.route, route) && positions.forall(_.from >= hostFeeds.keptFrom))) {
      HostChangeFeeds.close(node, hostFeeds)
      hostFeeds = null
    }
    if (hostFeeds == null && fits)
      hostFeeds = HostChangeFeeds.open(node, route, byHost(_).from, () => HostChangeFeeds.layout(state.name)).orNull
    HostChangeFeeds.countPlan(host = hostFeeds != null)
    if (hostFeeds == null) perPartition(positions)
    else hostFeeds.feeds.map(f =>
      HostChangeTail(state.name, route.incarnation, f, byHost(f.host), ChangeContinuousStream.WaitMs,
        ChangeContinuousStream.PollMs): InputPartition).toArray
  }

  private def perPartition(positions: Seq[ChangePosition]): Array[InputPartition] = {
    val client = StateClient.of(state.name)
    positions.sortBy(_.partition).map(p =>
      ChangeTail(state.name, p, ChangeContinuousStream.PollMs, client.preferredHost(p.partition)): InputPartition)
      .toArray
  }

  override def mergeOffsets(offsets: Array[PartitionOffset]): Offset =
    ChangePositions(offsets.toSeq.map(_.asInstanceOf[ChangePosition]))

  // A real-time epoch's offset is a position (it has ':'), a micro-batch's is U.
  override def deserializeOffset(json: String): Offset =
    if (json.contains(':')) ChangePositions(json.split(',').filter(_.nonEmpty).map(ChangePosition.parse).toSeq)
    else super.deserializeOffset(json)

  override def commit(end: Offset): Unit = {
    // A real-time epoch may end inside a range: everything below its start is read.
    val until = end match {
      case ChangePositions(positions) => positions.map(_.from).min
      case o => o.asInstanceOf[ChangeOffset].until
    }
    ChangeStreams.commit(state, reader, subscription, hostFeeds, until)
  }

  override def stop(): Unit = {
    ChangeStreams.close(subscription, hostFeeds)
    subscription = null
    hostFeeds = null
  }
}
