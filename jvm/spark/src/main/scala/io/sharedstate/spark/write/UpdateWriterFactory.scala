package io.sharedstate.spark.write

import io.sharedstate.spark.config.UpdateOptions
import io.sharedstate.spark.durable.ChangelogTarget

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.write.DataWriter
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory

private[sharedstate] final class UpdateWriterFactory(options: UpdateOptions, writer: String,
    changelog: Option[ChangelogTarget] = None)
    extends StreamingDataWriterFactory {
  override def createWriter(partitionId: Int, taskId: Long, epochId: Long): DataWriter[InternalRow] =
    new UpdateDataWriter(options, writer, partitionId, epochId, changelog)
}
