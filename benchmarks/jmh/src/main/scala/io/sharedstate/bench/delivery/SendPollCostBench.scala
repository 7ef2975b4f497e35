package io.sharedstate.bench.delivery

import io.sharedstate.delivery.{Inbox, Lane, SpscRing}
import org.jctools.queues.MpscArrayQueue
import org.openjdk.jmh.annotations._

import java.util.concurrent.TimeUnit

/**
 * The uncontended cost of one send plus one receive in a single thread, Nova's lane against JCTools
 * MpscArrayQueue: what each design pays per message before any thread meets another.
 */
@State(Scope.Thread)
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
class SendPollCostBench {
  private val inbox = new Inbox[java.lang.Long](maxWriters = 1, maxRepliers = 0, laneCapacity = 1024)
  private val lane: Lane[java.lang.Long] = inbox.inputLane(0)
  private val mpsc = new MpscArrayQueue[java.lang.Long](1024)
  private val ring = new SpscRing[java.lang.Long](1024)

  @Benchmark
  def novaLane(): java.lang.Long = { lane.trySend(XToOnePeer.Message); inbox.poll() }

  /** The lane's ring alone: what the flag protocol and the reader's rounds add on top. */
  @Benchmark
  def ringOnly(): java.lang.Long = { ring.offer(XToOnePeer.Message); ring.poll() }

  @Benchmark
  def jctoolsMpsc(): java.lang.Long = { mpsc.offer(XToOnePeer.Message); mpsc.poll() }
}
