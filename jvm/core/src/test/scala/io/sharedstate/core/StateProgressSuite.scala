package io.sharedstate.core

import org.scalatest.funsuite.AnyFunSuite

class StateProgressSuite extends AnyFunSuite {
  private def state(lateness: String = StateSpec.RejectLate) =
    new State(StateSpec("p", "k STRING", "v STRING", 2, "replace", lateness = lateness))
  private def batch(rows: (String, Long)*): UpdateBatch = {
    val b = new UpdateBatch
    rows.foreach { case (k, t) => b.add(k.getBytes, t, s"$k@$t".getBytes) }
    b
  }

  test("update progress: report, regression is an error, finish and deregister release the minimum") {
    val s = state()
    s.registerWriter("a"); s.registerWriter("b")
    s.reportUpdateProgress("a", 50)
    s.reportUpdateProgress("b", 80)
    assert(s.updateProgress == 50)
    val e = intercept[SharedStateException](s.reportUpdateProgress("a", 10))
    assert(e.getMessage.contains("cannot go back") && e.getMessage.contains("'a'"))
    assert(intercept[SharedStateException](s.reportUpdateProgress("zed", 10)).getMessage.contains("not registered"))
    s.deregisterWriter("a")
    assert(s.updateProgress == 80)
    s.finishWriter("b")
    assert(s.updateProgress == EventTime.PlusInfinity, "no active writer: every value is final")
  }

  test("U never goes back, except that a writer joining a finished (+inf) State reopens it at the last finite U") {
    val s = state()
    s.registerWriter("a")
    s.stage("a", 0, 0, batch("x" -> 10, "x" -> 500))
    s.commitEpoch("a", 0, 100)
    s.finishWriter("a")
    assert(s.updateProgress == EventTime.PlusInfinity)
    assert(s.fetchLatest(new Key("x".getBytes), 1000).isInstanceOf[FetchAnswer.Found],
      "the update at 500 applied at +inf")
    s.registerWriter("b")
    assert(s.updateProgress == 100, "reopened at the last finite U")
    s.stage("b", 0, 0, batch("x" -> 50, "x" -> 150))
    val out = s.commitEpoch("b", 0, 200)
    assert(out.rejected == 1 && out.accepted == 1)
    assert(s.updateProgress == 200)
  }

  test("fetch progress F: min over readers, monotone per reader, a new reader joins at F; F stays when all finish") {
    val s = state()
    s.registerReader("r1")
    assert(s.fetchProgress == EventTime.MinusInfinity)
    s.reportFetchProgress("r1", 40)
    s.registerReader("r2")
    assert(s.fetchProgress == 40 && s.readerProgress("r2").contains(40L))
    s.reportFetchProgress("r2", 90)
    s.reportFetchProgress("r1", 70)
    assert(s.fetchProgress == 70)
    assert(intercept[SharedStateException](s.reportFetchProgress("r1", 60)).getMessage.contains(
        "fetch progress of 'r1' cannot go back"))
    s.finishReader("r1")
    assert(s.fetchProgress == 90)
    s.finishReader("r2")
    assert(s.fetchProgress == 90, "no reader left: F keeps its value rather than letting compaction run to U")
    s.deregisterReader("r1"); s.deregisterReader("r2")
    assert(s.fetchProgress == 90, "F never goes back")
  }

  test("lateness 'fail': a late update fails the commit, naming it, and nothing of the epoch applies") {
    val s = state(StateSpec.FailLate)
    s.registerWriter("w")
    s.commitEpoch("w", 0, 100)
    s.stage("w", 1, 0, batch("k" -> 150, "k" -> 20))
    val e = intercept[SharedStateException](s.commitEpoch("w", 1, 200))
    assert(e.getMessage.contains("lateness policy 'fail'") && e.getMessage.contains("below U"))
    assert(s.updateProgress == 100 && s.lastCommittedEpoch("w") == 0)
    s.abortEpoch("w", 1)
    s.stage("w", 1, 0, batch("k" -> 150))
    s.commitEpoch("w", 1, 200)
    assert(s.fetchLatest(new Key("k".getBytes), 199).isInstanceOf[FetchAnswer.Found])
    assert(intercept[SharedStateException](StateSpec("x", "k STRING", "v STRING", 1, "replace", lateness = "drop"))
        .getMessage.contains("unknown lateness policy 'drop'"))
  }
}
