package io.sharedstate.spark.cluster

import io.sharedstate.core.{JournalCommit, RejectedUpdate, StateJournal}
import java.util.concurrent.ConcurrentLinkedQueue

/**
 * The journal of a durable State's partitions on a cluster host: the driver journals the events, so
 * this one only keeps what each step rejected in the host's partitions until the host hands it back
 * with the step's answer (the driver writes the rejected table). Steps of a State reach a host one at
 * a time (the driver sends them under the State's lock), so what is drained after a step is its own.
 */
private[sharedstate] final class StepRejections extends StateJournal {
  private val pending = new ConcurrentLinkedQueue[RejectedUpdate]()

  override def writerRegistered(writer: String, frontier: Long): Unit = ()
  override def epochCommitting(commit: JournalCommit): Unit = ()
  override def writerFinished(writer: String): Unit = ()
  override def writerDeregistered(writer: String): Unit = ()
  override def updatesRejected(rejected: Seq[RejectedUpdate]): Unit = rejected.foreach(pending.add)

  /** What the steps since the last drain rejected, in rejection order. */
  def drain(): Array[RejectedUpdate] =
    Iterator.continually(pending.poll()).takeWhile(_ != null).toArray
}
