package io.sharedstate.core

import io.sharedstate.core.fetch.{FetchRequest, ReadMode}
import io.sharedstate.core.row.BinaryRowWriter
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/**
 * The batched fetch (look-ups of a group first, then answers) against the same requests answered one
 * at a time: every rule and read mode, NotYet, absent keys, lazy compaction below F, and batches that
 * span several look-up groups.
 */
class StateBatchFetchSuite extends AnyFunSuite {
  private def row(v: Long): Array[Byte] = { val w = new BinaryRowWriter(1); w.setLong(0, v); w.toBytes }
  private def key(k: Int) = new Key(row(k.toLong))

  private def show(a: FetchAnswer): String = a match {
    case FetchAnswer.Found(t, v) => s"Found($t, ${v.toSeq})"
    case FetchAnswer.Pairs(ts, vs) => s"Pairs(${ts.toSeq}, ${vs.map(_.toSeq).toSeq})"
    case FetchAnswer.Aggregate(r, _, _) => s"Aggregate(${r.toSeq})"
    case other => other.toString
  }

  /** A State of `keys` keys with several versions each, U = 1000 and the reader "r" at F = 400. */
  private def loaded(seed: Long, keys: Int): State = {
    val rnd = new Random(seed)
    val state = new State(StateSpec("batch", "k BIGINT", "v BIGINT", 3, "replace"))
    state.registerWriter("w")
    state.registerReader("r")
    (0 until 5).foreach { epoch =>
      val b = new UpdateBatch
      (0 until keys).foreach { k =>
        if (rnd.nextInt(3) > 0) b.add(row(k.toLong), epoch * 200L + rnd.nextInt(200), row(rnd.nextLong()))
      }
      state.stage("w", epoch, 0, b)
      state.commitEpoch("w", epoch, (epoch + 1) * 200L)
    }
    state.reportFetchProgress("r", 400L)
    state
  }

  private def randomRequests(state: State, rnd: Random, n: Int, keys: Int): Array[FetchRequest] =
    Array.fill(n) {
      val t = 400L + rnd.nextInt(700) // some at or above U = 1000: not yet, unless uncommitted
      val mode = if (rnd.nextInt(4) == 0) ReadMode.Uncommitted(rnd.nextInt(200)) else ReadMode.Committed
      val rule = rnd.nextInt(4) match {
        case 0 => state.fetchRule("range", 400L + rnd.nextInt(300))
        case 1 => state.fetchRule("sum", 400L + rnd.nextInt(300))
        case _ => state.fetchRule("latest")
      }
      FetchRequest(key(rnd.nextInt(keys + 5)), t, rule, mode) // keys past `keys` were never written
    }

  test("a batched fetch answers each request as fetching it alone does, across look-up groups") {
    (1 to 20).foreach { seed =>
      val rnd = new Random(seed)
      val state = loaded(seed, keys = 40)
      val n =
        Seq(0, 1, State.FetchGroup - 1, State.FetchGroup, State.FetchGroup + 1, 5 * State.FetchGroup + 7)(seed % 6)
      val requests = randomRequests(state, rnd, n, keys = 40)
      val batched = state.fetch(requests).map(show).toSeq
      val alone = requests.map(r => show(state.fetch(r))).toSeq
      assert(batched == alone, s"seed=$seed n=$n")
      if (n > 20) {
        assert(batched.count(_ == "NotYet") > 0, s"seed=$seed: no request was not yet answerable")
        assert(batched.count(_.startsWith("Found")) > 0, s"seed=$seed: nothing found")
      }
    }
  }

  test("a batched fetch answers the newest pair at or before t, from an oracle over the written history") {
    val state = new State(StateSpec("oracle", "k BIGINT", "v BIGINT", 2, "replace"))
    state.registerWriter("w")
    val rnd = new Random(7)
    val history = (0 until 2000).map(_ => (rnd.nextInt(100), rnd.nextInt(1000).toLong, rnd.nextLong())).distinctBy(h =>
      (h._1, h._2))
    val b = new UpdateBatch
    rnd.shuffle(history).foreach { case (k, t, v) => b.add(row(k.toLong), t, row(v)) }
    state.stage("w", 0, 0, b)
    state.commitEpoch("w", 0, 1000L)
    val asked = Array.fill(700)((rnd.nextInt(110), rnd.nextInt(1100).toLong))
    val answers = state.fetch(asked.map { case (k, t) => FetchRequest(key(k), t) })
    asked.zip(answers).foreach { case ((k, t), answer) =>
      val expected =
        if (t >= 1000L) "NotYet"
        else history.filter(h => h._1 == k && h._2 <= t).maxByOption(_._2)
          .fold("Absent")(h => show(FetchAnswer.Found(h._2, row(h._3))))
      assert(show(answer) == expected, s"key $k at $t")
    }
  }

  test("a batch with a fetch below F fails as that fetch alone does") {
    val state = loaded(3, keys = 10)
    val requests = Array.tabulate(100)(i => FetchRequest(key(i % 10), if (i == 70) 399L else 500L))
    val alone = intercept[SharedStateException](state.fetch(requests(70)))
    val batched = intercept[SharedStateException](state.fetch(requests))
    assert(batched.getMessage == alone.getMessage)
    assert(batched.getMessage.contains("below its fetch progress F"))
  }
}
