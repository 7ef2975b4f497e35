package io.sharedstate.core

import org.scalatest.funsuite.AnyFunSuite

/**
 * A look-up confirms its key from the set's first line when the set keeps its key, from the stored key
 * object when it does not: both, for keys that share a hash (each one's probe passes the other's slot),
 * long and short keys, before and after the table grows, one at a time and staged.
 */
class KeyTableSuite extends AnyFunSuite {
  import KeyTableFixtures._

  private def staged(table: KeyTable, keys: Seq[Key]): Seq[Int] = {
    val lookups = new KeyTable.Lookups(keys.size)
    keys.foreach(k => table.touchHome(lookups, k.hashCode))
    keys.indices.foreach(j => table.start(lookups, j, keys(j), keys(j).hashCode))
    keys.indices.foreach(lookups.touchFound)
    keys.indices.map(j => version(lookups.finish(j)))
  }

  test("a set names its key: keyMatch is exact for short and long keys, and says so when a set keeps none") {
    val (a, b) = sameHash
    assert(a.hashCode == b.hashCode && !a.equals(b))
    val short = new Key(Array[Byte](1, 2, 3))
    val padded = new Key(Array[Byte](1, 2, 3, 0)) // the same inline words as `short`, one byte longer
    val long = longKey(1)
    val longToo = new Key(long.bytes.updated(long.bytes.length - 1, 'x'.toByte)) // differs past byte 16 only
    for (k <- Seq(a, b, short, padded, long, longToo)) {
      val s = set(k, 1, 0)
      for (other <- Seq(a, b, short, padded, long, longToo))
        assert(ValueSet.keyMatch(s, other) == (if (other.equals(k)) 1 else 0), s"$k's set against $other")
    }
    assert(ValueSet.keyMatch(set(unkeyed(a), 1, 0), a) == -1)
    assert(ValueSet.keyMatch(ValueSet.Empty.packed, a) == -1)
  }

  test("keys sharing a hash, keyed and unkeyed sets: get and staged look-ups find each key's own set, across growth") {
    val rnd = new scala.util.Random(3)
    val table = new KeyTable(1)
    val (a, b) = sameHash
    val keys = Seq(a, b, unkeyed(a), unkeyed(b)) ++ (2 until 200).map(mixedKeys(200)(_))
    val versions = scala.collection.mutable.Map.empty[Key, Int]
    for ((k, i) <- rnd.shuffle(keys.zipWithIndex)) {
      table.reserve(1)
      assert(table.insert(k, set(k, 0, i % 3)))
      versions(k) = 0
      // Every key inserted so far, its latest version; every other key absent.
      val asked = rnd.shuffle(keys).take(40)
      val expected = asked.map(q => versions.getOrElse(q, -1))
      assert(asked.map(q => version(table.get(q))) == expected)
      assert(staged(table, asked) == expected)
      val again = keys(rnd.nextInt(keys.size))
      versions.get(again).foreach { v =>
        val before = table.get(again)
        assert(table.replace(again, before, set(again, v + 1, 0)))
        assert(!table.replace(again, before, set(again, v + 2, 0)), "a stale set is not replaced")
        versions(again) = v + 1
      }
    }
    assert(table.size == keys.size)
    assert(staged(table, keys) == keys.map(versions))
  }

  test(
    "a walk of stored references hands over every key once with its set, in groups, also when the table grows mid-walk") {
    val keys = mixedKeys(300).toSeq
    for (group <- Seq(1, 7, 64); growMidWalk <- Seq(false, true)) {
      val table = new KeyTable(1)
      table.reserve(keys.size)
      keys.zipWithIndex.foreach { case (k, i) => assert(table.insert(k, set(k, i, i % 3))) }
      val seen = scala.collection.mutable.ArrayBuffer.empty[(Key, Int)]
      var groups = 0
      table.foreachStored(group) { (refs, n) =>
        assert(n >= 1 && n <= group)
        // Growing copies every slot and marks the old one moved: the rest of this walk reads through.
        if (growMidWalk && groups == 0) table.reserve(4 * table.capacity)
        groups += 1
        (0 until n).foreach(j =>
          seen += (refs(2 * j).asInstanceOf[Key] -> version(refs(2 * j + 1).asInstanceOf[Array[Byte]])))
      }
      assert(seen.map(_._1).toSet == keys.toSet && seen.size == keys.size, s"group $group, grown $growMidWalk")
      assert(seen.forall { case (k, v) => v == keys.indexOf(k) }, "each key with its own set")
      assert(groups == (keys.size + group - 1) / group)
    }
  }
}
