package io.sharedstate.spark.durable

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.column.statistics.Statistics
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile
import scala.jdk.CollectionConverters._

/** A Parquet file's footer statistics, read without its rows (what retention decides files from). */
private[durable] object ParquetFooters {

  /**
   * Per row group of the file at `path`, the statistics of each of `columns` that has non-null ones
   * (a column without them is absent from its group's map).
   */
  def rowGroupStats(path: String, conf: Configuration, columns: Seq[String]): Seq[Map[String, Statistics[_]]] = {
    val reader = ParquetFileReader.open(HadoopInputFile.fromPath(new Path(path), conf))
    try reader.getFooter.getBlocks.asScala.toSeq.map { block =>
        block.getColumns.asScala.flatMap { c =>
          val name = c.getPath.toDotString
          Option(c.getStatistics).filter(s => columns.contains(name) && !s.isEmpty && s.hasNonNullValue)
            .map(name -> (_: Statistics[_]))
        }.toMap
      }
    finally reader.close()
  }
}
