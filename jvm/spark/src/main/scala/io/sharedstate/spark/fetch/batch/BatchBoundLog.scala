package io.sharedstate.spark.fetch.batch

import io.sharedstate.spark.durable.LocalCheckpointFileManager

import java.nio.charset.StandardCharsets
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import scala.io.Source
import scala.util.Using

/**
 * The answer bounds of a fetch join's micro-batches, one small file per batch id in the checkpoint
 * directory of the join's progress stream (`<query checkpoint>/sources/<n>/fetch-bounds/<batch>`), so a
 * batch re-run after a driver restart answers below the same U as its first attempt. Written with a
 * checkpoint file manager ([[LocalCheckpointFileManager]]: atomic create, as for the offset and commit logs).
 */
private[sharedstate] final class BatchBoundLog(dir: Path, conf: Configuration) {
  private val files = LocalCheckpointFileManager.create(dir, conf) // no chmod fork per file
  if (!files.exists(dir)) files.mkdirs(dir)

  def get(batch: Long): Option[BatchBound] = {
    val file = new Path(dir, batch.toString)
    if (!files.exists(file)) None
    else Some(BatchBound.decode(Using.resource(files.open(file))(in => Source.fromInputStream(in, "UTF-8").mkString)))
  }

  /** Records `bound` for the batch (computed only then), or returns what an earlier attempt recorded. */
  def getOrAdd(batch: Long, bound: => BatchBound): BatchBound = get(batch).getOrElse {
    val b = bound
    val out = files.createAtomic(new Path(dir, batch.toString), false)
    try out.write(b.encode.getBytes(StandardCharsets.UTF_8))
    catch { case e: Throwable => out.cancel(); throw e }
    out.close()
    b
  }

  /** Forgets one batch's bound (Spark re-runs only its last planned batch). */
  def forget(batch: Long): Unit = {
    val file = new Path(dir, batch.toString)
    if (files.exists(file)) files.delete(file)
  }

  /** Forgets every batch before `batch` (once, when a query starts: one listing). */
  def forgetBefore(batch: Long): Unit =
    files.list(dir).map(_.getPath).filter(p => p.getName.toLongOption.exists(_ < batch)).foreach(files.delete)

  /** The batches with a recorded bound. */
  def batches: Seq[Long] = files.list(dir).toSeq.flatMap(_.getPath.getName.toLongOption)

  /** The newest batch with a bound, if any. */
  def latest: Option[Long] = batches.maxOption
}
