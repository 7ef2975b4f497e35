package io.sharedstate.spark.statestore.publish

import com.fasterxml.jackson.databind.ObjectMapper
import io.sharedstate.core.SharedStateException
import java.nio.charset.StandardCharsets
import java.util.concurrent.ConcurrentHashMap
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import scala.util.control.NonFatal

/**
 * What a publishing task needs from the query's offset log about the batch that committed a store
 * version: its event-time watermark and its number of state partitions. Spark 4.2 writes
 * `<checkpoint>/offsets/<batchId>` as a version line (`v1` or `v2`), then the batch metadata as one
 * JSON line (`batchWatermarkMs`, `batchTimestampMs`, `conf` with the query's fixed SQL confs, among
 * them `spark.sql.shuffle.partitions`, the state's partition count), then the sources' offsets. Both
 * versions keep these fields under the same names, so the JSON line is read directly.
 */
private[sharedstate] final case class OffsetLogBatch(watermarkMs: Long, statePartitions: Int) {
  def watermarkMicros: Long = Math.multiplyExact(watermarkMs, 1000L)
}

private[sharedstate] object OffsetLogBatch {
  private val ShufflePartitions = "spark.sql.shuffle.partitions"
  private val json = new ObjectMapper()

  // Per executor: every partition of a batch reads the same file (bounded: old batches are dropped).
  private val cache = new ConcurrentHashMap[(String, Long), OffsetLogBatch]()
  private val CacheLimit = 1024

  /** The offset log directory of a query whose state lives under `stateRoot` (`<checkpoint>/state`). */
  def offsetsOf(stateRoot: String): Path = new Path(new Path(stateRoot).getParent, "offsets")

  def read(stateRoot: String, batchId: Long, hadoopConf: Configuration): OffsetLogBatch = {
    val offsets = offsetsOf(stateRoot)
    cache.computeIfAbsent((offsets.toString, batchId),
      _ => {
        if (cache.size > CacheLimit) cache.clear()
        parse(new Path(offsets, batchId.toString), hadoopConf)
      })
  }

  private def parse(file: Path, hadoopConf: Configuration): OffsetLogBatch = {
    val text =
      try {
        val fs = file.getFileSystem(hadoopConf)
        val in = fs.open(file)
        try new String(in.readAllBytes(), StandardCharsets.UTF_8)
        finally in.close()
      } catch {
        case NonFatal(e) => throw new SharedStateException(
            s"sharedstate state store publishing: cannot read the offset log entry $file of the batch that " +
              s"committed this version: ${e.getMessage}", e)
      }
    val lines = text.split("\n", -1)
    if (lines.length < 2 || !lines(0).trim.matches("v[12]") || lines(1).trim.isEmpty)
      throw new SharedStateException(
        s"sharedstate state store publishing: $file is not an offset log entry of Spark 4.2 (a v1 or v2 line, " +
          s"then the batch metadata as JSON); it starts with '${lines.headOption.getOrElse("")}'.")
    val meta = json.readTree(lines(1))
    val partitions = Option(meta.get("conf")).flatMap(c => Option(c.get(ShufflePartitions))).map(_.asText.toInt)
      .getOrElse(throw new SharedStateException(
          s"sharedstate state store publishing: the batch metadata in $file has no $ShufflePartitions."))
    OffsetLogBatch(Option(meta.get("batchWatermarkMs")).map(_.asLong).getOrElse(0L), partitions)
  }
}
