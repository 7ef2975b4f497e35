package io.sharedstate.spark.txn

import io.sharedstate.core.GroupAdvance
import io.sharedstate.core.txn.TransactionGroup
import java.io.{DataInputStream, DataOutputStream}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/**
 * The last step of a durable transaction group, recorded before its members journal it
 * (`<root>/_transactions/<group>/_step`: each journaled member's advance, its U and the pairs put in
 * it), so a step a kill cut between two members' journal commits is completed at the restart
 * ([[TransactionGroup.completeStep]]). One file, replaced by each step (written aside, then renamed
 * over it): a step starts only after the previous one is journaled by every member.
 */
private[sharedstate] final class GroupStepLog(directory: String, conf: Configuration)
    extends TransactionGroup.StepRecord {
  private val file = new Path(directory, "_step")

  override def stepping(advances: IndexedSeq[(String, GroupAdvance)]): Unit = {
    val fs = file.getFileSystem(conf)
    val aside = new Path(directory, s"._step.${java.util.UUID.randomUUID()}")
    val out = new DataOutputStream(fs.create(aside, true))
    try {
      out.writeInt(advances.size)
      advances.foreach { case (state, a) =>
        out.writeUTF(state)
        out.writeLong(a.updateProgress)
        out.writeInt(a.pairs.size)
        a.pairs.foreach { p =>
          out.writeInt(p.key.length); out.write(p.key)
          out.writeLong(p.time)
          if (p.value == null) out.writeInt(-1) else { out.writeInt(p.value.length); out.write(p.value) }
        }
      }
    } finally out.close()
    if (fs.exists(file)) fs.delete(file, false)
    if (!fs.rename(aside, file)) throw new java.io.IOException(s"could not rename $aside to $file")
  }

  /** The recorded step's advance per member name (empty when no step was recorded). */
  def last: Map[String, GroupAdvance] = {
    val fs = file.getFileSystem(conf)
    if (!fs.exists(file)) Map.empty
    else {
      val in = new DataInputStream(fs.open(file))
      try {
        def bytes(n: Int): Array[Byte] = { val b = new Array[Byte](n); in.readFully(b); b }
        Seq.fill(in.readInt()) {
          val state = in.readUTF()
          val u = in.readLong()
          state -> GroupAdvance(u,
            IndexedSeq.fill(in.readInt()) {
              val key = bytes(in.readInt())
              val time = in.readLong()
              val n = in.readInt()
              GroupAdvance.Pair(key, time, if (n < 0) null else bytes(n))
            })
        }.toMap
      } finally in.close()
    }
  }
}
