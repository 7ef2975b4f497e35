package io.sharedstate.core.partial

import io.sharedstate.core.{FetchAnswer, Key, SharedStateException, State, StateSpec, UpdateBatch}
import io.sharedstate.core.fetch.{FetchRequest, FetchRule, ReadMode}
import io.sharedstate.core.row.{BinaryRow, ValueType}
import org.scalatest.funsuite.AnyFunSuite

/** The engine part of partial States: instances, global and local fetches, read-committed, errors. */
class PartialStateSuite extends AnyFunSuite {
  private val t = ValueType.parse("n BIGINT")
  private def v(n: Long) = BinaryRow.encode(t, Array[AnyRef](java.lang.Long.valueOf(n)))
  private def n(a: FetchAnswer): Any = a match {
    case FetchAnswer.Found(_, bytes) => BinaryRow.decode(t, bytes)(0)
    case FetchAnswer.Absent => "absent"
    case FetchAnswer.NotYet => "notyet"
    case other => other
  }
  private val k = new Key("k".getBytes("UTF-8"))

  private def stage(s: State, w: String, epoch: Long, task: Int, rows: (Long, Long)*): Unit = {
    val b = new UpdateBatch
    rows.foreach { case (time, x) => b.add(k.bytes, time, PartialValues.single(task, v(x))) }
    s.stage(w, epoch, task, b)
  }

  private def state(rule: String, merge: String, instances: String = "task") =
    new State(StateSpec("p", "k STRING", "n BIGINT", 2, rule, partial = merge, instances = instances))

  test("each task keeps its instance; a global fetch merges them as of t, a local one reads one") {
    val s = state("sum", "max")
    s.registerWriter("w")
    stage(s, "w", 0, 0, 10L -> 1, 30L -> 5)
    stage(s, "w", 0, 1, 20L -> 4)
    s.commitEpoch("w", 0, 25)
    assert(n(s.fetch(FetchRequest(k, 15))) == 1L)
    assert(n(s.fetch(FetchRequest(k, 24))) == 4L) // max(1, 4)
    assert(n(s.fetch(FetchRequest(k, 24, LocalFetch(FetchRule.Latest, 0)))) == 1L)
    assert(n(s.fetch(FetchRequest(k, 24, LocalFetch(FetchRule.Latest, 1)))) == 4L)
    assert(n(s.fetch(FetchRequest(k, 15, LocalFetch(FetchRule.Latest, 1)))) == "absent")
    assert(n(s.fetch(FetchRequest(k, 25))) == "notyet") // read-committed: U = 25
    assert(n(s.fetch(FetchRequest(k, 35, mode = ReadMode.Uncommitted(15)))) == 4L) // SSP: the value at 20
    s.commitEpoch("w", 1, 40)
    assert(n(s.fetch(FetchRequest(k, 35))) == 6L) // max(1 + 5, 4)
    assert(n(s.fetch(FetchRequest(k, 35, LocalFetch(FetchRule.Latest, 0)))) == 6L)
  }

  test("range and aggregate fetch rules read the merged values") {
    val s = state("replace", "sum")
    s.registerWriter("w")
    stage(s, "w", 0, 0, 10L -> 1, 30L -> 2)
    stage(s, "w", 0, 3, 20L -> 10)
    s.commitEpoch("w", 0, 100)
    s.fetch(FetchRequest(k, 50, FetchRule.Range(15))) match {
      case FetchAnswer.Pairs(times, values) =>
        assert(times.toSeq == Seq(20L, 30L))
        assert(values.map(BinaryRow.decode(t, _)(0)).toSeq == Seq(11L, 12L))
      case other => fail(s"$other")
    }
    s.fetch(FetchRequest(k, 50, FetchRule.resolve("max", t, 0))) match {
      case FetchAnswer.Aggregate(row, _, _) => assert(BinaryRow.decode(t, row)(0) == 12L)
      case other => fail(s"$other")
    }
  }

  test("U is the minimum over the writers: a global fetch waits for every writer's instance") {
    val s = state("sum", "sum", instances = "query")
    s.registerWriter("a"); s.registerWriter("b")
    stage(s, "a", 0, 1, 10L -> 1)
    s.commitEpoch("a", 0, 50)
    assert(n(s.fetch(FetchRequest(k, 20))) == "notyet")
    val pending = s.fetchAsync(FetchRequest(k, 20))
    stage(s, "b", 0, 2, 15L -> 100)
    s.commitEpoch("b", 0, 30)
    assert(n(pending.get()) == 101L)
  }

  test("bad use: a local fetch of a non-partial State or of per-query instances, a plain value") {
    val plain = new State(StateSpec("q", "k STRING", "n BIGINT", 1, "sum"))
    plain.registerWriter("w"); plain.commitEpoch("w", 0, 10)
    val e = intercept[SharedStateException](plain.fetch(FetchRequest(k, 5, LocalFetch(FetchRule.Latest, 0))))
    assert(e.getMessage.contains("State 'q' is not partial"))
    val q = state("sum", "sum", instances = "query")
    q.registerWriter("w"); q.commitEpoch("w", 0, 10)
    val l = intercept[SharedStateException](q.fetch(FetchRequest(k, 5, LocalFetch(FetchRule.Latest, 0))))
    assert(l.getMessage.contains("one instance per writer query") && l.getMessage.contains("scope 'global'"))
    val s = state("sum", "sum")
    s.registerWriter("w")
    val b = new UpdateBatch
    b.add(k.bytes, 5, v(1))
    s.stage("w", 0, 0, b)
    s.commitEpoch("w", 0, 10)
    assert(s.rejectedUpdates.exists(_.reason.contains("not a partial State's instance set")))
  }

  test("two writer queries whose instance numbers collide: the second is refused, naming both") {
    // 31-bit numbers of names: a collision among some 10^5 query-id-like names (found, not assumed)
    val seen = scala.collection.mutable.HashMap.empty[Int, String]
    val (a, b) = Iterator.from(0).map(i => s"query-$i-${i * 7919}").map { w =>
      seen.put(QueryInstance.of(w), w).map(_ -> w)
    }.collectFirst { case Some(pair) => pair }.get
    assert(a != b && QueryInstance.of(a) == QueryInstance.of(b))
    val s = state("sum", "sum", instances = "query")
    s.registerWriter(a)
    s.registerWriter(a) // the same writer again (a restart): fine
    val e = intercept[SharedStateException](s.registerWriter(b))
    assert(e.getMessage.contains(s"writer '$b'") && e.getMessage.contains(s"writer '$a'") &&
        e.getMessage.contains("instances='task'"), e.getMessage)
    s.registerWriter("another") // a writer with its own number
    s.deregisterWriter(a)
    s.registerWriter(b) // the number is free again
    // per-task instances and plain States have no such numbers
    val t = state("sum", "sum")
    t.registerWriter(a); t.registerWriter(b)
    val plain = new State(StateSpec("q", "k STRING", "n BIGINT", 1, "sum"))
    plain.registerWriter(a); plain.registerWriter(b)
  }
}
