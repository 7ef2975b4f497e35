package io.sharedstate.bench.esg

import org.openjdk.jmh.annotations._

import java.util.concurrent.TimeUnit

/**
 * S sources merged and delivered to R readers: the ESG against a PriorityBlockingQueue merge and
 * against per-source queues merged by one thread. Score: tuples merged per second (each delivered to
 * all R readers). Every invocation starts fresh threads and a fresh structure for each peer alike.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Array(Mode.Throughput))
@OutputTimeUnit(TimeUnit.SECONDS)
class EsgMergeBench {
  @Param(Array("esg", "pbqMerge", "perSourceMerge"))
  var impl: String = _

  @Param(Array("1", "2", "3", "4"))
  var sources: Int = _

  @Param(Array("1", "2", "3", "4"))
  var readers: Int = _

  private var peer: MergePeer = _

  @Setup(Level.Trial)
  def setup(): Unit = peer = MergePeer(impl)

  @Benchmark
  @OperationsPerInvocation(EsgMergeBench.Total)
  def merge(): Long = {
    val sum = peer.run(sources, readers, EsgMergeBench.Total)
    val perSource = EsgMergeBench.Total / sources
    val expected = readers.toLong * sources * (perSource.toLong * (perSource - 1) / 2)
    if (sum != expected) throw new IllegalStateException(s"$impl delivered a wrong checksum: $sum != $expected")
    sum
  }
}

object EsgMergeBench {
  final val Total = 240000 // divisible by 1, 2, 3 and 4 sources
}
