package io.sharedstate.core.codec

import io.sharedstate.core.{Key, State, ValueSet}
import scala.collection.mutable.ArrayBuffer

/**
 * A partition snapshot encoded in one pass over the live partition while commits go on, made exact
 * at its end (a fuzzy checkpoint completed by the keys that changed meanwhile).
 *
 *  1. At a commit boundary (the commit lock held only for this): the partition's change tracking is
 *     restarted, so from here on it collects every key whose entry changes (applies and compactions
 *     alike). A partition that does not track changes tracks for the length of the pass.
 *  2. Without the lock: every entry (a full snapshot), or every key changed since the chain's
 *     previous snapshot (a delta), is read from the live partition and encoded at once; commits go on
 *     meanwhile, so an entry read here may be of any moment of the pass.
 *  3. At a commit boundary again (the snapshot's): the keys that changed during the pass are taken
 *     (tracking restarts once more: the next delta is relative to here), with references to their
 *     entries now, the staged updates, U and `mark`. They are encoded after the entries of step 2.
 *
 * Exact at the second boundary: a key that did not change during the pass had the same entry all
 * along, so step 2 read the entry it has at the boundary; a key that changed is written again in
 * step 3 with the entry it has at the boundary, after its step-2 entry, and a snapshot's later entry
 * of a key replaces the earlier one when it is restored (as a delta's replaces its parent's). Keys
 * are never removed from a partition, so no entry of step 2 can be stale for a key that is gone.
 * Writers wait only for the two boundaries: a swap of the tracking set, then the keys changed during
 * the pass and the staged updates, never for the partition's walk or its encoding.
 */
object SnapshotPass {

  /**
   * Partition `i` of `state` encoded as above, with `mark` evaluated at the snapshot's commit boundary.
   * `startChain`: the partition tracks changes for snapshot chains (the next `delta` holds the keys
   * changed after this snapshot); `delta` (implies it): only the keys changed since the previous
   * chain snapshot. Hand its keys back with [[returnChanged]] if the snapshot is not stored. A
   * partition whose change tracking serves something else (a live move's pre-copy) is captured under
   * the lock and encoded after ([[PartitionCapture]]).
   */
  def encode[T](state: State, i: Int, delta: Boolean, startChain: Boolean,
      maxBlock: Int = SnapshotCodec.DefaultMaxBlock)(mark: => T): (EncodedSnapshot, T) =
    encodeWith(state, i, delta, startChain, maxBlock, () => ())(mark)

  // `walked`: runs between the walk and the second boundary (tests land commits there).
  private[codec] def encodeWith[T](state: State, i: Int, delta: Boolean, startChain: Boolean, maxBlock: Int,
      walked: () => Unit)(mark: => T): (EncodedSnapshot, T) = {
    val p = state.partition(i)
    val chained = delta || startChain
    val asked = System.nanoTime()
    val (before, temporary, own, heldFirst, gotFirst) = state.betweenCommits {
      val got = System.nanoTime()
      val (b, tmp, own) =
        if (chained) {
          val d = p.takeChangedKeys()
          if (d == null) throw new IllegalStateException(
            s"State '${state.name}' partition $i does not track changes: no snapshot chain can be taken")
          (d, false, true)
        } else if (p.tracksChanges) (null, false, false)
        else { p.trackChanges(); (null, true, true) }
      (b, tmp, own, System.nanoTime() - got, got)
    }
    if (!own) return captured(state, i, asked, mark)
    val encoding = System.nanoTime()
    val out = new BigEndianBlocks(maxBlock)
    val entries = new EntryWriter(out)
    var after: java.util.Set[Key] = null
    try {
      if (delta) before.forEach { k =>
        val set = p.get(k) // entries are never removed: a changed key has one
        if (set != null) entries.add(k, set)
      }
      else p.foreachStored(EntryWriter.Ahead)((refs, n) => entries.addStored(refs, n))
      walked()
      val walkEnd = System.nanoTime()
      val (fixes, staged, marked, u, got, held) = state.betweenCommits {
        val got = System.nanoTime()
        after = p.takeChangedKeys()
        if (temporary) p.stopTracking()
        if (after == null) throw new IllegalStateException(
          s"State '${state.name}' partition $i stopped tracking changes during a snapshot pass")
        val fixes = new ArrayBuffer[(Key, ValueSet)](after.size)
        after.forEach { k =>
          val set = p.get(k)
          if (set != null) fixes += (k -> set)
        }
        val staged = ArrayBuffer.empty[(Key, Long, Array[Byte])]
        p.foreachStaged((k, t, v) => staged += ((k, t, v)))
        (fixes, staged.toArray, mark, state.updateProgress, got, System.nanoTime() - got)
      }
      fixes.foreach { case (k, set) => entries.add(k, set) }
      entries.flush()
      SnapshotCodec.writeStaged(out, staged)
      val blocks = out.sealedAfter(SnapshotCodec.header(state.name, i, state.partitionCount, u, delta, entries.count))
      val encoded = new EncodedSnapshot(
        i,
        blocks,
        delta,
        entries.count,
        fixes.size,
        if (chained) Seq(before, after) else Nil,
        lockWaitNanos = (gotFirst - asked) + (got - walkEnd),
        lockedNanos = heldFirst + held,
        encodeNanos = (System.nanoTime() - encoding) - (got - walkEnd) - held
      )
      (encoded, marked)
    } catch {
      case e: Throwable =>
        if (temporary) state.betweenCommits(p.stopTracking())
        else Seq(before, after).foreach(keys => if (keys != null) p.returnChanged(keys))
        throw e
    }
  }

  /** The changed keys a snapshot took go back to its partition: the next delta holds them (it was not stored). */
  def returnChanged(state: State, e: EncodedSnapshot): Unit =
    e.taken.foreach(keys => state.partition(e.partition).returnChanged(keys))

  // Captured under the commit lock, encoded after it (see PartitionCapture).
  private def captured[T](state: State, i: Int, asked: Long, mark: => T): (EncodedSnapshot, T) = {
    val (c, marked) = state.capturePartitionWith(i, delta = false, startChain = false)(mark)
    val captured = System.nanoTime()
    val blocks = SnapshotCodec.encodeBlocks(c)
    (new EncodedSnapshot(
        i,
        blocks,
        delta = false,
        c.entries.length,
        0,
        Nil,
        lockWaitNanos = math.max(0L, captured - asked - c.captureNanos),
        lockedNanos = c.captureNanos,
        encodeNanos = System.nanoTime() - captured
      ),
      marked)
  }
}

/**
 * A partition snapshot encoded by [[SnapshotPass]]: `blocks`, end to end, are its SnapshotCodec
 * bytes. `entries`: the entries it holds (a key changed during the pass is counted twice: it is
 * written twice, the later entry standing); `changedDuring`: the keys whose entry changed during the
 * pass (written at its end). `taken`: the change-tracking sets it took from the
 * partition (handed back if it is not stored). `lockWaitNanos`/`lockedNanos`: waiting for the
 * commit lock and holding it (what writers waited for), `encodeNanos`: the pass's walk and encoding.
 */
final class EncodedSnapshot(val partition: Int, val blocks: Array[Array[Byte]], val delta: Boolean, val entries: Int,
    val changedDuring: Int, private[codec] val taken: Seq[java.util.Set[Key]], val lockWaitNanos: Long,
    val lockedNanos: Long,
    val encodeNanos: Long)
