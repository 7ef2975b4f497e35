package io.sharedstate.spark.durable

import org.apache.hadoop.conf.Configuration
import org.apache.parquet.io.api.Binary

/**
 * What a changelog file's Parquet footer tells about its rows' writers and epochs: per row group the
 * min and max of the `writer` and `epoch` columns, which Parquet writes by default. Lets a retention
 * trim decide a file without reading its rows.
 */
private[durable] object ChangelogFooters {

  /**
   * Whether every row of the file at `path` is an update of a covered epoch (its epoch at most
   * `epochs`(its writer)): Some when the footer's statistics decide it, None when they do not (a row
   * group with several writers, or without statistics), and then only the rows can tell.
   */
  def allCovered(path: String, conf: Configuration, epochs: Map[String, Long]): Option[Boolean] = {
    val groups = ParquetFooters.rowGroupStats(path, conf, Seq(ChangelogSchema.Writer, ChangelogSchema.Epoch)).map {
      stats =>
        (stats.get(ChangelogSchema.Writer), stats.get(ChangelogSchema.Epoch)) match {
          case (Some(w), Some(e)) =>
            val (lo, hi) = (utf8(w.genericGetMin), utf8(w.genericGetMax))
            // One writer in the group: its newest epoch there decides every row of the group.
            Option.when(lo == hi)(epochs.get(lo).exists(e.genericGetMax.asInstanceOf[java.lang.Long] <= _))
          case _ => None
        }
    }
    if (groups.contains(Some(false))) Some(false) // some row is certainly not covered
    else if (groups.forall(_.contains(true))) Some(true)
    else None
  }

  private def utf8(value: Any): String = value.asInstanceOf[Binary].toStringUsingUTF8
}
