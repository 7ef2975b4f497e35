package io.sharedstate.spark.durable

import io.sharedstate.core.{GroupAdvance, JournalCommit, SharedStateException, StateJournal}

/**
 * The journal of a State this application opened read-only: the State calls its journal before any
 * write takes effect, so refusing here refuses every write (a streaming or bulk writer joining or
 * committing) before anything changes, with an error that names the State and why it is read-only.
 */
private[sharedstate] final class ReadOnlyJournal(state: String, root: String, why: String) extends StateJournal {
  override def writerRegistered(writer: String, frontier: Long): Unit = refuse(s"writer '$writer' cannot join")
  override def epochCommitting(c: JournalCommit): Unit =
    refuse(s"epoch ${c.epoch} of writer '${c.writer}' cannot commit")
  override def writerFinished(writer: String): Unit = refuse(s"writer '$writer' cannot finish")
  override def writerDeregistered(writer: String): Unit = refuse(s"writer '$writer' cannot deregister")
  override def groupJoined(group: String, updateProgress: Long): Unit =
    refuse(s"it cannot join transaction group '$group'")
  override def groupAdvanced(advance: GroupAdvance): Unit = refuse("its transaction group cannot advance")

  def refuse(what: String): Nothing = throw ReadOnlyJournal.error(state, root, why, what)
}

private[sharedstate] object ReadOnlyJournal {
  def error(state: String, root: String, why: String, what: String): SharedStateException =
    new SharedStateException(s"State '$state' is read-only in this application ($why): $what. It follows the " +
      s"changelog under $root; write through the application that owns the root, or, once it has stopped, open the " +
      "State again (State.get) here to take it over.")
}
