package io.sharedstate.core.concurrency

import io.sharedstate.core.{Key, KeyTable, ValueSet}
import java.nio.ByteBuffer
import org.jetbrains.lincheck.datastructures.{Operation, StressOptions}
import org.scalatest.funsuite.AnyFunSuite

/**
 * Lincheck's view of one key's value set as the engine changes it: its applier appends the next pair in
 * place when the array has room (else it copies into a new array and publishes that with a
 * compare-and-set), while compactions (seal the array, then replace it by one holding only the newest
 * pair) and readers run on any thread. A read must show a set some serial order of the appends and
 * compactions gives: no lost append, no pair read before it was written, every value intact.
 */
class LincheckedAppends {
  private val table = new KeyTable(2)
  private val key = new Key("k".getBytes)
  private var next = 0L // the applier's last time (only appliers touch it, one at a time)

  private def value(t: Long): Array[Byte] = ByteBuffer.allocate(8 + (t % 3).toInt).putLong(t * 7).array()

  table.reserve(1)
  table.insert(key, ValueSet.of(key.bytes, Array(0L), Array(value(0))).packed)

  @Operation(nonParallelGroup = "applier") def append(): Long = {
    next += 1
    var done = false
    while (!done) {
      val packed = table.get(key)
      val b = new ValueSet.Builder(key.bytes, new ValueSet(packed), 1, 0)
      b.put(next, value(next))
      done = b.appendInPlace(_ => false) || table.replace(key, packed, b.result(1).packed)
    }
    next
  }

  // Keeps the newest pair only; retried until it holds (an append that got in first makes it start over).
  @Operation def compact(): Int = {
    while (true) {
      val packed = table.get(key)
      val set = new ValueSet(packed)
      if (set.size <= 1) return 0
      if (ValueSet.seal(set) && table.replace(key, packed, set.dropBefore(set.size - 1).packed)) return 0
    }
    0
  }

  @Operation def read(): String = {
    val set = new ValueSet(table.get(key))
    (0 until set.size).map { i =>
      val t = set.timeAt(i)
      if (set.valueAt(i).sameElements(value(t))) t.toString else s"$t:corrupt"
    }.mkString(",")
  }
}

class ValueSetAppendLincheckSuite extends AnyFunSuite {
  private val long = sys.props.contains("sharedstate.stress") || sys.env.contains("SHAREDSTATE_STRESS")

  test("appends in place, sealing compactions and reads of one key's set are linearizable (Lincheck stress)") {
    new StressOptions()
      .iterations(if (long) 300 else 40)
      .invocationsPerIteration(if (long) 10000 else 1000)
      .threads(3)
      .actorsPerThread(4)
      .check(classOf[LincheckedAppends])
  }
}
