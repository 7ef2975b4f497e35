package io.sharedstate.delivery

import io.sharedstate.core.SharedStateException
import io.sharedstate.core.esg.StressRuns
import org.scalatest.funsuite.AnyFunSuite

import java.util.concurrent.{ConcurrentHashMap, CountDownLatch, TimeUnit}
import java.util.concurrent.atomic.{AtomicInteger, AtomicReferenceArray}
import java.util.concurrent.locks.LockSupport

/**
 * Lanes handed from sender to sender, as the real-time path hands them from task to task: many more
 * short-lived senders than slots, each acquiring a slot, sending numbered messages on its lane, and
 * releasing it (some wait until the reader took their last message, most do not, so a lane's next
 * holder sends while the previous one's messages are still in the ring). The oracle: no slot ever has
 * two holders, every sender's messages arrive exactly once and in order, and while at most `slots`
 * senders run at once no acquire finds every slot held.
 */
class LaneSlotsStressSuite extends AnyFunSuite {
  private val slots = 8

  test("a slot is held once, released twice is an error, and all held means -1") {
    val s = new LaneSlots(3)
    val ids = Seq.fill(3)(s.acquire())
    assert(ids.sorted == Seq(0, 1, 2) && s.inUse == 3)
    assert(s.acquire() == -1)
    s.release(1)
    assert(s.acquire() == 1)
    s.release(2)
    val e = intercept[SharedStateException](s.release(2))
    assert(e.getMessage.contains("slot 2 is not held"))
    intercept[SharedStateException](s.release(7))
    intercept[SharedStateException](new LaneSlots(0))
  }

  for (seed <- StressRuns.seeds) {
    test(s"released lanes are reused by later senders; nothing lost, reordered or shared (seed $seed)") {
      val threads = slots // at most `slots` senders at once: an acquire must always succeed
      val sendersPerThread = StressRuns.scaled(400)
      val inbox = new Inbox[Array[Int]](1, slots, laneCapacity = 16, idleRounds = 2, burst = 4)
      val laneSlots = new LaneSlots(slots)
      val holder = new AtomicReferenceArray[Integer](slots)
      val violations = new ConcurrentHashMap[String, Boolean]()
      val expected = new ConcurrentHashMap[Integer, Integer]() // sender -> messages it sent
      val taken = new ConcurrentHashMap[Integer, CountDownLatch]() // sender -> its last message was read
      val nextSender = new AtomicInteger()
      val allDone = new CountDownLatch(threads)
      val workers = (0 until threads).map { t =>
        val w = new Thread(() => {
          val rnd = new scala.util.Random(seed * 1009L + t)
          for (_ <- 0 until sendersPerThread) {
            val sender = nextSender.getAndIncrement()
            val id = laneSlots.acquire()
            if (id < 0) violations.put(s"sender $sender found every slot held", true)
            else {
              if (!holder.compareAndSet(id, null, sender))
                violations.put(s"slot $id given to $sender while ${holder.get(id)} held it", true)
              val lane = inbox.replyLane(id)
              val count = 1 + rnd.nextInt(20)
              val wait = rnd.nextInt(4) == 0
              val last = new CountDownLatch(1)
              expected.put(sender, count)
              if (wait) taken.put(sender, last)
              for (i <- 0 until count) {
                lane.send(Array(sender, i, count))
                if (rnd.nextInt(50) == 0) LockSupport.parkNanos(rnd.nextInt(100000).toLong)
              }
              if (wait && !last.await(30, TimeUnit.SECONDS))
                violations.put(s"sender $sender: last message unread", true)
              holder.set(id, null)
              laneSlots.release(id)
            }
          }
          allDone.countDown()
        })
        w.setDaemon(true)
        w.start()
        w
      }
      val next = new java.util.HashMap[Integer, Integer]()
      var received = 0
      while (allDone.getCount > 0 || received < expected.values.stream().mapToInt(_.intValue).sum) {
        val m = inbox.take(100, TimeUnit.MILLISECONDS)
        if (m != null) {
          val Array(sender, seq, count) = m
          val want = next.getOrDefault(sender, 0)
          assert(seq == want, s"sender $sender: got message $seq, expected $want")
          next.put(sender, seq + 1)
          if (seq == count - 1) Option(taken.get(sender)).foreach(_.countDown())
          received += 1
        }
      }
      workers.foreach(_.join(10000))
      assert(violations.isEmpty, violations.keySet())
      assert(inbox.poll() == null, "nothing beyond what was sent")
      assert(expected.size == threads * sendersPerThread)
      expected.forEach((sender, count) => assert(next.get(sender) == count, s"sender $sender: ${next.get(sender)}"))
      assert(laneSlots.inUse == 0)
    }
  }

  test("more senders than slots: the extra ones find -1 and go without a lane, the rest are served") {
    val laneSlots = new LaneSlots(slots)
    val start = new CountDownLatch(1)
    val hold = new CountDownLatch(1)
    val got = new java.util.concurrent.ConcurrentLinkedQueue[Integer]()
    val ts = (0 until slots + 4).map { _ =>
      val t = new Thread(() => { start.await(); got.add(laneSlots.acquire()); hold.await() })
      t.start()
      t
    }
    start.countDown()
    while (got.size < slots + 4) Thread.sleep(1)
    val ids = got.toArray.map(_.asInstanceOf[Integer].intValue)
    assert(ids.count(_ == -1) == 4 && ids.filter(_ >= 0).sorted.toSeq == (0 until slots))
    hold.countDown()
    ts.foreach(_.join())
    ids.filter(_ >= 0).foreach(laneSlots.release)
    assert(laneSlots.inUse == 0 && laneSlots.acquire() >= 0)
  }
}
