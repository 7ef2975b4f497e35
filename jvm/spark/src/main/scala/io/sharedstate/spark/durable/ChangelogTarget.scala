package io.sharedstate.spark.durable

import io.sharedstate.core.{Key, UpdateBatch}
import org.apache.spark.util.SerializableConfiguration
import scala.collection.mutable

/**
 * Where the write tasks of a durable State put their updates: a Parquet file per State partition
 * under the changelog's partition directory, written with Parquet's own writer (see
 * [[ColumnsParquetWriter]]). Nothing is visible in the table until the driver commits the files with
 * the epoch (see [[DeltaChangelog]]).
 * Serializable: it travels with the writer factory to the executors.
 *
 * @param directories the directory of each partition as Kernel names it (index p+1 for partition p,
 *                    index 0 for the journal partition -1)
 */
private[sharedstate] final case class ChangelogTarget(
    tablePath: String,
    partitionCount: Int,
    directories: IndexedSeq[String],
    hadoopConf: SerializableConfiguration) {

  def directory(partition: Int): String = directories(partition + 1)

  /** Writes one task's updates (all of them: accepted or not is decided at the commit). */
  def writeTask(writer: String, epoch: Long, task: Int, batch: UpdateBatch): Seq[ChangelogFile] = {
    val byPartition = mutable.TreeMap.empty[Int, mutable.ArrayBuffer[ChangelogRow]]
    def add(p: Int, row: ChangelogRow): Unit = byPartition.getOrElseUpdate(p, mutable.ArrayBuffer.empty) += row
    var seq = 0
    var i = 0
    while (i < batch.size) {
      val key = batch.keyAt(i)
      val p = new Key(key).partition(partitionCount)
      add(p, ChangelogRow(p, writer, epoch, task, seq, key, java.lang.Long.valueOf(batch.timeAt(i)), batch.valueAt(i)))
      seq += 1
      i += 1
    }
    batch.rejectedRows.foreach { r =>
      val p = if (r.key == null) ChangelogSchema.JournalPartition else new Key(r.key).partition(partitionCount)
      add(p, ChangelogRow(p, writer, epoch, task, seq, r.key, r.time, r.value))
      seq += 1
    }
    byPartition.toSeq.flatMap { case (p, rows) => write(p, rows.toIndexedSeq) }
  }

  /** Writes `rows`, all of partition `partition`, as Parquet files. */
  def write(partition: Int, rows: IndexedSeq[ChangelogRow]): Seq[ChangelogFile] = {
    val s = ColumnsParquetWriter.write(hadoopConf.value, directory(partition), ChangelogSchema.physical,
      ChangelogRow.columns(rows), rows.size)
    Seq(ChangelogFile(partition, s.getPath, s.getSize, s.getModificationTime))
  }
}
