package io.sharedstate.core.rules

import io.sharedstate.core.{FetchAnswer, Key, SharedStateException, State, StateSpec, UpdateBatch}
import io.sharedstate.core.row.{BinaryRow, ValueType}
import org.scalatest.funsuite.AnyFunSuite

/** A non-commutative user rule: the stored string is the previous one, '|', then the incoming one. */
class ConcatRule(t: ValueType) extends UpdateRule {
  val name = "concat"
  def apply(previous: Array[Byte], incoming: Array[Byte]): Array[Byte] =
    if (previous == null) incoming
    else BinaryRow.encode(t, Array(s"${BinaryRow.decode(t, previous)(0)}|${BinaryRow.decode(t, incoming)(0)}"))
}

class NotARule

class UpdateRulesSuite extends AnyFunSuite {
  private def row(t: ValueType, vs: AnyRef*): Array[Byte] = BinaryRow.encode(t, vs.toArray)
  private def values(t: ValueType, b: Array[Byte]): Seq[Any] =
    BinaryRow.decode(t, b).toSeq.map { case a: Array[AnyRef] => a.toSeq; case o => o }
  private def fold(rule: UpdateRule, rows: Array[Byte]*): Array[Byte] =
    rows.foldLeft(null: Array[Byte])((p, r) => rule(p, r))

  test("replace keeps the incoming value") {
    val t = ValueType.parse("c STRING")
    assert(values(t, fold(UpdateRule.resolve("replace", t), row(t, "a"), row(t, "b"))) == Seq("b"))
  }

  test("sum and add: column by column, nulls skipped, integer and floating types") {
    val t = ValueType.parse("n BIGINT, i INT, d DOUBLE, f FLOAT")
    for (name <- Seq("sum", "add")) {
      val r = UpdateRule.resolve(name, t)
      val out = fold(
        r,
        row(t, Long.box(1), Int.box(2), Double.box(0.5), Float.box(1f)),
        row(t, Long.box(10), null, Double.box(0.25), Float.box(2f)),
        row(t, null, Int.box(5), null, null)
      )
      assert(values(t, out) == Seq(11L, 7, 0.75, 3f), name)
    }
  }

  test("sum of numeric arrays is element-wise (gradients); a shorter array or null element is absent") {
    val t = ValueType.parse("w ARRAY<DOUBLE>")
    val r = UpdateRule.resolve("sum", t)
    val out = fold(r, row(t, Array[AnyRef](Double.box(1), Double.box(2))),
      row(t, Array[AnyRef](Double.box(0.5), null, Double.box(4))))
    assert(values(t, out) == Seq(Seq(1.5, 2.0, 4.0)))
    val li = ValueType.parse("c ARRAY<BIGINT>")
    assert(values(li,
      fold(UpdateRule.resolve("sum", li), row(li, Array[AnyRef](Long.box(1))),
        row(li, Array[AnyRef](Long.box(2))))) == Seq(Seq(3L)))
  }

  test("min and max order numbers, arrays element-wise, strings and timestamps") {
    val t = ValueType.parse("n BIGINT, s STRING, ts TIMESTAMP, a ARRAY<INT>")
    val rows = Seq(
      row(t, Long.box(5), "m", Long.box(50), Array[AnyRef](Int.box(3), Int.box(9))),
      row(t, Long.box(2), "z", Long.box(70), Array[AnyRef](Int.box(4), Int.box(1))),
      row(t, Long.box(8), "a", null, Array[AnyRef](Int.box(0)))
    )
    assert(values(t, fold(UpdateRule.resolve("min", t), rows: _*)) == Seq(2L, "a", 50L, Seq(0, 1)))
    assert(values(t, fold(UpdateRule.resolve("max", t), rows: _*)) == Seq(8L, "z", 70L, Seq(4, 9)))
  }

  test("append keeps a set in insertion order: +x adds, -x removes, bare x adds") {
    val t = ValueType.parse("neighbours ARRAY<STRING>, label STRING")
    val r = UpdateRule.resolve("append", t)
    def ops(label: String, xs: String*) = row(t, xs.toArray[AnyRef], label)
    val out = fold(r, ops("l1", "+e1", "+e2", "+e3"), ops("l2", "-e2", "e4", "+e1"), ops("l3", "-e3", "-nope"))
    assert(values(t, out) == Seq(Seq("e1", "e4"), "l3"))
    assert(values(t, r(null, ops("l", "-x", "+y"))) == Seq(Seq("y"), "l"), "the first value is normalised too")
    val nums = ValueType.parse("ids ARRAY<BIGINT>")
    val n = UpdateRule.resolve("append", nums)
    assert(values(nums,
      fold(n, row(nums, Array[AnyRef](Long.box(1), Long.box(2))),
        row(nums, Array[AnyRef](Long.box(2), Long.box(3))))) ==
      Seq(Seq(1L, 2L, 3L)))
  }

  test("rules that cannot read the value type fail at definition, naming the column") {
    val e = intercept[SharedStateException](UpdateRule.resolve("sum", ValueType.parse("campaign STRING")))
    assert(e.getMessage.contains("'campaign'") && e.getMessage.contains("STRING") && e.getMessage.contains("'sum'"))
    val e2 = intercept[SharedStateException](UpdateRule.resolve("append", ValueType.parse("n BIGINT")))
    assert(e2.getMessage.contains("needs an ARRAY column"))
    val e3 = intercept[SharedStateException](StateSpec("s", "k STRING", "v STRING", 1, "max_of_squares"))
    assert(e3.getMessage.contains("Unknown update rule 'max_of_squares'") && e3.getMessage.contains("append"))
  }

  test("user rules: by class name, or registered under a name; bad classes fail clearly") {
    val t = ValueType.parse("s STRING")
    val byClass = UpdateRule.resolve("class:io.sharedstate.core.rules.ConcatRule", t)
    assert(values(t, fold(byClass, row(t, "a"), row(t, "b"))) == Seq("a|b"))
    UpdateRule.register("concat_test", t2 => new ConcatRule(t2))
    assert(UpdateRule.resolve("CONCAT_TEST", t).name == "concat")
    assert(intercept[SharedStateException](UpdateRule.resolve("class:no.such.Rule", t)).getMessage.contains(
        "not on the classpath"))
    assert(intercept[SharedStateException](UpdateRule.resolve("class:io.sharedstate.core.rules.NotARule", t))
        .getMessage.contains("does not implement"))
    assert(intercept[SharedStateException](UpdateRule.register("sum", _ => UpdateRule.Replace)).getMessage.contains(
        "built in"))
  }

  test("a class: rule is checked before its class is initialised: a non-rule's static initialiser never runs") {
    val t = ValueType.parse("s STRING")
    val notRule = "io.sharedstate.core.rules.StaticInitNotARule"
    val notRuleTrace = "sharedstate.test.StaticInitNotARule.initialised"
    val checks = Seq[(String, String => Any)](
      "io.sharedstate.core.rules.UpdateRule" -> (n => UpdateRule.resolve(n, t)),
      "io.sharedstate.core.fetch.FetchRule" -> (n => io.sharedstate.core.fetch.FetchRule.resolve(n, t)),
      "io.sharedstate.core.compaction.CompactionRule" -> (n =>
        io.sharedstate.core.compaction.CompactionRule.resolve(n, t))
    )
    for ((interface, resolve) <- checks) {
      val e = intercept[SharedStateException](resolve(s"class:$notRule"))
      assert(e.getMessage.contains(s"'$notRule'") && e.getMessage.contains(s"does not implement $interface"),
        e.getMessage)
    }
    assert(System.getProperty(notRuleTrace) == null, "the static initialiser of a class that is not a rule ran")
    val ruleTrace = "sharedstate.test.StaticInitRule.initialised"
    assert(System.getProperty(ruleTrace) == null)
    assert(UpdateRule.resolve("class:io.sharedstate.core.rules.StaticInitRule", t).name == "static_init")
    assert(System.getProperty(ruleTrace) == "true", "a checked rule is initialised when it is constructed")
  }

  test("a name with a prefix the engine does not know goes to the UpdateRuleProvider for it (ServiceLoader)") {
    val t = ValueType.parse("s STRING")
    val joined = UpdateRule.resolve("JOIN:/", t)
    assert(joined.name == "join:/" && values(t, fold(joined, row(t, "a"), row(t, "b"), row(t, "c"))) == Seq("a/b/c"))
    assert(StateSpec("viaProvider", "k STRING", "s STRING", 1, "join:-").updateRule == "join:-")
    assert(intercept[SharedStateException](UpdateRule.resolve("join:", t)).getMessage.contains("separator is empty"))
    val e = intercept[SharedStateException](UpdateRule.resolve("nope:x", t))
    assert(e.getMessage.contains("Unknown update rule 'nope:x'") && e.getMessage.contains("'join:...'"), e.getMessage)
    val noSpark = intercept[SharedStateException](UpdateRule.resolve("expr:greatest(old, new)", t)).getMessage
    assert(noSpark.contains("need the sharedstate Spark plugin"), noSpark)
  }

  test("a non-commutative rule gives the same answer whatever order the updates arrived in") {
    val t = ValueType.parse("s STRING")
    val updates = Seq(30L -> "c", 10L -> "a", 20L -> "b", 40L -> "d")
    val answers = updates.permutations.map { perm =>
      val s = new State(StateSpec("chain", "k STRING", "s STRING", 2, "class:io.sharedstate.core.rules.ConcatRule"))
      s.registerWriter("w")
      perm.zipWithIndex.foreach { case ((ts, v), i) =>
        val b = new UpdateBatch
        b.add("k".getBytes, ts, row(t, v))
        s.stage("w", i.toLong, 0, b)
        s.commitEpoch("w", i.toLong, 5) // U stays at 5: everything waits, then applies in time order
      }
      s.commitEpoch("w", 99, 100)
      s.fetchLatest(new Key("k".getBytes), 99) match {
        case FetchAnswer.Found(_, v) => BinaryRow.decode(t, v)(0)
        case other => other
      }
    }.toSet
    assert(answers == Set("a|b|c|d"))
  }

  test("an update the rule throws on is rejected with the reason; the rest of the key's chain applies") {
    UpdateRule.register(
      "picky_test",
      _ =>
        new UpdateRule {
          val name = "picky"
          def apply(p: Array[Byte], in: Array[Byte]): Array[Byte] =
            if (new String(in) == "bad") throw new IllegalStateException("no bad values") else in
        }
    )
    val s = new State(StateSpec("picky", "k STRING", "v BINARY", 1, "picky_test"))
    s.registerWriter("w")
    val b = new UpdateBatch
    Seq(1L -> "ok1", 2L -> "bad", 3L -> "ok3").foreach { case (ts, v) => b.add("k".getBytes, ts, v.getBytes) }
    s.stage("w", 0, 0, b)
    s.commitEpoch("w", 0, 10)
    val rejected = s.rejectedUpdates
    assert(rejected.size == 1 && rejected.head.reason.startsWith("rule_failed") && rejected.head.reason.contains(
      "no bad values"))
    assert(rejected.head.writer == "w" && rejected.head.time == 2L)
    assert(s.fetchLatest(new Key("k".getBytes), 9).asInstanceOf[FetchAnswer.Found].time == 3L)
    assert(s.metrics.updatesApplied == 2)
  }
}
