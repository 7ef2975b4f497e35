package io.sharedstate.spark.txn

import io.sharedstate.core.txn.{Transaction, TransactionBatch, TransactionGroup}
import java.io.{DataInputStream, DataOutputStream}
import java.net.{URLDecoder, URLEncoder}
import java.nio.charset.StandardCharsets
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.util.SerializableConfiguration

/**
 * The staged batches of a transaction group's writers, kept under a durable member's root
 * (`<root>/_transactions/<group>/<writer>/<epoch>/<task>_<max time>`), so a new driver gets back the
 * transactions its group lost: each task writes its batch (each event's time and row bytes, in
 * staging order, so the position is the transaction's sequence) before Spark can commit the batch; a
 * retried task replaces its file (written aside, then renamed over it). The largest time is in the
 * name, so an epoch whose transactions are all final is dropped without reading it ([[prune]]).
 * Serializable: it travels to the tasks with the plan (the root must be visible to them).
 */
private[sharedstate] final class StagedTransactionLog(val directory: String, conf: SerializableConfiguration)
    extends Serializable {

  /** Writes the batch task `task` of `writer` staged in `epoch`: (time, event row bytes) in order. */
  def writeTask(writer: String, epoch: Long, task: Int, events: Seq[(Long, Array[Byte])]): Unit = {
    val dir = epochDir(writer, epoch)
    val fs = dir.getFileSystem(conf.value)
    val maxTime = if (events.isEmpty) Long.MinValue else events.map(_._1).max
    val target = new Path(dir, s"${task}_$maxTime")
    val aside = new Path(dir, s".${task}_$maxTime.${java.util.UUID.randomUUID()}")
    val out = new DataOutputStream(fs.create(aside, true))
    try {
      out.writeInt(events.size)
      events.foreach { case (t, bytes) => out.writeLong(t); out.writeInt(bytes.length); out.write(bytes) }
    } finally out.close()
    taskFiles(fs, dir).filter(_._1 == task).map(_._3).filter(_ != target).foreach(fs.delete(_, false))
    if (fs.exists(target)) fs.delete(target, false)
    if (!fs.rename(aside, target)) throw new java.io.IOException(s"could not rename $aside to $target")
  }

  /** The epochs of `writer` kept, ascending. */
  def epochs(writer: String): Seq[Long] = {
    val dir = writerDir(writer)
    val fs = dir.getFileSystem(conf.value)
    if (!fs.exists(dir)) Nil
    else fs.listStatus(dir).filter(_.isDirectory).flatMap(s => s.getPath.getName.toLongOption).toSeq.sorted
  }

  /** The writers with epochs kept. */
  def writers: Seq[String] = {
    val dir = new Path(directory)
    val fs = dir.getFileSystem(conf.value)
    if (!fs.exists(dir)) Nil
    else fs.listStatus(dir).toSeq.filter(_.isDirectory).map(s =>
      URLDecoder.decode(s.getPath.getName, StandardCharsets.UTF_8))
  }

  /** The largest transaction time `writer` logged in `epoch` (from the file names), if any task logged one. */
  def maxTime(writer: String, epoch: Long): Option[Long] = {
    val dir = epochDir(writer, epoch)
    taskFiles(dir.getFileSystem(conf.value), dir).map(_._2).filter(_ != Long.MinValue).maxOption
  }

  /** The tasks of `epoch` of `writer`, by task id, each with its (time, event row bytes) in order. */
  def read(writer: String, epoch: Long): Seq[(Int, IndexedSeq[(Long, Array[Byte])])] = {
    val dir = epochDir(writer, epoch)
    val fs = dir.getFileSystem(conf.value)
    taskFiles(fs, dir).sortBy(_._1).map { case (task, _, path) =>
      val in = new DataInputStream(fs.open(path))
      try {
        val n = in.readInt()
        task -> IndexedSeq.fill(n) {
          val t = in.readLong()
          val bytes = new Array[Byte](in.readInt())
          in.readFully(bytes)
          (t, bytes)
        }
      } finally in.close()
    }
  }

  /** Drops the epochs of `writer` up to `committed` whose every transaction is below `u` (applied or late). */
  def prune(writer: String, committed: Long, u: Long): Unit = {
    val fs = writerDir(writer).getFileSystem(conf.value)
    epochs(writer).filter(_ <= committed).foreach { e =>
      val dir = epochDir(writer, e)
      if (taskFiles(fs, dir).forall(_._2 < u)) fs.delete(dir, true)
    }
  }

  // (task, max time, path) of the committed task files of `dir`.
  private def taskFiles(fs: FileSystem, dir: Path): Seq[(Int, Long, Path)] =
    if (!fs.exists(dir)) Nil
    else fs.listStatus(dir).toSeq.map(_.getPath).filterNot(_.getName.startsWith(".")).flatMap { p =>
      p.getName.split('_') match {
        case Array(task, max) => for (t <- task.toIntOption; m <- max.toLongOption) yield (t, m, p)
        case _ => None
      }
    }

  private def writerDir(writer: String): Path =
    new Path(directory, URLEncoder.encode(writer, StandardCharsets.UTF_8))
  private def epochDir(writer: String, epoch: Long): Path = new Path(writerDir(writer), epoch.toString)
}

private[sharedstate] object StagedTransactionLog {

  /** The log of group `group` under `root`. */
  def under(root: String, group: String, conf: SerializableConfiguration): StagedTransactionLog =
    new StagedTransactionLog(new Path(new Path(root, "_transactions"), group).toString, conf)

  /**
   * When a group with a durable member is created (a new driver, members rebuilt from their journals):
   * holds its U ([[TransactionGroup.holdUntilResumed]]) until each writer registered on a member that
   * logged a transaction at or above U has been resumed ([[resume]] releases it). A progress event
   * before that, even the writer registering again, would move U past the transactions the members
   * committed and only the log still holds (a kill after a step was decided, before it was journaled:
   * U had lagged the writer's progress, held by a plain writer whose commit the kill cut off from its
   * step). Returns the writers held.
   */
  def holdForResume(log: StagedTransactionLog, group: TransactionGroup): Seq[String] = {
    val u = group.updateProgress
    val held = log.writers.filter { w =>
      group.states.exists(_.writerProgress(w).isDefined) && log.epochs(w).exists(e => log.maxTime(w, e).exists(_ >= u))
    }
    group.holdUntilResumed(held)
    held
  }

  /** What [[resume]] gave back: transactions waiting again, epochs committed again, and Spark's next batch. */
  final case class Resumed(restored: Int, recommitted: Int, restaged: Int, restagedMaxTime: Option[Long])

  /**
   * At the restart of `writer` on a group of members rebuilt from their journals: each kept epoch the
   * members committed (every member: the lowest of their last epochs) gives back its transactions not
   * final yet ([[TransactionGroup.restoreCommitted]]); each above it up to `sparkCommitted` (the last
   * batch Spark committed: the group's commit did not follow) is staged and committed again with the
   * same ids, at the writer's progress (its watermark moves with its next batch).
   *
   * The batch after `sparkCommitted` (Spark planned it, the kill came before its commit) is staged,
   * not committed: Spark runs it again, but its plan need not run. A sink that committed the batch
   * before the kill skips it (the file sink, Delta's idempotent writes, a foreachBatch that checks the
   * batch id), so its tasks never stage again and its epoch would commit empty, losing every
   * transaction of it. Staged from the log, a task that does run again replaces its attempt as a
   * retried task does (a batch the kill cut, some tasks logged, is run again whole: its sink cannot
   * have committed it). `rebuild` makes a transaction from its time and event row bytes. At the end the
   * group's U moves again if [[holdForResume]] held it for this writer.
   */
  def resume(log: StagedTransactionLog, group: TransactionGroup, writer: String, sparkCommitted: Long,
      rebuild: (Long, Array[Byte]) => Transaction): Resumed = {
    val committed = group.states.map(_.lastCommittedEpoch(writer)).min
    def batches(e: Long): Seq[(Int, TransactionBatch)] = log.read(writer, e).map { case (task, events) =>
      val b = new TransactionBatch
      events.foreach { case (t, bytes) => b.add(rebuild(t, bytes)) }
      task -> b
    }
    var restored = 0
    var recommitted = 0
    val epochs = log.epochs(writer)
    epochs.filter(e => e <= sparkCommitted || e <= committed).foreach { e =>
      val tasks = batches(e)
      if (e <= committed) restored += group.restoreCommitted(writer, e, tasks)
      else {
        tasks.foreach { case (task, b) => group.stage(writer, e, task, b) }
        val progress = group.states.flatMap(_.writerProgress(writer)).max
        if (!group.commitEpoch(writer, e, progress).alreadyCommitted) recommitted += 1
      }
    }
    val next = sparkCommitted + 1
    val resumed =
      if (next > committed && epochs.contains(next)) {
        val tasks = batches(next)
        tasks.foreach { case (task, b) => group.stage(writer, next, task, b) }
        val maxTime = tasks.flatMap { case (_, b) => b.transactions.map(_.time) }.maxOption
        Resumed(restored, recommitted, tasks.map(_._2.size).sum, maxTime)
      } else Resumed(restored, recommitted, 0, None)
    group.resumed(writer)
    resumed
  }
}
