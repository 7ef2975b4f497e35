package io.sharedstate.spark.write

import io.sharedstate.spark.durable.ChangelogFile

import org.apache.spark.sql.connector.write.WriterCommitMessage

/**
 * What one write task tells the driver: how many rows it staged, the largest event time, and for a
 * durable State the changelog files it wrote (committed by the driver with the epoch).
 */
private[sharedstate] final case class UpdateCommitMessage(staged: Int, rejected: Int, maxEventTime: Long,
    changelogFiles: Seq[ChangelogFile] = Nil)
    extends WriterCommitMessage
