package io.sharedstate.spark.changes

import io.sharedstate.spark.cluster.{ClusterNode, StateAccess, StateClient, StateController}
import io.sharedstate.spark.rows.{ChangeRows, StateSchemas}

import io.sharedstate.core.{Change, ChangeSubscription, EventTime, SharedStateException}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.InputPartition
import org.apache.spark.sql.connector.read.streaming.{
  ContinuousPartitionReader,
  ContinuousPartitionReaderFactory,
  ContinuousStream,
  Offset,
  PartitionOffset
}

/**
 * Where one continuous reader is: it has read `index` changes of the range [from, until) (a range
 * below U, so re-reading it after a restart gives the same changes in the same order). `partition`
 * is the State partition it reads (cluster mode, older checkpoints), or [[ChangePosition.Merged]]:
 * every partition, merged by the change feed in (timestamp, partition, key) order (local mode). A
 * cluster host's reader has a `group`: the partitions that host owned, merged in the same order
 * (`partition` is the lowest of them).
 */
private[sharedstate] final case class ChangePosition(partition: Int, from: Long, until: Long, index: Int,
    group: Seq[Int] = Nil)
    extends PartitionOffset {
  def json: String = s"$partition:$from:$until:$index" + (if (group.isEmpty) "" else group.mkString(":", "+", ""))

  /** The State partitions this reader reads. */
  def partitions: Seq[Int] = if (group.nonEmpty) group else Seq(partition)
}

private[sharedstate] object ChangePosition {
  val Merged: Int = -1

  def parse(text: String): ChangePosition = text.split(':') match {
    case Array(p, f, u, i) => ChangePosition(p.toInt, f.toLong, u.toLong, i.toInt)
    case Array(p, f, u, i, g) => ChangePosition(p.toInt, f.toLong, u.toLong, i.toInt, g.split('+').map(_.toInt).toSeq)
    case _ => throw new IllegalArgumentException(s"not a change-stream position: $text")
  }
}

/** A continuous offset of a change stream: the position of every partition. */
private[sharedstate] final case class ChangePositions(positions: Seq[ChangePosition]) extends Offset {
  override def json(): String = positions.sortBy(_.partition).map(_.json).mkString(",")
}

/**
 * A continuous reader of one State partition, or of a group that no host owns as a whole any more
 * (the layout changed since the checkpoint), polling U and scanning (cluster mode).
 */
private[sharedstate] final case class ChangeTail(stateName: String, start: ChangePosition, pollMs: Long,
    host: Option[String])
    extends InputPartition {
  override def preferredLocations(): Array[String] = host.toArray
}

/** The continuous reader of the query's change subscription (local mode). */
private[sharedstate] final case class ChangeFeedTail(stateName: String, subscription: Long, start: ChangePosition,
    waitMs: Long)
    extends InputPartition

/** The continuous reader of one host's partitions, from the query's subscription on that host (cluster mode). */
private[sharedstate] final case class HostChangeTail(stateName: String, incarnation: Long, feed: HostFeed,
    start: ChangePosition,
    waitMs: Long, pollMs: Long)
    extends InputPartition {
  override def preferredLocations(): Array[String] = Array(feed.location)
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

  private def hostGroups(start: Long): Seq[ChangePosition] = {
    val route = HostChangeFeeds.layout(state.name)
    route.hosts.map { h =>
      val g = route.partitionsOf(h); ChangePosition(g.min, start, start, 0, g)
    }
  }

  override def deserializeOffset(json: String): Offset =
    ChangePositions(json.split(',').filter(_.nonEmpty).map(ChangePosition.parse).toSeq)

  override def planInputPartitions(start: Offset): Array[InputPartition] =
    start.asInstanceOf[ChangePositions].positions match {
      case Seq(merged) if merged.partition == ChangePosition.Merged =>
        ChangeStreams.subscription(state, subscription, merged.from) match {
          case Some(sub) =>
            subscription = sub
            Array(ChangeFeedTail(state.name, sub.id, merged, ChangeContinuousStream.WaitMs))
          case None if merged.index == 0 && merged.from == merged.until => // a fresh start: any plan fits
            perHost(hostGroups(merged.from))
          case None => throw new SharedStateException(s"The continuous change stream of State '${state.name}' " +
              "was checkpointed in local mode (one merged reader) and cannot resume mid-range in a cluster; restart " +
              "it with a new checkpointLocation.")
        }
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
    ChangeStreams.advance(state, reader, below)
    if (subscription != null) subscription.commit(below)
    if (hostFeeds != null) HostChangeFeeds.commit(StateAccess.clusterNode, hostFeeds, below)
  }

  override def stop(): Unit = {
    if (subscription != null) { subscription.close(); subscription = null }
    if (hostFeeds != null) { HostChangeFeeds.close(StateAccess.clusterNode, hostFeeds); hostFeeds = null }
  }
}

private[sharedstate] object ChangeContinuousStream {

  /** How often an idle per-partition reader looks at U (cluster mode). */
  val PollMs = 10L

  /** How long the merged reader waits for U at a time before it looks again (it is woken when U moves). */
  val WaitMs = 200L
}

private[sharedstate] final class ChangeTailReaderFactory(schemas: StateSchemas)
    extends ContinuousPartitionReaderFactory {
  override def createReader(partition: InputPartition): ContinuousPartitionReader[InternalRow] = partition match {
    case feed: ChangeFeedTail => new ChangeFeedTailReader(feed, new ChangeRows(schemas))
    case tail: ChangeTail => new ChangeTailReader(tail, new ChangeRows(schemas))
    case tail: HostChangeTail => new HostChangeTailReader(tail, new ChangeRows(schemas), StateAccess.clusterNode)
  }
}

/** Reads the query's change subscription; blocks in next() until U passes more (Spark interrupts it on stop). */
private[sharedstate] final class ChangeFeedTailReader(tail: ChangeFeedTail, rows: ChangeRows)
    extends ContinuousPartitionReader[InternalRow] {
  private val subscription = StateClient.of(tail.stateName).changeSubscription(tail.subscription)
  private var from = tail.start.from
  private var until = tail.start.until
  private var buffer: Array[Change] = null // the resumed range is read at the first next()
  private var index = tail.start.index
  private var current: InternalRow = _

  override def next(): Boolean =
    try {
      if (buffer == null) {
        // A restart may find U below where the checkpoint was (a durable State still recovering): wait.
        while (subscription.completeThrough < until) subscription.awaitBeyond(until - 1, tail.waitMs)
        buffer = if (until > from) subscription.changes(from, until) else Array.empty
      }
      while (index >= buffer.length) {
        val reached = subscription.awaitBeyond(until, tail.waitMs)
        if (reached > until) {
          from = until
          until = reached
          buffer = subscription.changes(from, until)
          index = 0
        }
      }
      current = rows.row(buffer(index))
      index += 1
      true
    } catch { case _: InterruptedException => false }

  override def get(): InternalRow = current

  override def getOffset: PartitionOffset = ChangePosition(ChangePosition.Merged, from, until, index)

  override def close(): Unit = ()
}

/** Blocks in next() until a change is final; Spark interrupts it when the query stops. */
private[sharedstate] final class ChangeTailReader(tail: ChangeTail, rows: ChangeRows)
    extends ContinuousPartitionReader[InternalRow] {
  private val state: StateClient = StateClient.of(tail.stateName)
  private val partitions = tail.start.partitions
  private var from = tail.start.from
  private var until = tail.start.until
  private var buffer: Array[Change] = if (tail.start.until > tail.start.from) read() else Array.empty
  private var index = tail.start.index
  private var current: InternalRow = _

  // One partition as before; a group merged in the host feed's order.
  private def read(): Array[Change] =
    if (partitions.size == 1) state.changes(partitions.head, from, until)
    else HostChangeFeeds.scan(state, partitions, from, until)

  override def next(): Boolean = {
    while (index >= buffer.length) {
      val u = partitions.map(state.updateProgressAt).min
      if (u > until && u != EventTime.MinusInfinity) {
        from = until
        until = u
        buffer = read()
        index = 0
      } else {
        try Thread.sleep(tail.pollMs)
        catch { case _: InterruptedException => return false }
      }
    }
    current = rows.row(buffer(index))
    index += 1
    true
  }

  override def get(): InternalRow = current

  override def getOffset: PartitionOffset = ChangePosition(tail.start.partition, from, until, index, tail.start.group)

  override def close(): Unit = ()
}

/**
 * Reads the query's subscription on one host: on the host itself it waits on the feed (woken when U
 * moves); from elsewhere it asks the host's frontier every `pollMs`. Spark interrupts it on stop.
 */
private[sharedstate] final class HostChangeTailReader(tail: HostChangeTail, rows: ChangeRows, node: ClusterNode)
    extends ContinuousPartitionReader[InternalRow] {
  private val local = node.localHost != null && node.localHost.id == tail.feed.host
  private var from = tail.start.from
  private var until = tail.start.until
  private var buffer: Array[Change] = null // the resumed range is read at the first next()
  private var index = tail.start.index
  private var current: InternalRow = _

  private def frontier(beyond: Long): Long = {
    val reached = HostChangeFeeds.frontier(node, tail.stateName, tail.incarnation, tail.feed, beyond, tail.waitMs)
    if (!local && reached <= beyond) Thread.sleep(tail.pollMs)
    reached
  }

  private def read(): Array[Change] =
    HostChangeFeeds.read(node, tail.stateName, tail.incarnation, tail.feed, from, until, StateClient.of(tail.stateName))

  override def next(): Boolean =
    try {
      if (buffer == null) {
        // A restart may find U below where the checkpoint was (a host still catching up): wait.
        while (until != EventTime.MinusInfinity && frontier(until - 1) < until) ()
        buffer = if (until > from) read() else Array.empty
      }
      while (index >= buffer.length) {
        val reached = frontier(until)
        if (reached > until) {
          from = until
          until = reached
          buffer = read()
          index = 0
        }
      }
      current = rows.row(buffer(index))
      index += 1
      true
    } catch { case e: Throwable if HostChangeFeeds.interrupted(e) => false }

  override def get(): InternalRow = current

  override def getOffset: PartitionOffset = ChangePosition(tail.start.partition, from, until, index, tail.start.group)

  override def close(): Unit = ()
}
