package io.sharedstate.core.partial

import io.sharedstate.core.rules.UpdateRule

/**
 * The update rule of a partial State: an incoming update carries one instance's value, and `inner`
 * (the State's rule) combines it with that instance's value as of the update's time only; the other
 * instances' values carry over. Each version therefore holds every instance's value as of its time.
 */
private[sharedstate] final class PartialRule(val inner: UpdateRule) extends UpdateRule {
  def name: String = inner.name

  def apply(previous: Array[Byte], incoming: Array[Byte]): Array[Byte] = {
    val is = PartialValues.instances(incoming)
    val vs = PartialValues.values(incoming)
    var out = previous
    var i = 0
    while (i < is.length) {
      val before = if (out == null) null else PartialValues.valueOf(out, is(i))
      out = PartialValues.withValue(out, is(i), inner.apply(before, vs(i)))
      i += 1
    }
    out
  }
}
