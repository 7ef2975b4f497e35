package io.sharedstate.spark.changes

import io.sharedstate.spark.cluster.{ClusterNode, StateAccess, StateClient}
import io.sharedstate.spark.rows.{ChangeRows, StateSchemas}

import io.sharedstate.core.{Change, ChangesNotFinalException, EventTime}
import scala.annotation.tailrec
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.InputPartition
import org.apache.spark.sql.connector.read.streaming.{
  ContinuousPartitionReader,
  ContinuousPartitionReaderFactory,
  PartitionOffset
}

/**
 * A long-running change reader of continuous mode that can also stop waiting at a deadline, which
 * real-time mode needs (its `nextWithTimeout`, [[ChangeRealtimeReader]]): `next()` waits until a
 * change is final, and returns false only when Spark interrupts it (the query stops).
 */
private[sharedstate] trait ChangeTailing extends ContinuousPartitionReader[InternalRow] {

  /** The next change, waiting until `deadlineNanos` (`System.nanoTime`) at most; false if none came by then. */
  def nextBefore(deadlineNanos: Long): Boolean

  override def next(): Boolean = nextBefore(Long.MaxValue)
}

private[sharedstate] object ChangeTailing {

  /** Milliseconds left before `deadlineNanos`, at most `capMs`; <= 0 once it passed. */
  def leftMs(deadlineNanos: Long, capMs: Long): Long =
    if (deadlineNanos == Long.MaxValue) capMs else math.min(capMs, (deadlineNanos - System.nanoTime()) / 1000000L)
}

private[sharedstate] final class ChangeTailReaderFactory(schemas: StateSchemas)
    extends ContinuousPartitionReaderFactory {
  override def createReader(partition: InputPartition): ChangeTailing = partition match {
    case feed: ChangeFeedTail => new ChangeFeedTailReader(feed, new ChangeRows(schemas))
    case tail: ChangeTail => new ChangeTailReader(tail, new ChangeRows(schemas))
    case tail: HostChangeTail => new HostChangeTailReader(tail, new ChangeRows(schemas), StateAccess.clusterNode)
  }
}

/**
 * Reads the query's change subscription (local mode); waits until U passes more (woken by the
 * committer), and Spark interrupts it on stop.
 */
private[sharedstate] final class ChangeFeedTailReader(tail: ChangeFeedTail, rows: ChangeRows) extends ChangeTailing {
  private val subscription = StateClient.of(tail.stateName).changeSubscription(tail.subscription)
  private var from = tail.start.from
  private var until = tail.start.until
  private var buffer: Array[Change] = null // the resumed range is read at the first call
  private var index = tail.start.index
  private var current: InternalRow = _

  override def nextBefore(deadlineNanos: Long): Boolean =
    try {
      if (buffer == null) {
        // A restart may find U below where the checkpoint was (a durable State still recovering): wait.
        while (subscription.completeThrough < until) {
          val left = ChangeTailing.leftMs(deadlineNanos, tail.waitMs)
          if (left <= 0) return false
          subscription.awaitBeyond(until - 1, left)
        }
        buffer = if (until > from) subscription.changes(from, until) else Array.empty
      }
      while (index >= buffer.length) {
        val left = ChangeTailing.leftMs(deadlineNanos, tail.waitMs)
        if (left <= 0) return false
        val reached = subscription.awaitBeyond(until, left)
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

/** Polls U of its partitions until a change is final; Spark interrupts it when the query stops. */
private[sharedstate] final class ChangeTailReader(tail: ChangeTail, rows: ChangeRows) extends ChangeTailing {
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

  override def nextBefore(deadlineNanos: Long): Boolean = {
    while (index >= buffer.length) {
      val u = partitions.map(state.updateProgressAt).min
      if (u > until && u != EventTime.MinusInfinity) {
        from = until
        until = u
        buffer = read()
        index = 0
      } else {
        val left = ChangeTailing.leftMs(deadlineNanos, tail.pollMs)
        if (left <= 0) return false
        try Thread.sleep(left)
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
 *
 * Once a partition of its group has moved live to another host (the route says so), the host's
 * frontier is no longer its clock (a host that gave all its partitions away gets no more steps, and
 * its subscription may be gone): it follows U of its partitions where they are now, and each range
 * is read by scan there (the host answers "moved", see HostChangeFeeds.read).
 */
private[sharedstate] final class HostChangeTailReader(tail: HostChangeTail, rows: ChangeRows, node: ClusterNode)
    extends ChangeTailing {
  private val local = node.localHost != null && node.localHost.id == tail.feed.host
  private var from = tail.start.from
  private var until = tail.start.until
  private var buffer: Array[Change] = null // the resumed range is read at the first next()
  private var index = tail.start.index
  private var current: InternalRow = _
  private var moved = false
  private var routeCheckedAt = 0L

  // Waits up to `waitMs` (on the host) or asks once and sleeps up to `pollMs` (elsewhere) for more.
  private def frontier(beyond: Long, waitMs: Long, pollMs: Long): Long = {
    val reached =
      if (moved) movedFrontier()
      else
        try HostChangeFeeds.frontier(node, tail.stateName, tail.incarnation, tail.feed, beyond, waitMs)
        catch {
          case e: Exception if !HostChangeFeeds.interrupted(e) =>
            if (checkMoved(force = true)) movedFrontier() else throw e
        }
    if (reached > beyond) reached
    else {
      val after = if (!moved && checkMoved(force = false)) movedFrontier() else reached
      if ((moved || !local) && after <= beyond) Thread.sleep(pollMs)
      after
    }
  }

  // The route is asked at most once a second (from an executor it is a call to the driver).
  private def checkMoved(force: Boolean): Boolean = {
    val now = System.nanoTime()
    if (force || now - routeCheckedAt > 1000000000L) {
      routeCheckedAt = now
      val owners = node.currentRoute(tail.stateName).owners
      moved = tail.feed.partitions.exists(owners(_) != tail.feed.host)
    }
    moved
  }

  private lazy val client = node.client(tail.stateName) // routed to where the partitions are now

  private def movedFrontier(): Long = tail.feed.partitions.map(client.updateProgressAt).min

  private def read(): Array[Change] = readFinal(System.nanoTime() + HostChangeTailReader.NotFinalWaitNanos)

  // The range is final where `frontier` looked (the feed's host, or its partitions' owners): a host a
  // step behind, or a new owner that started from the driver's U, gets there shortly (see
  // ChangesNotFinalException), so the read is asked again until then.
  @tailrec private def readFinal(deadline: Long): Array[Change] = {
    val got =
      try Some(HostChangeFeeds.read(node, tail.stateName, tail.incarnation, tail.feed, from, until, client))
      catch { case e: Exception if HostChangeTailReader.notFinal(e) && System.nanoTime() < deadline => None }
    got match {
      case Some(changes) => changes
      case None => Thread.sleep(math.max(tail.pollMs, 1L)); readFinal(deadline)
    }
  }

  override def nextBefore(deadlineNanos: Long): Boolean =
    try {
      if (buffer == null) {
        // A restart may find U below where the checkpoint was (a host still catching up): wait.
        var behind = until != EventTime.MinusInfinity
        while (behind) {
          val waitMs = ChangeTailing.leftMs(deadlineNanos, tail.waitMs)
          if (waitMs <= 0) return false
          behind = frontier(until - 1, waitMs, math.min(waitMs, tail.pollMs)) < until
        }
        buffer = if (until > from) read() else Array.empty
      }
      while (index >= buffer.length) {
        // the waits end by the deadline: real-time mode ends its epoch there
        val waitMs = ChangeTailing.leftMs(deadlineNanos, tail.waitMs)
        if (waitMs <= 0) return false
        val reached = frontier(until, waitMs, math.min(waitMs, tail.pollMs))
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

private[sharedstate] object HostChangeTailReader {

  /** How long a read waits for a host to catch up with a range final elsewhere before it fails. */
  val NotFinalWaitNanos: Long = 30L * 1000 * 1000 * 1000

  def notFinal(e: Throwable): Boolean =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(10).exists(_.isInstanceOf[ChangesNotFinalException])
}
