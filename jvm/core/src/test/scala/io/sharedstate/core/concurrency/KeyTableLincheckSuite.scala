package io.sharedstate.core.concurrency

import io.sharedstate.core.{KeyTable, KeyTableFixtures}
import org.jetbrains.lincheck.datastructures.{Operation, StressOptions}
import org.scalatest.funsuite.AnyFunSuite

/**
 * Lincheck's view of the key table as the engine uses it: one applier (the commit lock) grows the
 * table and inserts or replaces sets (each key's set is its version number), while readers look keys
 * up and compactions replace a set by an equal copy with a compare-and-set, both from any thread.
 * The table starts at two slots, so the three keys make it grow twice while readers and compactions
 * run: a read must never miss a key already inserted, nor see an older version than one already seen.
 */
class LincheckedKeyTable {
  private val table = new KeyTable(1)
  // Two keys that share a hash (so each one's look-up meets the other's slot and set), and a key longer
  // than 16 bytes whose sets keep no key (the stored key object decides).
  private val keys = {
    val (a, b) = KeyTableFixtures.sameHash
    Array(a, b, KeyTableFixtures.unkeyed(KeyTableFixtures.longKey(0)))
  }

  import KeyTableFixtures.version
  private def set(k: Int, v: Int): Array[Byte] = KeyTableFixtures.set(keys(k), v, 0)

  // As a chain does: read the set, build the next one, publish it with a compare-and-set, retry.
  private def apply(k: Int): Int = {
    val key = keys(k)
    var out = -1
    while (out < 0) {
      val before = table.get(key)
      if (before == null) {
        table.reserve(1)
        if (table.insert(key, set(k, 0))) out = 0
      } else if (table.replace(key, before, set(k, version(before) + 1))) out = version(before) + 1
    }
    out
  }

  private def compact(k: Int): Int = {
    val before = table.get(keys(k))
    if (before != null) table.replace(keys(k), before, before.clone())
    0
  }

  @Operation(nonParallelGroup = "applier") def applyA(): Int = apply(0)
  @Operation(nonParallelGroup = "applier") def applyB(): Int = apply(1)
  @Operation(nonParallelGroup = "applier") def applyC(): Int = apply(2)
  @Operation def getA(): Int = version(table.get(keys(0)))
  @Operation def getB(): Int = version(table.get(keys(1)))
  @Operation def getC(): Int = version(table.get(keys(2)))
  // The apply round's look-up with the hash carried in its order (no read of the key for it).
  @Operation def getAByHash(): Int = version(table.get(keys(0), keys(0).hashCode))
  @Operation def getCByHash(): Int = version(table.get(keys(2), keys(2).hashCode))
  // A batched fetch's staged look-ups (KeyTable.Lookups): all three keys touched, started, touched, then finished; the
  // operation returns one key's version, its look-up having run interleaved with the others'.
  private def batched(k: Int): Int = {
    val lookups = new KeyTable.Lookups(3)
    (0 until 3).foreach(j => table.touchHome(lookups, keys(j).hashCode))
    (0 until 3).foreach(j => table.start(lookups, j, keys(j), keys(j).hashCode))
    (0 until 3).foreach(lookups.touchFound)
    val sets = (0 until 3).map(lookups.finish)
    version(sets(k))
  }
  @Operation def getABatched(): Int = batched(0)
  @Operation def getCBatched(): Int = batched(2)
  @Operation def compactA(): Int = compact(0)
  @Operation def compactB(): Int = compact(1)
  @Operation def sizeNow(): Int = { table.size; 0 }
}

class KeyTableLincheckSuite extends AnyFunSuite {
  private val long = sys.props.contains("sharedstate.stress") || sys.env.contains("SHAREDSTATE_STRESS")

  test("key table: look-ups and compactions against inserts, replaces and growth are linearizable (Lincheck stress)") {
    new StressOptions()
      .iterations(if (long) 300 else 30)
      .invocationsPerIteration(if (long) 10000 else 500)
      .threads(3)
      .actorsPerThread(4)
      .check(classOf[LincheckedKeyTable])
  }
}
