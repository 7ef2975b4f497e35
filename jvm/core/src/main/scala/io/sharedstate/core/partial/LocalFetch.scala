package io.sharedstate.core.partial

import io.sharedstate.core.{FetchAnswer, SharedStateException, ValueSet}
import io.sharedstate.core.fetch.FetchRule

/**
 * A fetch in local scope: `inner` over the value of one instance of a partial State (the instance of
 * the fetching task's partition). Only the State turns it into an answer (it knows its merge), so a
 * request carries nothing but engine types over RPC.
 */
final case class LocalFetch(inner: FetchRule, instance: Int) extends FetchRule {
  if (instance < 0) throw new SharedStateException(s"A local fetch needs an instance >= 0, got $instance.")
  def name: String = inner.name
  def lowerBound(t: Long): Long = inner.lowerBound(t)
  def answer(set: ValueSet, t: Long): FetchAnswer = throw new SharedStateException(
    s"A local fetch ('${inner.name}' of instance $instance) is answered by a partial State only.")
}
