package io.sharedstate.spark.statestore

import scala.collection.mutable
import scala.util.Random

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.scalatest.funsuite.AnyFunSuite

/**
 * The packed map against a `mutable.HashMap` oracle: random puts, removes (some while iterating),
 * aborted and committed batches, with tiny pages (records across page boundaries, rows larger
 * than a page) and compactions after most commits; fixed seeds. Then the same through the provider
 * with reloads of random retained versions from the files by new providers.
 */
class StoreRowMapSuite extends AnyFunSuite {
  import StoreTestRows._

  private def randomValue(rnd: Random): String = {
    val n = rnd.nextInt(10) match {
      case 0 => 100 + rnd.nextInt(200) // larger than the 64-byte pages below
      case _ => rnd.nextInt(24)
    }
    rnd.alphanumeric.take(n).mkString
  }

  private def contents(m: StoreRowMap): Map[String, String] = {
    val all = m.entries.map { case (k, v) => k.getString(0) -> v.getString(0) }.toSeq
    assert(all.map(_._1).distinct.size == all.size, "each key once")
    all.toMap
  }

  for (seed <- Seq(1L, 2L, 3L, 42L)) test(s"packed map equals a HashMap oracle (seed $seed)") {
    val rnd = new Random(seed)
    val m = new StoreRowMap(keySchema, 1, 0, 0L, maxPageBytes = 64, compactMinGarbageBytes = 0L)
    val committed = mutable.HashMap.empty[String, String]
    val held = mutable.Buffer.empty[(UnsafeRow, String)] // rows handed out earlier: must stay valid
    val frozen = mutable.Buffer.empty[(StoreRowMap.Frozen, Map[String, String])]
    for (batch <- 1 to 150) {
      val current = committed.clone()
      m.beginBatch()
      val keys = 1 + rnd.nextInt(60)
      for (_ <- 1 to rnd.nextInt(80)) {
        val k = s"k${rnd.nextInt(keys)}"
        rnd.nextInt(10) match {
          case 0 | 1 | 2 => m.remove(key(k)); current.remove(k)
          case 3 =>
            // Removing while iterating, as watermark eviction does.
            m.entries.foreach { case (kk, _) =>
              if (rnd.nextInt(4) == 0) { current.remove(kk.getString(0)); m.remove(kk) }
            }
          case _ =>
            val v = randomValue(rnd)
            m.put(key(k), value(v)); current(k) = v
        }
        val got = Option(m.get(key(k)))
        assert(got.map(_.getString(0)) == current.get(k), s"batch $batch key $k")
        got.foreach(row => if (rnd.nextInt(20) == 0) held += row -> row.getString(0))
      }
      val changes = mutable.HashMap.empty[String, Option[String]]
      m.foreachChange((k, v) => changes(k.getString(0)) = Option(v).map(_.getString(0)))
      val expectedChanges = (committed.keySet ++ current.keySet).iterator.flatMap { k =>
        if (committed.get(k) == current.get(k)) None else Some(k -> current.get(k))
      }.toMap
      // The changelog holds every changed key; a key changed and changed back may be in it too.
      assert(expectedChanges.forall { case (k, v) => changes.get(k).contains(v) }, s"batch $batch changelog")
      assert(changes.forall { case (k, v) => v == current.get(k) }, s"batch $batch changelog values")
      assert(m.changedKeys == changes.size)
      if (rnd.nextInt(4) == 0) {
        m.rollback()
      } else {
        m.endBatch()
        committed.clear(); committed ++= current
        if (rnd.nextInt(10) == 0) frozen += m.frozen() -> committed.toMap
      }
      assert(m.size == committed.size, s"batch $batch size")
      assert(contents(m) == committed, s"batch $batch contents")
    }
    held.foreach { case (row, v) => assert(row.getString(0) == v, "a row handed out keeps its bytes") }
    frozen.foreach { case (view, expected) =>
      val seen = mutable.HashMap.empty[String, String]
      view.foreach((k, v) => seen(k.getString(0)) = v.getString(0))
      assert(seen == expected, "a frozen view keeps the version it froze")
    }
    assert(m.estimatedBytes > 0)
  }

  test("provider: random batches, aborts, snapshots and reloads of retained versions equal the oracle") {
    val rnd = new Random(7L)
    val dir = newDir("statestore-rowmap")
    var p = provider(dir, minDeltasForSnapshot = 3)
    val history = mutable.Buffer(Map.empty[String, String]) // version -> contents
    for (_ <- 1 to 40) {
      val v = history.size - 1L
      val store = p.getStore(v)
      val current = mutable.HashMap.from(history.last)
      for (_ <- 1 to rnd.nextInt(50)) {
        val k = s"k${rnd.nextInt(40)}"
        if (rnd.nextInt(3) == 0) { store.remove(key(k)); current.remove(k) }
        else { val s = randomValue(rnd); store.put(key(k), value(s)); current(k) = s }
      }
      if (rnd.nextInt(5) == 0) store.abort()
      else { assert(store.commit() == v + 1); history += current.toMap }
      if (rnd.nextInt(3) == 0) p.doMaintenance()
      if (rnd.nextInt(6) == 0) {
        p.close()
        p = provider(dir, minDeltasForSnapshot = 3)
        val at = rnd.nextInt(history.size)
        val read = p.getReadStore(at.toLong, None)
        val got = read.iterator().map(pair => pair.key.getString(0) -> pair.value.getString(0)).toMap
        assert(got == history(at), s"version $at reloaded")
      }
    }
    val last = p.getReadStore(history.size - 1L, None)
    assert(last.iterator().map(pair => pair.key.getString(0) -> pair.value.getString(0)).toMap == history.last)
    val store = p.getStore(history.size - 1L)
    assert(store.metrics.numKeys == history.last.size)
    store.abort()
    p.close()
  }
}
