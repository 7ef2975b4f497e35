package io.sharedstate.spark.durable

import org.apache.hadoop.conf.Configuration

/**
 * What a snapshots-table file's Parquet footer tells about the snapshots in it: the least and greatest
 * `snapshot_id` over its row groups, from the statistics Parquet writes by default. Lets retention
 * decide a file without reading its chunks.
 */
private[durable] object SnapshotFooters {

  /** (least, greatest) snapshot id of the file at `path`; None when some row group has no statistics. */
  def idRange(path: String, conf: Configuration): Option[(Long, Long)] = {
    val groups = ParquetFooters.rowGroupStats(path, conf, Seq(SnapshotTable.SnapshotId)).map(
      _.get(SnapshotTable.SnapshotId).map(s => (long(s.genericGetMin), long(s.genericGetMax))))
    Option.when(groups.nonEmpty && groups.forall(_.nonEmpty))((groups.flatten.map(_._1).min,
        groups.flatten.map(_._2).max))
  }

  private def long(value: Any): Long = value.asInstanceOf[java.lang.Long].longValue
}
