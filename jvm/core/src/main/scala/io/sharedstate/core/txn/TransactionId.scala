package io.sharedstate.core.txn

/**
 * Who issued a transaction: the writer (a streaming query's sink), the epoch, the task and the
 * transaction's position in that task's batch. Transactions at one event time are ordered by this
 * id: writer name (String.compareTo), then epoch, then task, then sequence. The order is the same on
 * every run and every retry (a retried task replaces its batch, positions and all), so the schedule
 * (who reads whose writes) is deterministic.
 */
final case class TransactionId(writer: String, epoch: Long, task: Int, sequence: Int) extends Ordered[TransactionId] {
  def compare(that: TransactionId): Int = {
    val w = writer.compareTo(that.writer)
    if (w != 0) w
    else if (epoch != that.epoch) java.lang.Long.compare(epoch, that.epoch)
    else if (task != that.task) Integer.compare(task, that.task)
    else Integer.compare(sequence, that.sequence)
  }

  override def toString: String = s"$writer/$epoch/$task/$sequence"
}
