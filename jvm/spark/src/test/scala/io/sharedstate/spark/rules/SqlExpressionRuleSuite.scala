package io.sharedstate.spark.rules

import io.sharedstate.core.{FetchAnswer, Key, SharedStateException, State, StateSpec, UpdateBatch}
import io.sharedstate.core.row.{BinaryRow, ValueType}
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/**
 * `expr:` update rules (Spark SQL over `old` and `new`) on the engine, found through the
 * UpdateRuleProvider SPI. Updates arrive shuffled across epochs; the oracle applies the same
 * function in event-time order with plain Scala.
 */
class SqlExpressionRuleSuite extends AnyFunSuite {

  /** Loads `updates` (key, time, value row) in shuffled epochs, then finishes the writer (U = +inf). */
  private def load(spec: StateSpec, updates: Seq[(String, Long, Array[AnyRef])], r: Random): State = {
    val s = new State(spec)
    s.registerWriter("w")
    r.shuffle(updates).grouped(7).zipWithIndex.foreach { case (group, epoch) =>
      val b = new UpdateBatch
      group.foreach { case (k, t, v) => b.add(k.getBytes, t, BinaryRow.encode(s.valueType, v)) }
      s.stage("w", epoch.toLong, 0, b)
      s.commitEpoch("w", epoch.toLong, 0) // U stays at 0: every update waits, then applies in time order
    }
    s.finishWriter("w")
    assert(s.metrics.updatesRejected == 0, s.rejectedUpdates.map(_.reason))
    s
  }

  /** The oracle: per key, `f` folded over the updates in time order, as of each update's time. */
  private def oracle[V](updates: Seq[(String, Long, V)], f: (Option[V], V) => V): Map[(String, Long), V] =
    updates.groupBy(_._1).toSeq.flatMap { case (k, us) =>
      us.sortBy(_._2).scanLeft((0L, Option.empty[V])) { case ((_, prev), (_, t, v)) => (t, Some(f(prev, v))) }
        .tail.map { case (t, v) => (k, t) -> v.get }
    }.toMap

  private def latest(s: State, key: String, t: Long): Seq[Any] =
    s.fetchLatest(new Key(key.getBytes), t) match {
      case FetchAnswer.Found(_, v) => BinaryRow.decode(s.valueType, v).toSeq
      case other => fail(s"no value for $key at $t: $other")
    }

  test("expr:greatest(old, new) keeps the running maximum, whatever order updates arrived in") {
    val r = new Random(3)
    val updates = Seq.tabulate(300)(i => (s"k${r.nextInt(8)}", i.toLong * 10 + 1, r.nextInt(1000).toLong - 500))
    val s = load(StateSpec("greatest", "k STRING", "v BIGINT", 3, "expr:greatest(old, new)"),
      updates.map { case (k, t, v) => (k, t, Array[AnyRef](Long.box(v))) }, r)
    val want = oracle[Long](updates, (old, v) => old.fold(v)(math.max(_, v)))
    for (((k, t), v) <- want) assert(latest(s, k, t) == Seq(v), s"$k at $t")
  }

  test("a struct-valued expression over several columns: a running sum and a non-commutative chain") {
    val r = new Random(5)
    val rule = "expr:struct(coalesce(old.total, 0) + new.total, concat_ws('>', old.path, new.path))"
    val updates = Seq.tabulate(200)(i => (s"k${r.nextInt(5)}", i.toLong * 7 + 3, (r.nextInt(100), s"p$i")))
    val s = load(StateSpec("chain", "k STRING", "total INT, path STRING", 4, rule),
      updates.map { case (k, t, (n, p)) => (k, t, Array[AnyRef](Int.box(n), p)) }, r)
    val want = oracle[(Int, String)](updates, (old, v) => old.fold(v) { case (n, p) => (n + v._1, s"$p>${v._2}") })
    for (((k, t), (n, p)) <- want) assert(latest(s, k, t) == Seq(n, p), s"$k at $t")
  }

  test("old is null on a key's first update; another result type is cast as an INSERT would (ANSI)") {
    val s = load(
      StateSpec("firsts", "k STRING", "v BIGINT", 1, "expr:if(old IS NULL, -1, old + new)"),
      Seq(("a", 10L, Array[AnyRef](Long.box(5))), ("a", 20L, Array[AnyRef](Long.box(7)))),
      new Random(1)
    )
    assert(latest(s, "a", 10) == Seq(-1L) && latest(s, "a", 20) == Seq(6L))
    val t = ValueType.parse("v BIGINT")
    val rule = new SqlExpressionRuleProvider().create("cast(new AS INT) * 2", t)
    assert(BinaryRow.decode(t, rule(null, BinaryRow.encode(t, Array(Long.box(21)))))(0) == 42L)
    val i = ValueType.parse("v INT")
    val narrowing = new SqlExpressionRuleProvider().create("cast(new AS BIGINT) * 3", i)
    assert(BinaryRow.decode(i, narrowing(null, BinaryRow.encode(i, Array(Int.box(7)))))(0) == 21)
    val overflow = intercept[ArithmeticException](narrowing(null, BinaryRow.encode(i, Array(Int.box(Int.MaxValue)))))
    assert(overflow.getMessage.contains("overflow") || overflow.getMessage.contains("CAST"), overflow.getMessage)
  }

  test("an expression that throws rejects that update (rule_failed), the rest of the key's chain applies") {
    val div = new State(StateSpec("div", "k STRING", "v INT", 1,
        "expr:if(new = 0, raise_error('zero'), coalesce(old, 0) + 100 div new)"))
    div.registerWriter("w")
    val b = new UpdateBatch
    Seq(1L -> 5, 2L -> 0, 3L -> 10).foreach { case (t, v) =>
      b.add("k".getBytes, t,
        BinaryRow.encode(div.valueType,
          Array(Int.box(v))))
    }
    div.stage("w", 0, 0, b)
    div.commitEpoch("w", 0, 10)
    assert(div.rejectedUpdates.map(r => (r.time.longValue, r.reason.startsWith("rule_failed"))) == Seq(2L -> true))
    assert(latest(div, "k", 9) == Seq(30), "100 div 5 = 20, then 20 + 100 div 10")
  }

  test("bad expressions fail when the State is defined, naming the rule and what Spark said") {
    def error(value: String, rule: String): String =
      intercept[SharedStateException](StateSpec("bad", "k STRING", value, 1, rule)).getMessage
    val parse = error("v BIGINT", "expr:greatest(old,")
    assert(parse.contains("'expr:greatest(old,'") && parse.contains("cannot parse"), parse)
    val unknown = error("v BIGINT", "expr:old + nosuch")
    assert(unknown.contains("cannot resolve") && unknown.contains("nosuch"), unknown)
    val function = error("v BIGINT", "expr:no_such_fn(old, new)")
    assert(function.contains("cannot resolve") && function.contains("no_such_fn"), function)
    val returns = error("v BIGINT", "expr:concat('x', new)")
    assert(returns.contains("returns STRING") && returns.contains("BIGINT"), returns)
    val struct = error("a INT, b STRING", "expr:new.a")
    assert(struct.contains("returns INT") && struct.contains("STRUCT<"), struct)
    assert(error("v DOUBLE", "expr:new + rand()").contains("not deterministic"))
    assert(error("v BIGINT", "expr:").contains("empty"))
    assert(error("v BIGINT", "expr:max(new)").contains("'expr:max(new)'"))
  }

  test("the provider names the rule's prefix without loading the rule (embedded JVMs have no Spark)") {
    assert(new SqlExpressionRuleProvider().prefix == SqlExpressionRule.Prefix)
  }
}
