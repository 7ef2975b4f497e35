package io.sharedstate.core

import org.scalatest.funsuite.AnyFunSuite

class StateSuite extends AnyFunSuite {
  private def bytes(s: String) = s.getBytes("UTF-8")
  private def newState(partitions: Int = 4) =
    new State(StateSpec("campaigns", "ad_id STRING", "campaign STRING", partitions, "replace"))
  private def batch(rows: (String, Long, String)*): UpdateBatch = {
    val b = new UpdateBatch
    rows.foreach { case (k, t, v) => b.add(bytes(k), t, bytes(v)) }
    b
  }
  private def fetch(s: State, k: String, t: Long): Option[(Long, String)] = s.fetchLatest(new Key(bytes(k)), t) match {
    case FetchAnswer.Found(ts, v) => Some(ts -> new String(v, "UTF-8"))
    case FetchAnswer.Absent => None
    case FetchAnswer.NotYet => fail(s"fetch($k, $t) not answerable at U=${s.updateProgress}")
  }

  test("fetches wait until U passes them, then see every update before t") {
    val s = newState()
    s.registerWriter("w")
    assert(s.fetchLatest(new Key(bytes("ad1")), 0) == FetchAnswer.NotYet)
    s.stage("w", 0, 0, batch(("ad1", 10, "c1"), ("ad1", 30, "c3"), ("ad1", 20, "c2")))
    s.commitEpoch("w", 0, progress = 25)
    assert(s.updateProgress == 25)
    assert(fetch(s, "ad1", 24).contains(20L -> "c2"))
    assert(fetch(s, "ad1", 9).isEmpty)
    assert(s.fetchLatest(new Key(bytes("ad1")), 25) == FetchAnswer.NotYet)
    s.commitEpoch("w", 1, progress = 100)
    assert(fetch(s, "ad1", 99).contains(30L -> "c3"))
  }

  test("updates below U at commit are rejected as late and kept, not dropped") {
    val s = newState()
    s.registerWriter("w")
    s.stage("w", 0, 0, batch(("a", 50, "x")))
    s.commitEpoch("w", 0, progress = 40)
    s.stage("w", 1, 0, batch(("a", 10, "late"), ("a", 45, "ok")))
    val out = s.commitEpoch("w", 1, progress = 40)
    assert(out.accepted == 1 && out.rejected == 1)
    val late = s.rejectedUpdates
    assert(late.size == 1 && late.head.reason == RejectedUpdate.Late && late.head.time == 10L)
    assert(late.head.updateProgressAtArrival == 40 && late.head.epoch == 1)
    s.commitEpoch("w", 2, progress = 60)
    assert(fetch(s, "a", 47).contains(45L -> "ok"))
  }

  test("committing an epoch twice, or a retried task, never applies an update twice") {
    val s = newState(1)
    s.registerWriter("w")
    s.stage("w", 0, 3, batch(("a", 10, "first-attempt")))
    s.stage("w", 0, 3, batch(("a", 10, "retry")))
    assert(!s.commitEpoch("w", 0, 100).alreadyCommitted)
    s.stage("w", 0, 3, batch(("a", 10, "replayed")))
    val again = s.commitEpoch("w", 0, 100)
    assert(again.alreadyCommitted && again.accepted == 0)
    assert(fetch(s, "a", 50).contains(10L -> "retry"))
    assert(s.metrics.updatesApplied == 1)
  }

  test("U is the minimum over writers, and a new writer cannot reopen final values") {
    val s = newState()
    s.registerWriter("a"); s.registerWriter("b")
    s.commitEpoch("a", 0, 100)
    assert(s.updateProgress == EventTime.MinusInfinity, "b has not committed")
    s.commitEpoch("b", 0, 70)
    assert(s.updateProgress == 70)
    s.registerWriter("c")
    assert(s.updateProgress == 70)
    s.stage("c", 0, 0, batch(("k", 60, "too late")))
    assert(s.commitEpoch("c", 0, 200).rejected == 1)
    s.finishWriter("b")
    assert(s.updateProgress == 100)
  }

  test("null keys and times staged as rejections reach the rejected log with their reason") {
    val s = newState()
    s.registerWriter("w")
    val b = new UpdateBatch
    b.reject(RejectedUpdate(null, 5L, bytes("v"), RejectedUpdate.NullKey, "", -1, 0))
    b.reject(RejectedUpdate(bytes("k"), null, bytes("v"), RejectedUpdate.NullTime, "", -1, 0))
    s.stage("w", 0, 0, b)
    assert(s.commitEpoch("w", 0, 10).rejected == 2)
    assert(s.rejectedUpdates.map(_.reason).toSet == Set(RejectedUpdate.NullKey, RejectedUpdate.NullTime))
    assert(s.rejectedUpdates.forall(r => r.writer == "w" && r.epoch == 0))
  }

  test("bad definitions fail with a message that says what is allowed") {
    val e1 = intercept[SharedStateException](StateSpec("../etc", "k STRING", "v STRING", 2, "replace"))
    assert(e1.getMessage.contains("Invalid State name '../etc'"))
    val e2 = intercept[SharedStateException](StateSpec("s", "k STRING", "v STRING", 0, "replace"))
    assert(e2.getMessage.contains("partitions must be between 1"))
    val e3 = intercept[SharedStateException](StateSpec("s", "k STRING", "v STRING", 2, "median"))
    assert(e3.getMessage.contains("Unknown update rule 'median'") && e3.getMessage.contains("replace"))
    val reg = new StateRegistry
    val e4 = intercept[SharedStateException](reg.get("nope"))
    assert(e4.getMessage.contains("Unknown State 'nope'"))
  }
}
