package io.sharedstate.core

/**
 * States whose update progress U advances together (a transaction group): a State in a group hands
 * every U advance to it, under the lock the group's States share, and the group applies what became
 * final in all of them, then publishes U on each ([[State.publishGroupProgress]]).
 */
private[core] trait ProgressGroup {
  private[core] def name: String

  /** Called under the shared lock whenever a member's writers' progress may have moved. */
  private[core] def advance(): Unit

  /** Answers the members' pending fetches (after the shared lock is released). */
  private[core] def drainPendingFetches(): Unit
}
