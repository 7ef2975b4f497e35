package io.sharedstate.bench.delivery

import org.openjdk.jmh.annotations._

import java.util.concurrent.TimeUnit

/**
 * Nova section 5.4's X:1 delivery test: Nova's conflict-free lanes against JCTools MpscArrayQueue,
 * the LMAX Disruptor (multi-producer) and ArrayBlockingQueue. Score: messages delivered per second.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Array(Mode.Throughput))
@OutputTimeUnit(TimeUnit.SECONDS)
class XToOneDeliveryBench {
  @Param(Array("nova", "jctoolsMpsc", "disruptor", "arrayBlockingQueue"))
  var impl: String = _

  @Param(Array("1", "2", "4", "8"))
  var writers: Int = _

  private var peer: XToOnePeer = _

  @Setup(Level.Trial)
  def setup(): Unit = peer = XToOnePeer(impl, writers)

  @Benchmark
  @OperationsPerInvocation(XToOneDeliveryBench.Messages)
  def deliver(): Long = {
    val got = peer.run(writers, XToOneDeliveryBench.Messages / writers)
    if (got != XToOneDeliveryBench.Messages) throw new IllegalStateException(s"$impl delivered $got messages")
    got
  }
}

object XToOneDeliveryBench {
  final val Messages = 1 << 20 // divisible by 1, 2, 4 and 8 writers
}
