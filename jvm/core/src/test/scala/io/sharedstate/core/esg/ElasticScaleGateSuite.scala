package io.sharedstate.core.esg

import io.sharedstate.core.SharedStateException
import org.scalatest.funsuite.AnyFunSuite

import java.lang.ref.WeakReference

/** Single-threaded behaviour of the ESG: readiness, order, the elastic operations, back-pressure. */
class ElasticScaleGateSuite extends AnyFunSuite {

  private def drain[T](esg: ElasticScaleGate[T], reader: Int): Vector[EsgTuple[T]] =
    Iterator.continually(esg.get(reader)).takeWhile(_ != null).toVector

  private def tuples[T](items: Seq[EsgTuple[T]]): Seq[(Long, Int, T)] =
    items.filterNot(_.isWatermark).map(t => (t.timestamp, t.source, t.payload))

  test("merges sources by (timestamp, source) and holds back each source's last tuple") {
    val esg = ElasticScaleGate[String](sources = 2, readers = 1, startTime = 0)
    esg.add(5, "a5", 0)
    esg.add(3, "b3", 1)
    assert(esg.get(0) == null, "both tuples are their source's last one")
    esg.add(5, "b5", 1)
    assert(tuples(drain(esg, 0)) == Seq((3L, 1, "b3")), "a5 is still held back by source 0")
    esg.add(9, "a9", 0)
    // a5 and b5 tie on time: source 0 goes first, whatever the arrival order was.
    assert(tuples(drain(esg, 0)) == Seq((5L, 0, "a5")), "b5 is source 1's last tuple")
    esg.add(9, "b9", 1)
    assert(tuples(drain(esg, 0)) == Seq((5L, 1, "b5")), "a9 is source 0's last tuple")
    esg.add(9, "a9'", 0)
    assert(tuples(drain(esg, 0)) == Seq((9L, 0, "a9")), "equal timestamps of one source keep add order")
  }

  test("a heartbeat releases an idle source's last tuple and reaches readers as a watermark") {
    val esg = ElasticScaleGate[String](sources = 2, readers = 1, startTime = 0)
    esg.add(1, "a1", 0)
    esg.add(2, "a2", 0)
    assert(drain(esg, 0).isEmpty, "source 1 never added: its start dummy holds readers back")
    esg.heartbeat(10, 1)
    assert(tuples(drain(esg, 0)) == Seq((1L, 0, "a1")))
    esg.heartbeat(10, 0)
    esg.heartbeat(11, 1)
    assert(tuples(drain(esg, 0)) == Seq((2L, 0, "a2")), "source 0's watermark is its last node")
    esg.add(12, "a12", 0)
    val out = drain(esg, 0)
    assert(out.map(t => (t.timestamp, t.source, t.isWatermark)) == Seq((10L, 0, true), (10L, 1, true)))
    assert(out.forall(_.payload == null))
  }

  test("every reader receives the same objects in the same order") {
    val esg = ElasticScaleGate[Int](sources = 3, readers = 3, startTime = 0)
    val rnd = new scala.util.Random(7)
    val ts = Array(0L, 0L, 0L)
    for (i <- 0 until 300) {
      val s = rnd.nextInt(3)
      ts(s) += rnd.nextInt(3)
      esg.add(ts(s), i, s)
    }
    (0 until 3).foreach(s => esg.heartbeat(Long.MaxValue, s))
    val seqs = (0 until 3).map(drain(esg, _))
    assert(seqs(0).size == 300)
    assert(seqs.forall(_ == seqs(0)))
    assert(seqs(0).map(_.timestamp) == seqs(0).map(_.timestamp).sorted)
  }

  test("addReaders: new readers start at the caller's next tuple; only new slots make it succeed") {
    val esg = ElasticScaleGate[Int](sources = 1, readers = 1, maxReaders = 4, startTime = 0)
    (1 to 6).foreach(i => esg.add(i.toLong, i, 0))
    assert(esg.get(0).payload == 1)
    assert(esg.get(0).payload == 2)
    assert(esg.addReaders(Set(1, 2), caller = 0))
    assert(!esg.addReaders(Set(2, 3), caller = 0), "reader 2 was a reader already")
    assert(esg.activeReaders == Set(0, 1, 2, 3), "reader 3 was still added")
    val expected = Seq(3, 4, 5)
    assert(drain(esg, 1).map(_.payload) == expected)
    assert(drain(esg, 2).map(_.payload) == expected)
    assert(drain(esg, 0).map(_.payload) == expected)
    assert(drain(esg, 3).map(_.payload) == expected)
  }

  test("removeReaders removes existing readers, refuses to remove the last one") {
    val esg = ElasticScaleGate[Int](sources = 1, readers = 2, startTime = 0)
    assert(esg.removeReaders(Set(1)))
    assert(!esg.removeReaders(Set(1)), "reader 1 is gone already")
    val e = intercept[SharedStateException](esg.get(1))
    assert(e.getMessage.contains("reader 1 is not a reader") && e.getMessage.contains("{0}"))
    val last = intercept[SharedStateException](esg.removeReaders(Set(0)))
    assert(last.getMessage.contains("at least one must remain"))
  }

  test("addSources: the new source's dummy holds readers until it adds; it starts after the caller") {
    val esg = ElasticScaleGate[String](sources = 1, readers = 1, maxSources = 3, startTime = 0)
    esg.add(4, "a4", 0)
    esg.add(7, "a7", 0)
    assert(esg.addSources(Set(1), caller = 0))
    assert(!esg.addSources(Set(1), caller = 0), "source 1 was added already")
    assert(esg.lowerBound(1) == 8)
    val early = intercept[SharedStateException](esg.add(7, "b7", 1))
    assert(early.getMessage.contains("source 1 added timestamp 7 after 8"))
    esg.add(20, "a20", 0)
    // a4 is ready; a7 is ready too (source 0 added later), but the dummy of source 1 at 8 blocks a20.
    assert(tuples(drain(esg, 0)).map(_._3) == Seq("a4", "a7"))
    esg.add(8, "b8", 1)
    esg.add(30, "b30", 1)
    assert(tuples(drain(esg, 0)).map(_._3) == Seq("b8"), "a20 is source 0's last tuple")
  }

  test("removeSources: a flush releases the leaving source's last tuple; its later adds fail") {
    val esg = ElasticScaleGate[String](sources = 2, readers = 1, startTime = 0)
    esg.add(1, "a1", 0)
    esg.add(2, "b2", 1)
    esg.add(5, "a5", 0)
    assert(tuples(drain(esg, 0)).map(_._3) == Seq("a1"))
    assert(esg.removeSources(Set(1)))
    assert(!esg.removeSources(Set(1)))
    assert(tuples(drain(esg, 0)).map(_._3) == Seq("b2"), "a5 is source 0's last tuple")
    val late = intercept[SharedStateException](esg.add(6, "b6", 1))
    assert(late.getMessage.contains("source 1 is not a source") && late.getMessage.contains("{0}"))
    val last = intercept[SharedStateException](esg.removeSources(Set(0)))
    assert(last.getMessage.contains("at least one must remain"))
  }

  test("a removed source slot can join again and continues after the caller") {
    val esg = ElasticScaleGate[String](sources = 2, readers = 1, startTime = 0)
    esg.add(3, "b3", 1)
    assert(esg.removeSources(Set(1)))
    esg.add(10, "a10", 0)
    assert(esg.addSources(Set(1), caller = 0))
    esg.add(11, "b11", 1)
    esg.add(12, "a12", 0)
    esg.heartbeat(12, 1)
    assert(tuples(drain(esg, 0)).map(_._3) == Seq("b3", "a10", "b11"), "a12 is source 0's last tuple")
  }

  test("back-pressure: a source is held once capacity nodes wait for the slowest reader") {
    val esg = ElasticScaleGate[Int](sources = 2, readers = 2, capacityPerSource = 4, startTime = 0)
    esg.heartbeat(0, 1) // lets source 0's tuples become ready
    // Source 0 has its start dummy plus 3 tuples buffered: the next one must wait.
    assert((1 to 3).forall(i => esg.tryAdd(i.toLong, i, 0)))
    assert(!esg.tryAdd(4, 4, 0))
    assert(esg.buffered(0) == 4)
    esg.heartbeat(100, 1)
    drain(esg, 0)
    assert(!esg.tryAdd(4, 4, 0), "reader 1 has not read yet")
    drain(esg, 1)
    assert(esg.tryAdd(4, 4, 0))
    assert(esg.buffered(0) == 2, "source 0's last tuple and the new one")
  }

  test("back-pressure never holds the source whose last node the readers wait for") {
    val esg = ElasticScaleGate[Int](sources = 2, readers = 1, capacityPerSource = 3, startTime = 0)
    esg.add(1, 1, 0)
    // Source 1 runs ahead until it is held; the reader is stuck at source 0's last tuple.
    var n = 0
    while (esg.tryAdd(10L + n, n, 1)) n += 1
    assert(n == 2, "dummy + 2 tuples fill source 1's capacity of 3")
    drain(esg, 0)
    assert(esg.tryAdd(2, 2, 0), "source 0 holds the readers back, so it has room")
    assert(esg.tryAdd(50, 3, 0))
    assert(tuples(drain(esg, 0)).map(_._3) == Seq(1, 2, 0), "everything before source 1's last tuple")
  }

  test("bad arguments are errors that name the argument and what is allowed") {
    def msg(f: => Any): String = intercept[SharedStateException](f).getMessage
    assert(msg(ElasticScaleGate[Int](0, 1)).contains("sources must be in [1, maxSources = 64], got 0"))
    assert(msg(ElasticScaleGate[Int](1, 1, capacityPerSource = 1)).contains("capacityPerSource must be at least 2"))
    assert(msg(ElasticScaleGate[Int](1, 1, levels = 0)).contains("levels must be in [1, 30], got 0"))
    val esg = ElasticScaleGate[Int](sources = 1, readers = 1, maxSources = 2, startTime = 0)
    assert(msg(esg.add(1, 1, 5)).contains("source slot must be in [0, 2), got 5"))
    assert(msg(esg.get(-1)).contains("reader slot must be in [0, 64), got -1"))
    assert(msg(esg.addSources(Set(2), 0)).contains("source slot must be in [0, 2), got 2"))
    esg.add(5, 5, 0)
    assert(msg(esg.add(4, 4, 0)).contains("source 0 added timestamp 4 after 5"))
  }

  test("consumed tuples become garbage: memory stays flat over a long run") {
    val esg = ElasticScaleGate[Array[Byte]](sources = 2, readers = 2, capacityPerSource = 1024, startTime = 0)
    val first = new WeakReference(new Array[Byte](16))
    esg.add(0, first.get(), 0)
    val total = 200000
    var read0, read1 = 0
    for (i <- 1 to total) {
      esg.add(i.toLong, new Array[Byte](16), i % 2)
      while (esg.get(0) != null) read0 += 1
      while (esg.get(1) != null) read1 += 1
    }
    assert(read0 == total - 1 && read1 == total - 1, "all but each source's last tuple")
    var tries = 0
    while (first.get() != null && tries < 20) { System.gc(); Thread.sleep(20); tries += 1 }
    assert(first.get() == null, "the first payload is still reachable after every reader passed it")
  }
}
