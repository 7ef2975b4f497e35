package io.sharedstate.spark.durable

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile
import scala.jdk.CollectionConverters._

/**
 * What a snapshots-table file's Parquet footer tells about the snapshots in it: the least and greatest
 * `snapshot_id` over its row groups, from the statistics Parquet writes by default. Lets retention
 * decide a file without reading its chunks.
 */
private[durable] object SnapshotFooters {

  /** (least, greatest) snapshot id of the file at `path`; None when some row group has no statistics. */
  def idRange(path: String, conf: Configuration): Option[(Long, Long)] = {
    val reader = ParquetFileReader.open(HadoopInputFile.fromPath(new Path(path), conf))
    val groups =
      try reader.getFooter.getBlocks.asScala.toSeq.map { block =>
          block.getColumns.asScala.find(_.getPath.toDotString == SnapshotTable.SnapshotId)
            .map(_.getStatistics).filter(s => s != null && !s.isEmpty && s.hasNonNullValue)
            .map(s => (long(s.genericGetMin), long(s.genericGetMax)))
        }
      finally reader.close()
    Option.when(groups.nonEmpty && groups.forall(_.nonEmpty))((groups.flatten.map(_._1).min,
        groups.flatten.map(_._2).max))
  }

  private def long(value: Any): Long = value.asInstanceOf[java.lang.Long].longValue
}
