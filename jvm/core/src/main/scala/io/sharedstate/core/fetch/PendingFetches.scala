package io.sharedstate.core.fetch

import io.sharedstate.core.FetchAnswer
import java.util.concurrent.{CompletableFuture, ConcurrentSkipListMap}
import java.util.concurrent.atomic.AtomicLong

/**
 * Fetches that arrived before U passed their reply time, ordered by reply time (Nova's pending
 * queue). When U advances, [[drain]] answers them from the head until one is still not answerable.
 * Lock-free: several threads may add and drain at once; each fetch is answered exactly once.
 */
final class PendingFetches {
  private final class Slot(val replyTime: Long, val seq: Long) extends Comparable[Slot] {
    def compareTo(o: Slot): Int = {
      val c = java.lang.Long.compare(replyTime, o.replyTime)
      if (c != 0) c else java.lang.Long.compare(seq, o.seq)
    }
  }
  private final class Waiting(val request: FetchRequest, val future: CompletableFuture[FetchAnswer])

  private val queue = new ConcurrentSkipListMap[Slot, Waiting]()
  private val seqs = new AtomicLong()

  def add(request: FetchRequest, future: CompletableFuture[FetchAnswer]): Unit =
    queue.put(new Slot(request.replyTime, seqs.getAndIncrement()), new Waiting(request, future))

  def size: Int = queue.size

  /** The smallest reply time waiting, or Long.MaxValue. */
  def headReplyTime: Long = { val e = queue.firstEntry(); if (e == null) Long.MaxValue else e.getKey.replyTime }

  /**
   * Answers, in reply-time order, every fetch whose reply time is below `u`. `answer` computes the
   * reply; a failure completes that fetch's future exceptionally, never the others. Returns how many.
   */
  def drain(u: Long, answer: FetchRequest => FetchAnswer): Int = {
    var n = 0
    var more = true
    while (more) {
      val head = queue.firstEntry()
      if (head == null || head.getKey.replyTime >= u) more = false
      else if (queue.remove(head.getKey, head.getValue)) { // the thread that removes it answers it
        val w = head.getValue
        try w.future.complete(answer(w.request))
        catch { case e: Throwable => w.future.completeExceptionally(e) }
        n += 1
      }
    }
    n
  }

  /** Fails every waiting fetch (the State was dropped). */
  def failAll(e: Throwable): Unit = {
    var head = queue.pollFirstEntry()
    while (head != null) { head.getValue.future.completeExceptionally(e); head = queue.pollFirstEntry() }
  }
}
