package io.sharedstate.core.concurrency

import io.sharedstate.core.{KeyTable, KeyTableFixtures}
import java.util.concurrent.{ConcurrentLinkedQueue, CountDownLatch}
import java.util.concurrent.atomic.{AtomicBoolean, AtomicIntegerArray}
import org.scalatest.funsuite.AnyFunSuite

/**
 * Read-while-apply on the key table with real threads, seeded: rounds as the engine runs them (the
 * committer grows the table for the round's new keys, then two appliers insert new keys and replace
 * existing ones at once, each key by one of them), while readers look keys up and a compactor
 * replaces sets by equal copies, all the time, across many growths (one reader looks keys up in
 * staged groups, as a batched fetch does: [[KeyTable.Lookups]]). The oracle is the version each
 * key had when its round ended: a read never sees less than that (no lost or hidden key, no lost
 * update), never more than the version being written, and at the end every key holds exactly its
 * number of updates.
 */
class KeyTableStressSuite extends AnyFunSuite {
  private val long = sys.props.contains("sharedstate.stress") || sys.env.contains("SHAREDSTATE_STRESS")

  import KeyTableFixtures.{set, version}

  private def run(seed: Long, rounds: Int, maxKeys: Int): Unit = {
    val rnd = new scala.util.Random(seed)
    val table = new KeyTable(1)
    // Short keys (compared inline), keys longer than 16 bytes, two that share a hash; some sets keep no key.
    val keys = KeyTableFixtures.mixedKeys(maxKeys)
    val done = new AtomicIntegerArray(maxKeys) // version at the end of the last round, -1: not yet inserted
    val writing = new AtomicIntegerArray(maxKeys) // highest version an applier may be publishing
    (0 until maxKeys).foreach { i => done.set(i, -1); writing.set(i, -1) }
    val errors = new ConcurrentLinkedQueue[String]()
    val stop = new AtomicBoolean(false)
    def check(i: Int): Unit = {
      val lower = done.get(i)
      val v = version(table.get(keys(i)))
      val upper = writing.get(i)
      if (v < lower || v > upper) errors.add(s"seed $seed: key $i read version $v, expected within [$lower, $upper]")
    }
    val readers = (0 until 2).map { r =>
      new Thread(() => {
        val local = new scala.util.Random(seed * 31 + r)
        while (!stop.get()) check(local.nextInt(maxKeys))
      })
    }
    // A batched reader (the fetch path's staged look-ups): a group's lower bounds are read before its
    // first stage, its upper bounds after its last, so each key's read falls between them.
    val batchReader = new Thread(() => {
      val local = new scala.util.Random(seed * 37)
      val lookups = new KeyTable.Lookups(16)
      while (!stop.get()) {
        val group = Array.fill(1 + local.nextInt(16))(local.nextInt(maxKeys))
        val lower = group.map(done.get)
        group.indices.foreach(j => table.touchHome(lookups, keys(group(j)).hashCode))
        group.indices.foreach(j => table.start(lookups, j, keys(group(j)), keys(group(j)).hashCode))
        group.indices.foreach(lookups.touchFound)
        val read = group.indices.map(j => version(lookups.finish(j)))
        group.indices.foreach { j =>
          val upper = writing.get(group(j))
          if (read(j) < lower(j) || read(j) > upper) errors.add(
            s"seed $seed: batched read of key ${group(j)} saw version ${read(j)}, expected within [${lower(j)}, $upper]")
        }
      }
    })
    val compactor = new Thread(() => {
      val local = new scala.util.Random(seed * 17)
      while (!stop.get()) {
        val key = keys(local.nextInt(maxKeys))
        val before = table.get(key)
        if (before != null) table.replace(key, before, before.clone())
      }
    })
    (readers :+ batchReader :+ compactor).foreach(_.start())
    var inserted = 0
    var round = 0
    while (round < rounds && errors.isEmpty) {
      val fresh = math.min(maxKeys - inserted, rnd.nextInt(maxKeys / 8 + 1))
      val bumps =
        if (inserted == 0) Array.emptyIntArray else Array.fill(rnd.nextInt(inserted + 1))(rnd.nextInt(inserted))
      val work = (bumps.distinct ++ (inserted until inserted + fresh)).sorted
      work.foreach(i => writing.set(i, done.get(i) + 1))
      table.reserve(fresh)
      val start = new CountDownLatch(1)
      val appliers = (0 until 2).map { a =>
        new Thread(() => {
          start.await()
          work.filter(_ % 2 == a).foreach { i =>
            var ok = false
            while (!ok) {
              val before = table.get(keys(i))
              ok =
                if (before == null) table.insert(keys(i), set(keys(i), 0, i % 5))
                else table.replace(keys(i), before, set(keys(i), version(before) + 1, i % 5))
            }
          }
        })
      }
      appliers.foreach(_.start()); start.countDown(); appliers.foreach(_.join())
      work.foreach(i => done.set(i, writing.get(i)))
      inserted += fresh
      round += 1
    }
    stop.set(true)
    (readers :+ batchReader :+ compactor).foreach(_.join())
    assert(errors.isEmpty, errors.toArray.take(5).mkString("\n"))
    assert(table.size == inserted)
    (0 until maxKeys).foreach(i => assert(version(table.get(keys(i))) == done.get(i), s"seed $seed key $i"))
    var seen = 0
    table.foreach((_, _) => seen += 1)
    assert(seen == inserted, "iteration sees every key once")
  }

  test("reads, compactions and growth while two appliers insert and replace agree with the oracle (fixed seeds)") {
    val seeds = if (long) 1L to 40L else 1L to 6L
    seeds.foreach(seed => run(seed, rounds = if (long) 400 else 80, maxKeys = if (long) 50000 else 6000))
  }
}
