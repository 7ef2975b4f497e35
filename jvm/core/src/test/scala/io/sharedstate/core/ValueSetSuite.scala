package io.sharedstate.core

import org.scalatest.funsuite.AnyFunSuite

class ValueSetSuite extends AnyFunSuite {
  private def v(s: String) = s.getBytes("UTF-8")
  private def str(b: Array[Byte]) = new String(b, "UTF-8")

  test("latestIndex finds the newest pair at or before t") {
    val set = ValueSet.Empty.withPair(20, v("b")).withPair(10, v("a")).withPair(30, v("c"))
    assert(set.size == 3)
    assert(set.latestIndex(5) == -1)
    assert(str(set.valueAt(set.latestIndex(10))) == "a")
    assert(str(set.valueAt(set.latestIndex(29))) == "b")
    assert(str(set.valueAt(set.latestIndex(Long.MaxValue))) == "c")
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
}
