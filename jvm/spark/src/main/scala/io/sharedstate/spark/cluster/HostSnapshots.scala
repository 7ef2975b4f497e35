package io.sharedstate.spark.cluster

import io.sharedstate.core.{Key, State}
import io.sharedstate.core.codec.{PartitionCapture, SnapshotCodec}
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

/**
 * A host's side of a durable State's snapshot rounds. The coordinator asks for a capture while it
 * holds commits ([[capture]]: references to the partition's immutable entries, taken under the
 * State's commit lock), then, with commits flowing again, for its encoding ([[encode]]), and once
 * the snapshot is stored names it ([[stored]]).
 *
 * Deltas without change tracking (a host's partitions do not track changed keys: a live move's
 * pre-copy uses that tracking): the host keeps the stored capture's value sets by identity, with their
 * pair counts. An update either replaces a key's packed value set with a new array or appends newer
 * pairs to the same array, past the pairs any earlier view holds (bytes below a published count never
 * change, see ValueSet), so a key whose array and pair count are the ones the stored capture held is
 * unchanged since; a delta holds every other key. A delta is taken
 * only on the snapshot the host's reference is (`parent`): a partition that moved here, or whose
 * newer snapshot another host stored, is encoded in full.
 */
private[cluster] final class HostSnapshots(state: State) {
  // The capture a round took and has not finished with, per partition (a newer round's replaces it).
  private val pending = new ConcurrentHashMap[Integer, (Long, PartitionCapture)]()
  // The stored snapshot a delta can be taken on, per partition: its id and, by its value sets' identity,
  // their keys and pair counts.
  private val references = new ConcurrentHashMap[Integer, (Long, java.util.IdentityHashMap[Array[Byte], (Key, Int)])]()
  private val tokens = new AtomicLong()

  /** Captures partition `p` at this commit boundary; the token names the capture in [[encode]] and [[stored]]. */
  def capture(p: Int): Long = {
    val (c, _) = state.capturePartitionWith(p, delta = false, startChain = false)(())
    val token = tokens.incrementAndGet()
    pending.put(p, (token, c))
    token
  }

  /** The capture encoded: only the keys changed since snapshot `parent` when this host holds it, else every key. */
  def encode(p: Int, token: Long, parent: Long): Messages.EncodedCapture = {
    HostSnapshots.beforeEncode(p)
    val c = captured(p, token)
    val reference = references.get(p)
    if (reference != null && parent >= 0 && reference._1 == parent) {
      val same = reference._2
      val changed = c.entries.filter { case (k, set) =>
        val was = same.get(set.packedValues)
        was == null || was._1 != k || was._2 != set.size
      }
      val delta = new PartitionCapture(c.state, c.partition, c.partitionCount, c.updateProgress, delta = true, changed,
        c.staged, null)
      Messages.EncodedCapture(SnapshotCodec.encode(delta), delta = true, changed.length)
    } else Messages.EncodedCapture(SnapshotCodec.encode(c), delta = false, c.entries.length)
  }

  /** The capture was stored as snapshot `id`: the partition's next delta is taken on it. */
  def stored(p: Int, token: Long, id: Long): Unit = {
    val c = captured(p, token)
    val sets = new java.util.IdentityHashMap[Array[Byte], (Key, Int)](c.entries.length)
    c.entries.foreach { case (k, set) => sets.put(set.packedValues, (k, set.size)) }
    references.put(p, (id, sets))
    pending.remove(p, pending.get(p))
  }

  private def captured(p: Int, token: Long): PartitionCapture = {
    val c = pending.get(p)
    if (c == null || c._1 != token) throw new io.sharedstate.core.SharedStateException(
      s"State '${state.name}' partition $p: snapshot capture $token is not the host's latest (a newer round took one).")
    c._2
  }
}

private[cluster] object HostSnapshots {

  /** Test hook: runs when a host starts encoding partition `p`'s capture (the driver lock is not held then). */
  @volatile private[cluster] var beforeEncode: Int => Unit = _ => ()
}
