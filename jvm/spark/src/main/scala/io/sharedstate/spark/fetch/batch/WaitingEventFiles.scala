package io.sharedstate.spark.fetch.batch

import io.sharedstate.spark.durable.LocalCheckpointFileManager
import io.sharedstate.spark.rows.StoredRows

import io.sharedstate.core.SharedStateException
import java.io.{DataInputStream, DataOutputStream, EOFException}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.{SparkConf, SparkEnv, TaskContext}
import org.apache.spark.io.{CompressionCodec, LZ4CompressionCodec}
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager

/**
 * Where a streaming fetch join keeps the events that wait for U: one file per task and micro-batch,
 * `<progress stream checkpoint>/fetch-waiting/<batch>/part-<i>-of-<n>`, written by task i of n when it
 * has read all its input (atomically, with a checkpoint file manager: [[LocalCheckpointFileManager]]) and read by the next batch
 * that runs the join: its task i of m reads the files j with j mod m = i, so every waiting event is
 * read by exactly one task whatever the partition counts. A batch's files are complete once it
 * commits; only the newest complete batch before the running one is needed (see [[BatchBounds]]).
 *
 * A file holds, per event, when it arrived (ms) and its event columns as UnsafeRow bytes, compressed.
 */
private[sharedstate] final class WaitingEventFiles(val dir: Path, conf: Configuration) {
  import WaitingEventFiles._
  private val files = LocalCheckpointFileManager.create(dir, conf) // no chmod fork per file

  def exists: Boolean = files.exists(dir)

  def create(): Unit = if (!files.exists(dir)) files.mkdirs(dir)

  /** Batches that have a directory of waiting events. */
  def batches: Seq[Long] =
    if (!files.exists(dir)) Nil else files.list(dir).toSeq.flatMap(_.getPath.getName.toLongOption)

  /**
   * The newest batch before `batch` with waiting events and how many files it wrote; (-1, 0) when
   * there is none. Fails when that batch's files are incomplete (its tasks' output was not all
   * consumed, e.g. a foreachBatch that showed a few rows instead of writing them all).
   */
  def previous(batch: Long): (Long, Int) = batches.filter(_ < batch).maxOption match {
    case None => (-1L, 0)
    case Some(p) =>
      val parts = files.list(new Path(dir, p.toString)).toSeq.map(_.getPath.getName).collect { case Part(i, n) =>
        (i.toInt, n.toInt)
      }
      val counts = parts.map(_._2).distinct
      if (counts.size != 1 || parts.map(_._1).toSet != (0 until counts.head).toSet) throw new SharedStateException(
        s"Fetch join: the waiting events of micro-batch $p in ${new Path(dir, p.toString)} are incomplete " +
          s"(files ${parts.sorted.map { case (i, n) => s"$i/$n" }.mkString(", ")}): every partition of a fetch join's " +
          "output must be consumed in each micro-batch (a foreachBatch must write the whole DataFrame, not show() or limit() it).")
      (p, counts.head)
  }

  /**
   * Makes `batch`'s directory empty, before its tasks write to it: drops what an earlier attempt of
   * the batch wrote (a re-run writes it again, possibly in another number of files).
   */
  def reset(batch: Long): Unit = {
    val path = new Path(dir, batch.toString)
    delete(path)
    files.mkdirs(path)
  }

  /** Removes the waiting events of every batch before `batch`. */
  def forgetBefore(batch: Long): Unit = batches.filter(_ < batch).foreach(b => delete(new Path(dir, b.toString)))

  // Recursive, and nothing when the path does not exist (both of Spark's checkpoint file managers).
  private def delete(path: Path): Unit = files.delete(path)

  /** Task `part` of `parts` in `batch`: a writer of its waiting events (close() publishes them, cancel() drops them). */
  def writer(batch: Long, part: Int, parts: Int): Writer =
    new Writer(files.createAtomic(new Path(new Path(dir, batch.toString), name(part, parts)), true))

  /** The waiting events of `batch` (written in `parts` files) that task `part` of `tasks` takes over. */
  def reader(batch: Long, parts: Int, part: Int, tasks: Int, eventWidth: Int): Iterator[(UnsafeRow, Long)] =
    if (batch < 0) Iterator.empty
    else Iterator.range(0, parts).filter(_ % tasks == part)
      .flatMap(j => read(new Path(new Path(dir, batch.toString), name(j, parts)), eventWidth))

  private def read(path: Path, eventWidth: Int): Iterator[(UnsafeRow, Long)] = new Iterator[(UnsafeRow, Long)] {
    private val in = new DataInputStream(codec.compressedInputStream(files.open(path)))
    // Closed at the end of the file, or when the task ends first (failed, or not fully consumed).
    Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit](_ => in.close()))
    private var nextSize = readSize()
    private def readSize(): Int = {
      val size = whole(in.readInt())
      if (size < 0) in.close()
      size
    }
    override def hasNext: Boolean = nextSize >= 0
    override def next(): (UnsafeRow, Long) = {
      val arrived = whole(in.readLong())
      val bytes = new Array[Byte](nextSize)
      whole(in.readFully(bytes))
      nextSize = readSize()
      (StoredRows.wrap(bytes, eventWidth), arrived)
    }
    private def whole[T](read: => T): T =
      try read
      catch { case e: EOFException => throw truncated(path, e) }
  }

  private def truncated(path: Path, cause: Throwable) =
    new SharedStateException(
      s"Fetch join: the waiting-events file $path ends early; it was not written by a completed task.", cause)

  final class Writer private[WaitingEventFiles] (out: CheckpointFileManager.CancellableFSDataOutputStream) {
    private val data = new DataOutputStream(codec.compressedOutputStream(out))
    private var open = true

    def write(event: UnsafeRow, arrivedMs: Long): Unit = {
      data.writeInt(event.getSizeInBytes)
      data.writeLong(arrivedMs)
      event.writeToStream(data, WriteBuffer.get())
    }

    def close(): Unit = if (open) { open = false; data.writeInt(-1); data.close() }

    def cancel(): Unit = if (open) { open = false; out.cancel() }
  }
}

private[sharedstate] object WaitingEventFiles {
  private val Part = """part-(\d+)-of-(\d+)""".r

  def name(part: Int, parts: Int): String = f"part-$part%05d-of-$parts%05d"

  // LZ4, as Spark compresses its own shuffle and state files; created per use (codecs are cheap).
  private def codec: CompressionCodec =
    new LZ4CompressionCodec(Option(SparkEnv.get).map(_.conf).getOrElse(new SparkConf(false)))

  // UnsafeRow.writeToStream copies off-heap rows through a buffer; ours are on-heap, but it wants one.
  private val WriteBuffer = ThreadLocal.withInitial[Array[Byte]](() => new Array[Byte](4096))
}
