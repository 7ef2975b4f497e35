package io.sharedstate.core.partial

import io.sharedstate.core.{FetchAnswer, ValueSet}
import io.sharedstate.core.fetch.FetchRule

/**
 * A fetch rule of a partial State: `inner` answered over the key's versions as seen by the scope,
 * the merged value of every instance (`instance` < 0, a global fetch) or one instance's value (a
 * local fetch). Only the versions the answer can read are turned into the scope's values: from the
 * newest at or before `inner.lowerBound(t)` up to the newest at or before t. A version where the
 * instance has no value yet is left out (the instance had none then, nor at any earlier version).
 */
private[sharedstate] final case class PartialFetch(inner: FetchRule, view: PartialView, instance: Int)
    extends FetchRule {
  def name: String = inner.name
  def lowerBound(t: Long): Long = inner.lowerBound(t)
  def isGlobal: Boolean = instance < 0

  def answer(set: ValueSet, t: Long): FetchAnswer = inner.answer(scoped(set, t), t)

  private def scoped(set: ValueSet, t: Long): ValueSet =
    if (set == null) null
    else {
      val end = set.latestIndex(t)
      if (end < 0) null
      else {
        val lower = inner.lowerBound(t)
        val start = if (lower <= Long.MinValue) 0 else math.max(0, set.latestIndex(lower))
        val times = Array.newBuilder[Long]
        val values = Array.newBuilder[Array[Byte]]
        var i = start
        while (i <= end) {
          val stored = set.valueAt(i)
          val v = if (isGlobal) view.merged(stored) else view.instance(stored, instance)
          if (v != null) { times += set.timeAt(i); values += v }
          i += 1
        }
        val ts = times.result()
        if (ts.isEmpty) null else ValueSet.of(null, ts, values.result()) // an answer, never stored
      }
    }
}

private[sharedstate] object PartialFetch {
  def global(inner: FetchRule, view: PartialView): PartialFetch = PartialFetch(inner, view, -1)
}
