package io.sharedstate.spark.txn

import io.sharedstate.core.txn.{TransactionId, TransactionOutcome}
import java.io.{ByteArrayOutputStream, DataInputStream, DataOutputStream}
import java.nio.charset.StandardCharsets
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
import scala.io.Source
import scala.util.Using

/**
 * What a transactional writer with outcomes decided and the bounds of its batches, kept in its query's
 * checkpoint (`<checkpoint>/sharedstate-transactions/<node>/`), as fetch joins keep their bounds
 * (`fetch.batch.BatchBoundLog`), so a new driver emits each outcome exactly once, with the same values:
 *
 *  - `decided/<n>_<largest final time>`: record n, the outcomes one step of the group made final for
 *    this writer, or the late ones one epoch commit rejected, written when the group hands them out,
 *    before anything of that step is journaled (they cannot be worked out again afterwards);
 *  - `bounds/<batch>`: the batch's bound (`from until decidedThrough`: it emits the final outcomes with
 *    `from <= time < until` and the late ones of the records after the previous batch's `decidedThrough`
 *    up to its own), written when it is fixed, before any task emits.
 *
 * Written with Spark's checkpoint file manager (atomic create, as for the offset and commit logs).
 */
private[sharedstate] final class TransactionOutcomeLog(dir: Path, conf: Configuration) {
  private val decidedDir = new Path(dir, "decided")
  private val boundsDir = new Path(dir, "bounds")
  private val files = CheckpointFileManager.create(dir, conf)
  Seq(decidedDir, boundsDir).foreach(d => if (!files.exists(d)) files.mkdirs(d))

  /** Keeps record `n`: `finals` (outcomes made final) and `late` (outcomes of late transactions). */
  def record(n: Long, finals: Seq[TransactionOutcome], late: Seq[TransactionOutcome]): Unit = {
    val bytes = new ByteArrayOutputStream()
    val out = new DataOutputStream(bytes)
    out.writeInt(finals.size + late.size)
    finals.foreach(o => TransactionOutcomeLog.write(out, o, late = false))
    late.foreach(o => TransactionOutcomeLog.write(out, o, late = true))
    out.close()
    val maxFinal = if (finals.isEmpty) Long.MinValue else finals.map(_.time).max
    atomic(new Path(decidedDir, s"${n}_$maxFinal"), bytes.toByteArray)
  }

  /** Every kept record: (n, late, outcome), in record order. */
  def decided: Seq[(Long, Boolean, TransactionOutcome)] = decidedFiles.sortBy(_._1).flatMap { case (n, _, path) =>
    Using.resource(new DataInputStream(files.open(path))) { in =>
      Seq.fill(in.readInt()) { val (late, o) = TransactionOutcomeLog.read(in); (n, late, o) }
    }
  }

  def writeBound(b: TransactionRuns.Bound): Unit =
    atomic(new Path(boundsDir, b.batch.toString),
      s"${b.from} ${b.until} ${b.decidedThrough}".getBytes(StandardCharsets.UTF_8))

  def bound(batch: Long): Option[TransactionRuns.Bound] = {
    val file = new Path(boundsDir, batch.toString)
    if (!files.exists(file)) None
    else Using.resource(files.open(file))(in => Source.fromInputStream(in, "UTF-8").mkString).trim.split(' ') match {
      case Array(from, until, through) => Some(TransactionRuns.Bound(batch, from.toLong, until.toLong, through.toLong))
      case other => throw new IllegalStateException(
          s"Transaction bound file $file holds '${other.mkString(" ")}', not 'from until decidedThrough'.")
    }
  }

  /**
   * Once Spark committed `batch` (bound `b`): drops the records it and the batches before emitted
   * whole (up to its `decidedThrough`, every final below its `until`) and the bounds of batches more
   * than `kept` before it.
   */
  def emitted(b: TransactionRuns.Bound, kept: Int): Unit = {
    decidedFiles.filter { case (n, maxFinal, _) => n <= b.decidedThrough && maxFinal < b.until }
      .foreach(f => files.delete(f._3))
    files.list(boundsDir).map(_.getPath).filter(_.getName.toLongOption.exists(_ < b.batch - kept)).foreach(files.delete)
  }

  // (n, largest final time, path) of the kept records.
  private def decidedFiles: Seq[(Long, Long, Path)] =
    files.list(decidedDir).toSeq.map(_.getPath).flatMap { p =>
      p.getName.split('_') match {
        case Array(n, max) => for (a <- n.toLongOption; m <- max.toLongOption) yield (a, m, p)
        case _ => None
      }
    }

  private def atomic(path: Path, bytes: Array[Byte]): Unit = {
    val out = files.createAtomic(path, true)
    try out.write(bytes)
    catch { case e: Throwable => out.cancel(); throw e }
    out.close()
  }
}

private[sharedstate] object TransactionOutcomeLog {

  /** The log of operator `node` of the query checkpointed at `checkpointRoot`. */
  def of(checkpointRoot: String, node: String, conf: Configuration): TransactionOutcomeLog =
    new TransactionOutcomeLog(
      new Path(new Path(checkpointRoot, "sharedstate-transactions"),
        java.net.URLEncoder.encode(node, StandardCharsets.UTF_8)), conf)

  private def write(out: DataOutputStream, o: TransactionOutcome, late: Boolean): Unit = {
    def bytes(b: Array[Byte]): Unit = if (b == null) out.writeInt(-1) else { out.writeInt(b.length); out.write(b) }
    out.writeBoolean(late)
    out.writeUTF(o.id.writer); out.writeLong(o.id.epoch); out.writeInt(o.id.task); out.writeInt(o.id.sequence)
    out.writeLong(o.time)
    out.writeBoolean(o.committed)
    out.writeBoolean(o.reason != null); if (o.reason != null) out.writeUTF(o.reason)
    out.writeInt(o.reads.size); o.reads.foreach(r => bytes(r.orNull))
    bytes(o.payload)
  }

  private def read(in: DataInputStream): (Boolean, TransactionOutcome) = {
    def bytes(): Array[Byte] = in.readInt() match {
      case -1 => null
      case n => val b = new Array[Byte](n); in.readFully(b); b
    }
    val late = in.readBoolean()
    val id = TransactionId(in.readUTF(), in.readLong(), in.readInt(), in.readInt())
    val time = in.readLong()
    val committed = in.readBoolean()
    val reason = if (in.readBoolean()) in.readUTF() else null
    val reads = IndexedSeq.fill(in.readInt())(Option(bytes()))
    (late, TransactionOutcome(id, time, committed, reads, reason, bytes()))
  }
}
