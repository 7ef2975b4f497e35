package io.sharedstate.core.esg

import io.sharedstate.core.SharedStateException
import org.jetbrains.lincheck.datastructures.{IntGen, ModelCheckingOptions, Operation, Param}
import org.scalatest.funsuite.AnyFunSuite

/**
 * Lincheck model checking of small ESG scenarios: every interleaving Lincheck explores must be
 * linearizable against `EsgReference`, a plain sequential model of the ESG's specification. Each
 * source and each reader is a non-parallel group, as each slot is used by one thread at a time.
 */
class EsgLincheckSuite extends AnyFunSuite {
  private def options = new ModelCheckingOptions()
    .iterations(if (StressRuns.long) 200 else 8)
    .invocationsPerIteration(if (StressRuns.long) 5000 else 250)
    .threads(3)
    .actorsPerThread(3)
    .actorsBefore(1)
    .actorsAfter(2)

  test("add, heartbeat and get are linearizable") {
    options.sequentialSpecification(classOf[EsgAddGetSpec]).check(classOf[EsgAddGetModel])
  }

  test("membership changes are linearizable with adds and gets") {
    options.sequentialSpecification(classOf[EsgMembershipSpec]).check(classOf[EsgMembershipModel])
  }
}

/** Shows a reader's result as a value Lincheck can compare. */
private object EsgResult {
  def show(t: EsgTuple[Int]): String =
    if (t == null) "none" else if (t.isWatermark) s"wm${t.timestamp}@${t.source}" else s"${t.payload}@${t.timestamp}"

  def orInactive(f: => String): String =
    try f
    catch { case _: SharedStateException => "inactive" }
}

class EsgAddGetModel extends EsgAddGetOps(new RealEsg(ElasticScaleGate[Int](sources = 2, readers = 2,
          maxSources = 2, maxReaders = 2, capacityPerSource = 64, startTime = 0, levels = 2)))

class EsgAddGetSpec extends EsgAddGetOps(new EsgReference(sources = 2, readers = 2, startTime = 0))

@Param(name = "step", gen = classOf[IntGen], conf = "0:1")
abstract class EsgAddGetOps(esg: EsgApi) {
  private val ts = Array(0L, 0L)
  private val count = Array(0, 0) // per source: each is touched by its source's thread only

  private def add(source: Int, step: Int): Unit = {
    ts(source) += step
    count(source) += 1
    esg.add(ts(source), source * 100 + count(source), source)
  }

  @Operation(nonParallelGroup = "source0")
  def add0(@Param(name = "step") step: Int): Unit = add(0, step)

  @Operation(nonParallelGroup = "source0")
  def heartbeat0(@Param(name = "step") step: Int): Unit = { ts(0) += step; esg.heartbeat(ts(0), 0) }

  @Operation(nonParallelGroup = "source1")
  def add1(@Param(name = "step") step: Int): Unit = add(1, step)

  @Operation(nonParallelGroup = "reader0")
  def get0(): String = EsgResult.show(esg.get(0))

  @Operation(nonParallelGroup = "reader1")
  def get1(): String = EsgResult.show(esg.get(1))
}

/**
 * Source 0 adds source 2 (source 1 tries too: one winner), source 1 removes itself, reader 0 adds
 * reader 2 (reader 1 tries too), reader 1 removes itself; all while tuples flow.
 */
class EsgMembershipModel extends EsgMembershipOps(new RealEsg(ElasticScaleGate[Int](sources = 2,
          readers = 2, maxSources = 3, maxReaders = 3, capacityPerSource = 64, startTime = 0, levels = 2)))

class EsgMembershipSpec extends EsgMembershipOps(new EsgReference(sources = 2, readers = 2, startTime = 0))

@Param(name = "step", gen = classOf[IntGen], conf = "0:1")
abstract class EsgMembershipOps(esg: EsgApi) {
  private val ts = Array(0L, 0L, 0L)
  private val count = Array(0, 0, 0)

  private def add(source: Int, step: Int): String = EsgResult.orInactive {
    ts(source) = math.max(ts(source), esg.lowerBound(source)) + step
    count(source) += 1
    esg.add(ts(source), source * 100 + count(source), source)
    "added"
  }

  @Operation(nonParallelGroup = "source0")
  def add0(@Param(name = "step") step: Int): String = add(0, step)

  @Operation(nonParallelGroup = "source0")
  def addSource2By0(): Boolean = esg.addSources(Set(2), 0)

  @Operation(nonParallelGroup = "source1")
  def add1(@Param(name = "step") step: Int): String = add(1, step)

  @Operation(nonParallelGroup = "source1")
  def addSource2By1(): String = EsgResult.orInactive(esg.addSources(Set(2), 1).toString)

  @Operation(nonParallelGroup = "source1")
  def removeSource1(): Boolean = esg.removeSources(Set(1))

  @Operation(nonParallelGroup = "source2")
  def add2(@Param(name = "step") step: Int): String = add(2, step)

  @Operation(nonParallelGroup = "reader0")
  def get0(): String = EsgResult.show(esg.get(0))

  @Operation(nonParallelGroup = "reader0")
  def addReader2By0(): Boolean = esg.addReaders(Set(2), 0)

  @Operation(nonParallelGroup = "reader1")
  def get1(): String = EsgResult.orInactive(EsgResult.show(esg.get(1)))

  @Operation(nonParallelGroup = "reader1")
  def addReader2By1(): String = EsgResult.orInactive(esg.addReaders(Set(2), 1).toString)

  @Operation(nonParallelGroup = "reader1")
  def removeReader1(): Boolean = esg.removeReaders(Set(1))

  @Operation(nonParallelGroup = "reader2")
  def get2(): String = EsgResult.orInactive(EsgResult.show(esg.get(2)))
}
