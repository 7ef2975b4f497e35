package io.sharedstate.core

import org.scalatest.funsuite.AnyFunSuite

class ProgressTrackerSuite extends AnyFunSuite {
  import EventTime._

  test("progress is the minimum over active reporters, and whenEmpty with none") {
    val p = new ProgressTracker("update", MinusInfinity)
    assert(p.current == MinusInfinity)
    p.setWhenEmpty(PlusInfinity)
    assert(p.current == PlusInfinity)
    p.register("a")
    assert(p.current == MinusInfinity, "a registered writer that never committed holds U at -inf")
    p.report("a", 100)
    p.register("b")
    assert(p.current == 100, "a new reporter joins at the current frontier")
    p.report("b", 300)
    p.report("a", 200)
    assert(p.current == 200)
    p.finish("a")
    assert(p.current == 300)
    p.deregister("b")
    assert(p.current == PlusInfinity)
  }

  test("a reported progress that goes back is an error naming both values") {
    val p = new ProgressTracker("update", MinusInfinity)
    p.register("w")
    p.report("w", 1000000)
    val e = intercept[SharedStateException](p.report("w", 5))
    assert(e.getMessage.contains("cannot go back") && e.getMessage.contains("'w'"))
  }

  test("re-registering a known reporter keeps its progress") {
    val p = new ProgressTracker("update", MinusInfinity)
    p.register("w"); p.report("w", 42); p.register("w")
    assert(p.progressOf("w").contains(42L))
  }
}
