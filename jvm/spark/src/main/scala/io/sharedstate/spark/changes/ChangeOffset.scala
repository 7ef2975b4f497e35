package io.sharedstate.spark.changes

import org.apache.spark.sql.connector.read.streaming.Offset

/** A micro-batch offset of a change stream: every change with a timestamp below it has been read. */
private[sharedstate] final case class ChangeOffset(until: Long) extends Offset {
  override def json(): String = until.toString
}
