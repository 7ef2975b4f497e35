package io.sharedstate.spark.changes

import io.sharedstate.spark.cluster.{StateAccess, StateClient, StateController}
import io.sharedstate.spark.rows.{ChangeRows, StateSchemas}

import io.sharedstate.core.{Change, ChangeSubscription}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming.Offset

/** A micro-batch offset of a change stream: every change with a timestamp below it has been read. */
private[sharedstate] final case class ChangeOffset(until: Long) extends Offset {
  override def json(): String = until.toString
}

/** The changes of one State partition with from <= timestamp < until (cluster mode: read by scan). */
private[sharedstate] final case class ChangeRange(stateName: String, partition: Int, from: Long, until: Long,
    host: Option[String])
    extends InputPartition {
  override def preferredLocations(): Array[String] = host.toArray
}

/** Every partition's changes with from <= timestamp < until, from the query's change subscription (local mode). */
private[sharedstate] final case class ChangeFeedRange(stateName: String, subscription: Long, from: Long, until: Long)
    extends InputPartition

/** One host's changes with from <= timestamp < until, from the query's subscription on that host (cluster mode). */
private[sharedstate] final case class HostChangeRange(stateName: String, incarnation: Long, feed: HostFeed, from: Long,
    until: Long)
    extends InputPartition {
  override def preferredLocations(): Array[String] = Array(feed.location)
}

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
 */
private[sharedstate] final class ChangeMicroBatchStream(protected val state: StateController, schemas: StateSchemas,
    starting: String,
    checkpointLocation: String)
    extends UpdateProgressOffsets {

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

  override def commit(end: Offset): Unit = {
    val until = end.asInstanceOf[ChangeOffset].until
    ChangeStreams.advance(state, reader, until)
    if (subscription != null) subscription.commit(until)
    if (hostFeeds != null) HostChangeFeeds.commit(StateAccess.clusterNode, hostFeeds, until)
  }

  override def stop(): Unit = {
    if (subscription != null) { subscription.close(); subscription = null }
    if (hostFeeds != null) { HostChangeFeeds.close(StateAccess.clusterNode, hostFeeds); hostFeeds = null }
  }
}

private[sharedstate] final class ChangeRangeReaderFactory(schemas: StateSchemas) extends PartitionReaderFactory {
  override def createReader(partition: InputPartition): PartitionReader[InternalRow] = {
    val changes: Array[Change] = partition match {
      case r: ChangeFeedRange => StateClient.of(r.stateName).changeSubscription(r.subscription).changes(r.from, r.until)
      case r: ChangeRange => StateClient.of(r.stateName).changes(r.partition, r.from, r.until)
      case r: HostChangeRange =>
        HostChangeFeeds.read(StateAccess.clusterNode, r.stateName, r.incarnation, r.feed, r.from, r.until,
          StateClient.of(r.stateName))
    }
    val rows = new ChangeRows(schemas)
    new PartitionReader[InternalRow] {
      private var i = -1
      override def next(): Boolean = { i += 1; i < changes.length }
      override def get(): InternalRow = rows.row(changes(i))
      override def close(): Unit = ()
    }
  }
}
