package io.sharedstate.core

import org.scalatest.funsuite.AnyFunSuite

class ValueSetSuite extends AnyFunSuite {
  private def v(s: String) = s.getBytes("UTF-8")
  private def str(b: Array[Byte]) = new String(b, "UTF-8")
  private val key = v("the key")

  test("latestIndex finds the newest pair at or before t") {
    val set = ValueSet.Empty.withPair(20, v("b")).withPair(10, v("a")).withPair(30, v("c"))
    assert(set.size == 3)
    assert(set.latestIndex(5) == -1)
    assert(str(set.valueAt(set.latestIndex(10))) == "a")
    assert(str(set.valueAt(set.latestIndex(29))) == "b")
    assert(str(set.valueAt(set.latestIndex(Long.MaxValue))) == "c")
  }

  test("latestIndex against a scan of the pairs, for short sets (counted) and long ones (searched), any t") {
    val rnd = new scala.util.Random(11)
    (1 to 2000).foreach { round =>
      val n = 1 + rnd.nextInt(40)
      val times = Array.fill(n)(rnd.nextLong(1000) - 500).distinct.sorted
      val set = ValueSet.of(key, times, times.map(t => v(s"v$t")))
      val asked = times.flatMap(t => Seq(t - 1, t, t + 1)) ++ Seq(Long.MinValue, Long.MaxValue, rnd.nextLong())
      asked.foreach(t => assert(set.latestIndex(t) == times.lastIndexWhere(_ <= t), s"round $round, t $t"))
    }
  }

  test("a pair at an existing timestamp is replaced, not duplicated") {
    val a = ValueSet.Empty.withPair(10, v("a"))
    val b = a.withPair(10, v("z"))
    assert(b.size == 1 && str(b.valueAt(0)) == "z")
    assert(str(a.valueAt(0)) == "a", "value sets are immutable")
  }

  test("payloadBytes counts timestamps and values") {
    val set = ValueSet.Empty.withPair(1, v("abc")).withPair(2, v("de"))
    assert(set.payloadBytes == 16 + 5)
  }

  // The pairs a view shows, as (time, value) strings.
  private def pairsOf(set: ValueSet) = (0 until set.size).map(i => (set.timeAt(i), str(set.valueAt(i))))

  test("appends in place grow the array's set and leave every earlier view as it was (random, against a list)") {
    val rnd = new scala.util.Random(5)
    var inPlace = 0
    (1 to 200).foreach { round =>
      var model = Vector.empty[(Long, String)]
      var set = ValueSet.Empty
      val views = scala.collection.mutable.ArrayBuffer.empty[(ValueSet, Vector[(Long, String)])]
      (1 to 1 + rnd.nextInt(30)).foreach { _ =>
        // Newer pairs (the common case), sometimes one at an existing or older time (then copied).
        val chain = Seq.fill(1 + rnd.nextInt(3))(
          if (model.nonEmpty && rnd.nextInt(6) == 0) model(rnd.nextInt(model.size))._1
          else 10L * views.size + rnd.nextInt(10) + 1000)
        val b = new ValueSet.Builder(key, set, chain.size, 0)
        chain.foreach { t =>
          val value = s"v$t-${rnd.nextInt(1000)}" * (1 + rnd.nextInt(3))
          b.put(t, v(value))
          model = (model.filterNot(_._1 == t) :+ (t -> value)).sortBy(_._1)
        }
        val size = b.size
        set =
          if (b.appendInPlace(_ => false)) { inPlace += 1; new ValueSet(set.packed, size) }
          else b.result(rnd.nextInt(4))
        assert(pairsOf(set) == model, s"round $round")
        assert(pairsOf(new ValueSet(set.packed)) == model, "a fresh view of the array shows the same pairs")
        assert(ValueSet.keyMatch(set.packed, new Key(key)) == 1, "every copy and append keeps the key")
        views += ((set, model))
      }
      views.foreach { case (view, then) => assert(pairsOf(view) == then, s"round $round: an earlier view changed") }
    }
    assert(inPlace > 500, s"only $inPlace appends went in place: the test does not exercise them")
  }

  test("an append in place needs room, every base pair kept, and an unsealed array; a sealed array is copied") {
    val full = new ValueSet.Builder(key, ValueSet.Empty, 2, 0)
    full.put(1, v("a")); full.put(2, v("b"))
    val exact = full.result(0) // no spare room
    val b1 = new ValueSet.Builder(key, exact, 1, 0); b1.put(3, v("c"))
    assert(!b1.appendInPlace(_ => false), "no room")
    val roomy = full.result(2)
    val b2 = new ValueSet.Builder(key, roomy, 1, 0); b2.put(2, v("z"))
    assert(!b2.appendInPlace(_ => false), "a replaced newest pair is not an append")
    val b3 = new ValueSet.Builder(key, roomy, 1, 0); b3.put(3, v("c"))
    assert(!b3.appendInPlace(_ => true), "the compaction would change the grown set")
    assert(new ValueSet(roomy.packed).size == 2, "a refused append publishes nothing")
    assert(ValueSet.seal(roomy), "sealed as it is")
    val b4 = new ValueSet.Builder(key, roomy, 1, 0); b4.put(3, v("c"))
    assert(!b4.appendInPlace(_ => false), "sealed")
    assert(pairsOf(new ValueSet(roomy.packed)) == Seq(1L -> "a", 2L -> "b"), "a sealed array reads as before")
    assert(pairsOf(b4.result()) == Seq(1L -> "a", 2L -> "b", 3L -> "c"))
    val other = full.result(2)
    val b5 = new ValueSet.Builder(key, other, 1, 0); b5.put(3, v("c"))
    assert(b5.appendInPlace(_ => false))
    assert(!ValueSet.seal(other), "the view is not the array's whole set any more: no seal")
    assert(ValueSet.seal(new ValueSet(other.packed)) && ValueSet.seal(new ValueSet(other.packed)),
      "sealing twice holds")
  }
}
