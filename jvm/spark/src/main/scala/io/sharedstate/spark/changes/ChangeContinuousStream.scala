package io.sharedstate.spark.changes

import io.sharedstate.spark.cluster.{StateAccess, StateClient, StateController}
import io.sharedstate.spark.rows.StateSchemas

import io.sharedstate.core.ChangeSubscription
import org.apache.spark.sql.connector.read.InputPartition
import org.apache.spark.sql.connector.read.streaming.{
  ContinuousPartitionReaderFactory,
  ContinuousStream,
  Offset,
  PartitionOffset
}

/**
 * The change stream of a State in continuous mode; each newly final range [previous U, U) is emitted
 * as soon as U passes it, in timestamp order, and F follows the committed epochs' positions.
 *
 * Local mode: one long-running reader on the query's change subscription (core ChangeFeed, through
 * the ESG), woken by the committer when U advances; its position is (from, until, index) over the
 * merged order, so a restart opens a subscription at `from` and skips `index` changes exactly.
 * Cluster mode: one reader per host on the query's subscription to that host's feed (see
 * [[HostChangeFeeds]]), its position (from, until, index) over the merged order of the host's
 * partitions (its group). A restart on another layout reads each old group by scan.
 */
private[sharedstate] final class ChangeContinuousStream(state: StateController, schemas: StateSchemas, starting: String,
    checkpointLocation: String)
    extends ContinuousStream {

  private val reader = ChangeStreams.register(state, checkpointLocation)
  private val local = state.owners.isEmpty
  private var subscription: ChangeSubscription = null // local mode
  private var hostFeeds: HostFeedSet = null // cluster mode

  override def initialOffset(): Offset = {
    val start = ChangeStreams.start(state, starting)
    if (local) ChangePositions(Seq(ChangePosition(ChangePosition.Merged, start, start, 0)))
    else ChangePositions(hostGroups(start))
  }

  private def hostGroups(start: Long): Seq[ChangePosition] = ChangeMicroBatchStream.hostGroups(state.name, start)

  override def deserializeOffset(json: String): Offset =
    ChangePositions(json.split(',').filter(_.nonEmpty).map(ChangePosition.parse).toSeq)

  override def planInputPartitions(start: Offset): Array[InputPartition] =
    start.asInstanceOf[ChangePositions].positions match {
      case Seq(merged) if merged.partition == ChangePosition.Merged =>
        val (kept, partitions) = ChangeStreams.mergedPlan(state, subscription, merged, "continuous", perHost)
        subscription = kept
        partitions
      case positions if positions.forall(_.group.nonEmpty) => perHost(positions)
      // A checkpoint written by per-partition readers: keep reading per partition.
      case positions => perPartition(positions)
    }

  // One reader per host on its feed while each position's group is a host's partitions; else by scan.
  private def perHost(positions: Seq[ChangePosition]): Array[InputPartition] = {
    if (hostFeeds != null) { HostChangeFeeds.close(StateAccess.clusterNode, hostFeeds); hostFeeds = null }
    val route = HostChangeFeeds.layout(state.name)
    val byHost = route.hosts.flatMap(h => positions.find(_.group == route.partitionsOf(h)).map(h -> _)).toMap
    if (byHost.size == positions.size && byHost.size == route.hosts.size) {
      hostFeeds = HostChangeFeeds.open(StateAccess.clusterNode, route, byHost(_).from,
        () => HostChangeFeeds.layout(state.name)).orNull
    }
    HostChangeFeeds.countPlan(host = hostFeeds != null)
    if (hostFeeds == null) perPartition(positions)
    else hostFeeds.feeds.map(f =>
      HostChangeTail(state.name, route.incarnation, f, byHost(f.host),
        ChangeContinuousStream.WaitMs, ChangeContinuousStream.PollMs): InputPartition).toArray
  }

  private def perPartition(positions: Seq[ChangePosition]): Array[InputPartition] = {
    val client = StateClient.of(state.name)
    positions.sortBy(_.partition)
      .map(p =>
        ChangeTail(state.name, p, ChangeContinuousStream.PollMs, client.preferredHost(p.partition)): InputPartition)
      .toArray
  }

  override def mergeOffsets(offsets: Array[PartitionOffset]): Offset =
    ChangePositions(offsets.map(_.asInstanceOf[ChangePosition]).toSeq)

  override def createContinuousReaderFactory(): ContinuousPartitionReaderFactory = new ChangeTailReaderFactory(schemas)

  // Below the start of every partition's current range, all changes are read.
  override def commit(end: Offset): Unit = {
    val below = end.asInstanceOf[ChangePositions].positions.map(_.from).min
    ChangeStreams.commit(state, reader, subscription, hostFeeds, below)
  }

  override def stop(): Unit = {
    ChangeStreams.close(subscription, hostFeeds)
    subscription = null
    hostFeeds = null
  }
}

private[sharedstate] object ChangeContinuousStream {

  /** How often an idle per-partition reader looks at U (cluster mode). */
  val PollMs = 10L

  /** How long the merged reader waits for U at a time before it looks again (it is woken when U moves). */
  val WaitMs = 200L
}
