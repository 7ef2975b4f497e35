package io.sharedstate.core.fetch

import io.sharedstate.core._
import io.sharedstate.core.row.{BinaryRow, ValueType}
import java.util.concurrent.TimeUnit
import org.scalatest.funsuite.AnyFunSuite
import scala.collection.mutable.ArrayBuffer

class FetchRulesSuite extends AnyFunSuite {
  private val vt = ValueType.parse("n BIGINT")
  private def k(s: String) = new Key(s.getBytes)
  private def n(v: Long) = BinaryRow.encode(vt, Array(Long.box(v)))

  /** State "s" with key "a" holding n = 1, 2, 3, 4 at times 10, 20, 30, 40, and U = 100. */
  private def loaded(rule: String = "replace", spec: StateSpec => StateSpec = identity): State = {
    val s = new State(spec(StateSpec("s", "k STRING", "n BIGINT", 2, rule)))
    s.registerWriter("w")
    val b = new UpdateBatch
    Seq(30L -> 3L, 10L -> 1L, 40L -> 4L, 20L -> 2L).foreach { case (t, v) => b.add("a".getBytes, t, n(v)) }
    s.stage("w", 0, 0, b)
    s.commitEpoch("w", 0, 100)
    s
  }
  private def agg(a: FetchAnswer): Seq[Any] = a match {
    case FetchAnswer.Aggregate(row, t, _) =>
      BinaryRow.decode(t, row).toSeq.map { case arr: Array[AnyRef] => arr.toSeq; case o => o }
    case other => fail(s"not an aggregate: $other")
  }

  test("latest: newest pair at or before t") {
    val s = loaded()
    assert(s.fetch(FetchRequest(k("a"), 25)).asInstanceOf[FetchAnswer.Found].time == 20L)
    assert(s.fetch(FetchRequest(k("a"), 5)) == FetchAnswer.Absent)
    assert(s.fetch(FetchRequest(k("zz"), 50)) == FetchAnswer.Absent)
    assert(s.fetch(FetchRequest(k("a"), 100)) == FetchAnswer.NotYet)
  }

  test("range(t1, t2): the pairs with t1 <= time <= t2, oldest first") {
    val s = loaded()
    val p = s.fetch(FetchRequest(k("a"), 30, s.fetchRule("range", 15))).asInstanceOf[FetchAnswer.Pairs]
    assert(p.times.toSeq == Seq(20L, 30L))
    assert(p.values.toSeq.map(BinaryRow.decode(vt, _)(0)) == Seq(2L, 3L))
    assert(s.fetch(FetchRequest(k("a"), 9, s.fetchRule("range", 0))).asInstanceOf[FetchAnswer.Pairs].size == 0)
    assert(s.fetch(FetchRequest(k("nope"), 50, s.fetchRule("range", 0))).asInstanceOf[FetchAnswer.Pairs].size == 0)
  }

  test("aggregates over a range: sum, count, min, max, avg, collect") {
    val s = loaded()
    def ask(f: String, from: Long, to: Long) = s.fetch(FetchRequest(k("a"), to, s.fetchRule(f, from)))
    assert(agg(ask("sum", 10, 30)) == Seq(6L))
    assert(agg(ask("count", 15, 40)) == Seq(3L))
    assert(agg(ask("min", 20, 99)) == Seq(2L))
    assert(agg(ask("max", 0, 35)) == Seq(3L))
    assert(agg(ask("avg", 10, 40)) == Seq(2.5))
    assert(agg(ask("collect", 20, 40)) == Seq(Seq(2L, 3L, 4L)))
    assert(agg(ask("count", 41, 99)) == Seq(0L), "count of an empty range is 0")
    assert(agg(ask("collect", 41, 99)) == Seq(Seq()), "collect of an empty range is []")
    assert(ask("sum", 41, 99) == FetchAnswer.Absent, "sum of an empty range is absent (SQL NULL)")
    def empty(a: FetchAnswer): Boolean = a.asInstanceOf[FetchAnswer.Aggregate].emptyRange
    assert(empty(ask("count", 41, 99)) && empty(ask("collect", 41, 99)), "the engine marks an empty range (no match)")
    assert(!empty(ask("count", 15, 40)) && !empty(ask("collect", 20, 40)) && !empty(ask("sum", 10, 30)))
  }

  test("every built-in fetch rule survives Java serialisation (requests travel to remote hosts) and answers the same") {
    val s = loaded()
    def roundTrip[T](o: T): T = {
      val bytes = new java.io.ByteArrayOutputStream
      val out = new java.io.ObjectOutputStream(bytes)
      out.writeObject(o)
      out.close()
      new java.io.ObjectInputStream(new java.io.ByteArrayInputStream(bytes.toByteArray)).readObject().asInstanceOf[T]
    }
    def same(a: FetchAnswer, b: FetchAnswer): Boolean = (a, b) match {
      case (FetchAnswer.Aggregate(x, xt, xe), FetchAnswer.Aggregate(y, yt, ye)) =>
        x.sameElements(y) && xt == yt && xe == ye
      case (FetchAnswer.Pairs(xt, xv), FetchAnswer.Pairs(yt, yv)) =>
        xt.sameElements(yt) && xv.length == yv.length && xv.indices.forall(i => xv(i).sameElements(yv(i)))
      case (FetchAnswer.Found(xt, xv), FetchAnswer.Found(yt, yv)) => xt == yt && xv.sameElements(yv)
      case _ => a == b
    }
    FetchRule.BuiltInNames.foreach { name =>
      val request = FetchRequest(k("a"), 35, s.fetchRule(name, 10))
      val copy = roundTrip(request)
      assert(same(s.fetch(copy), s.fetch(request)), name)
    }
  }

  test("aggregates that cannot read the value type, and rules outside the State's set, fail clearly") {
    val strings =
      new State(StateSpec("c", "k STRING", "campaign STRING", 1, "replace", fetchRules = Seq("latest", "range")))
    assert(
      intercept[SharedStateException](strings.fetchRule("sum")).getMessage.contains("does not answer fetch rule 'sum'"))
    val all = new State(StateSpec("d", "k STRING", "campaign STRING", 1, "replace"))
    assert(intercept[SharedStateException](all.fetchRule("avg")).getMessage.contains("'campaign' is STRING"))
    assert(intercept[SharedStateException](all.fetchRule("median")).getMessage.contains(
        "does not answer fetch rule 'median'"))
    assert(intercept[SharedStateException](StateSpec("e", "k STRING", "v STRING", 1, "replace",
          fetchRules = Seq("top3")))
        .getMessage.contains("Unknown fetch rule 'top3'"))
  }

  test("a user fetch rule by class name") {
    val s = loaded(spec = _.copy(fetchRules = Seq("latest", "class:io.sharedstate.core.fetch.PairCountRule")))
    val rule = s.fetchRule("class:io.sharedstate.core.fetch.PairCountRule")
    assert(new String(s.fetch(FetchRequest(k("a"), 99, rule)).asInstanceOf[FetchAnswer.Found].value) == "4")
    assert(new String(s.fetch(FetchRequest(k("a"), 25, new PairCountRule)).asInstanceOf[FetchAnswer.Found].value) == "2")
    val strict = loaded(spec = _.copy(name = "strict", fetchRules = Seq("latest")))
    assert(intercept[SharedStateException](strict.fetch(FetchRequest(k("a"), 25, new PairCountRule))).getMessage.contains(
        "pair_count"))
  }

  test("read-uncommitted with staleness s is answered once t - s < U, from what is applied") {
    val s = loaded()
    val b = new UpdateBatch
    b.add("a".getBytes, 150, n(15))
    s.stage("w", 1, 0, b)
    s.commitEpoch("w", 1, 120)
    assert(s.fetch(FetchRequest(k("a"), 200)) == FetchAnswer.NotYet)
    assert(s.fetch(FetchRequest(k("a"), 200, mode = ReadMode.Uncommitted(50))) == FetchAnswer.NotYet,
      "200 - 50 >= U=120")
    val got = s.fetch(FetchRequest(k("a"), 200, mode = ReadMode.Uncommitted(100)))
    assert(got.asInstanceOf[FetchAnswer.Found].time == 40L, "the update at 150 is staged, not applied")
    assert(intercept[SharedStateException](ReadMode.Uncommitted(-1)).getMessage.contains("staleness must be >= 0"))
  }

  test("pending fetches wait in reply-time order and are answered as soon as U passes them") {
    val s = loaded()
    val order = ArrayBuffer.empty[Long]
    val futures = Seq(300L, 150L, 220L).map { t =>
      s.fetchAsync(FetchRequest(k("a"), t)).thenApply[FetchAnswer] { a => order.synchronized(order += t); a }
    }
    val now = s.fetchAsync(FetchRequest(k("a"), 50))
    assert(now.isDone && now.get.asInstanceOf[FetchAnswer.Found].time == 40L, "answerable at once")
    assert(s.pendingFetchCount == 3 && futures.forall(!_.isDone))
    val b = new UpdateBatch
    b.add("a".getBytes, 200, n(20))
    s.stage("w", 1, 0, b)
    s.commitEpoch("w", 1, 230)
    assert(order.toSeq == Seq(150L, 220L), "answered in reply-time order, the one at 300 still waits")
    assert(futures(1).get(1, TimeUnit.SECONDS).asInstanceOf[FetchAnswer.Found].time == 40L)
    assert(futures(2).get(1, TimeUnit.SECONDS).asInstanceOf[FetchAnswer.Found].time == 200L)
    assert(!futures(0).isDone && s.pendingFetchCount == 1)
    s.finishWriter("w")
    assert(futures(0).get(1, TimeUnit.SECONDS).asInstanceOf[FetchAnswer.Found].time == 200L,
      "a finished writer lets U reach +inf")
  }

  test("a fetch below fetch progress F fails, naming F; dropping the State fails waiting fetches") {
    val s = loaded()
    s.registerReader("r")
    s.reportFetchProgress("r", 35)
    val e = intercept[SharedStateException](s.fetch(FetchRequest(k("a"), 30)))
    assert(e.getMessage.contains("below its fetch progress F"))
    assert(intercept[SharedStateException](s.fetch(FetchRequest(k("a"), 90, s.fetchRule("range", 20)))).getMessage.contains(
        "F="))
    assert(s.fetch(FetchRequest(k("a"), 36)).asInstanceOf[FetchAnswer.Found].time == 30L,
      "keep_latest kept the newest pair below F")
    val reg = new StateRegistry
    val st = reg.create(StateSpec("gone", "k STRING", "n BIGINT", 1, "replace"))
    val waiting = st.fetchAsync(FetchRequest(k("a"), 10))
    reg.drop("gone")
    assert(intercept[java.util.concurrent.ExecutionException](waiting.get()).getCause.getMessage.contains("dropped"))
  }
}

/** A user fetch rule: how many pairs the key has at or before t, as text. */
class PairCountRule extends FetchRule {
  val name = "pair_count"
  def lowerBound(t: Long): Long = Long.MinValue
  def answer(set: ValueSet, t: Long): FetchAnswer =
    FetchAnswer.Found(t, (if (set == null) 0 else set.latestIndex(t) + 1).toString.getBytes)
}
