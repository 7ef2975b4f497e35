package io.sharedstate.delivery

import io.sharedstate.core.SharedStateException

import java.util.concurrent.atomic.{AtomicInteger, AtomicIntegerArray}

/**
 * Which of an inbox channel's `size` writer slots are held. A sender acquires a slot for as long as
 * it sends (a task's life) and releases it when done, so a later sender reuses its lane: a lane has
 * one writer at a time, and the release/acquire pair orders the old writer's sends before the new
 * one's (the SPSC ring stays single-writer; what the old one left in it is read first).
 */
final class LaneSlots(size: Int) {
  if (size < 1) throw new SharedStateException(s"LaneSlots: size must be at least 1, got $size.")

  private val held = new AtomicIntegerArray(size)
  private val count = new AtomicInteger()
  // Where the next scan starts, so acquires spread over the slots instead of all racing for slot 0.
  private val hint = new AtomicInteger()

  /**
   * A free slot, now held by the caller; -1 if all `size` are held. The count is reserved first, so a
   * caller within `size` always finds a slot: a plain scan could miss one that moved behind it (a
   * holder releasing a slot already scanned and taking one not scanned yet).
   */
  def acquire(): Int = {
    if (count.incrementAndGet() > size) {
      count.decrementAndGet()
      return -1
    }
    // Holders never outnumber reservations (a release frees its slot before its reservation), so at
    // least one slot is free at every moment: the scan ends.
    var id = Math.floorMod(hint.getAndIncrement(), size)
    while (!(held.get(id) == 0 && held.compareAndSet(id, 0, 1))) id = (id + 1) % size
    id
  }

  /** Gives `id` back; its holder sends nothing on its lane after this. */
  def release(id: Int): Unit = {
    if (id < 0 || id >= size || !held.compareAndSet(id, 1, 0))
      throw new SharedStateException(s"LaneSlots: slot $id is not held (released twice, or never acquired).")
    count.decrementAndGet() // after the slot is free: holders never outnumber reservations
  }

  /** Slots held now. */
  def inUse: Int = count.get()

  def capacity: Int = size
}
