package io.sharedstate.spark.write

import io.sharedstate.spark.cluster.StateClient

import io.sharedstate.core.FetchAnswer
import io.sharedstate.core.fetch.FetchRequest
import io.sharedstate.delivery.{Inbox, Lane, LaneSlots}
import java.util.concurrent.{CompletableFuture, ConcurrentHashMap, TimeUnit}
import org.apache.spark.TaskContext
import scala.util.control.NonFatal

/**
 * Nova's conflict-free delivery (jvm/delivery, section 4.2) on the real-time path of one JVM, for one
 * State (`spark.sharedstate.realtime.deliveryLanes`). One reader thread applies what the State's
 * real-time tasks send it:
 *
 *  - flushes of the updaters, each updater on a lane of its own (single writer: the updater sends under
 *    its lock), so a partition writer's sub-epochs are committed in the order it made them, while the
 *    task goes on reading rows instead of waiting for the commit;
 *  - waiting fetches, on the inbox's prioritised channel (a lane per fetching task, held from its
 *    first waiting fetch until it completes): the reader takes a fetch before any queued flush, so it
 *    is registered before the commit that may answer it.
 *
 * Off, the task thread stages and commits itself and registers its fetches directly. A lane is held
 * by one updater or task at a time and reused once it is given back ([[LaneSlots]]); past
 * [[RealtimeLanes.MaxLanes]] updaters, or fetching tasks, at once a further one takes that direct path.
 */
private[sharedstate] final class RealtimeLanes private (stateName: String) {
  import RealtimeLanes._

  private val inbox = new Inbox[Message](MaxLanes, MaxLanes, LaneCapacity)
  private val flushSlots = new LaneSlots(MaxLanes)
  private val fetchSlots = new LaneSlots(MaxLanes)
  // The fetch lane of the task running on this thread (a task sends on one thread, so each lane keeps
  // one writer); a lane (or null: all taken) of an earlier task on the thread is not this task's.
  private val taskFetchLane = new ThreadLocal[(Long, Lane[Message])]

  private val reader = {
    val t = new Thread(() => run(), s"sharedstate-delivery-$stateName")
    t.setDaemon(true)
    t.start()
    t
  }

  /** A lane for one updater until it gives it back; None if every slot is taken. */
  def flushLane(): Option[Lane[Message]] = {
    val id = flushSlots.acquire()
    if (id >= 0) Some(inbox.inputLane(id)) else None
  }

  /**
   * Waits until the reader applied every message sent on `lane` so far, then gives the lane back. A
   * stopped query interrupts its tasks while they wait here: the wait goes on (the reader commits in
   * bounded time), the lane is given back in any case and the interrupt flag is set again; a wait that
   * gave up at the interrupt would keep the lane held for good.
   */
  def drainAndRelease(lane: Lane[Message]): Unit = {
    var interrupted = false
    try {
      val done = new CompletableFuture[Void]()
      lane.send(Drain(done))
      var waiting = true
      while (waiting) {
        try { done.get(); waiting = false }
        catch { case _: InterruptedException => interrupted = true }
      }
    } finally {
      flushSlots.release(lane.id)
      if (interrupted) Thread.currentThread().interrupt()
    }
  }

  /** Lanes held now by updaters and by fetching tasks. */
  def flushLanesInUse: Int = flushSlots.inUse
  def fetchLanesInUse: Int = fetchSlots.inUse

  /** The answer once U passes the request's time, registered by the reader ahead of queued flushes. */
  def fetchAsync(request: FetchRequest): CompletableFuture[FetchAnswer] = {
    val answer = new CompletableFuture[FetchAnswer]()
    fetchLane() match {
      case null => StateClient.of(stateName).fetchAsync(request).whenComplete { (a, e) =>
          if (e != null) answer.completeExceptionally(e) else answer.complete(a)
        }
      case lane => lane.send(Fetch(request, answer))
    }
    answer
  }

  // The calling task's fetch lane, taken at its first waiting fetch and given back when the task
  // completes; null outside a task or when every lane is held (that task goes direct).
  private def fetchLane(): Lane[Message] = {
    val ctx = TaskContext.get()
    if (ctx == null) return null
    val task = ctx.taskAttemptId()
    val mine = taskFetchLane.get()
    if (mine != null && mine._1 == task) return mine._2
    val id = fetchSlots.acquire()
    val lane = if (id >= 0) inbox.replyLane(id) else null
    val entry = (task, lane)
    taskFetchLane.set(entry)
    if (id >= 0) ctx.addTaskCompletionListener[Unit] { _ =>
      if (taskFetchLane.get() eq entry) taskFetchLane.remove() // (the listener runs on the task's thread)
      fetchSlots.release(id)
    }
    lane
  }

  private def run(): Unit = while (true) {
    inbox.take(1, TimeUnit.SECONDS) match {
      case null =>
      case Fetch(request, answer) =>
        try StateClient.of(stateName).fetchAsync(request).whenComplete { (a, e) =>
            if (e != null) answer.completeExceptionally(e) else answer.complete(a)
          }
        catch { case NonFatal(e) => answer.completeExceptionally(e) }
      case Flush(updater, sub, batch, watermark) =>
        // A failed commit fails the task at its next row or at close; later flushes of it are skipped.
        if (updater.failed == null) {
          try updater.commit(sub, batch, watermark)
          catch { case NonFatal(e) => updater.failed = e }
        }
      case Drain(done) => done.complete(null)
    }
  }

  override def toString: String = s"RealtimeLanes($stateName, ${reader.getName})"
}

private[sharedstate] object RealtimeLanes {

  /** Lanes of each kind per State and JVM (real-time tasks of one State at once). */
  val MaxLanes = 64
  private val LaneCapacity = 1024

  sealed trait Message

  /** Stage and commit `batch` as sub-epoch `sub` of the updater's partition writer. */
  final case class Flush(updater: RealtimeUpdater, sub: Long, batch: io.sharedstate.core.UpdateBatch, watermark: Long)
      extends Message

  /** Every message sent before it on the same lane was applied. */
  final case class Drain(done: CompletableFuture[Void]) extends Message

  final case class Fetch(request: FetchRequest, answer: CompletableFuture[FetchAnswer]) extends Message

  private val byState = new ConcurrentHashMap[String, RealtimeLanes]()

  /** The State's lanes in this JVM, with their reader thread started on first use. */
  def of(stateName: String): RealtimeLanes = byState.computeIfAbsent(stateName, n => new RealtimeLanes(n))
}
