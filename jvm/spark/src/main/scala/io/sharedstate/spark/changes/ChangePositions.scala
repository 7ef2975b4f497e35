package io.sharedstate.spark.changes

import org.apache.spark.sql.connector.read.streaming.{Offset, PartitionOffset}

/**
 * Where one continuous reader is: it has read `index` changes of the range [from, until) (a range
 * below U, so re-reading it after a restart gives the same changes in the same order). `partition`
 * is the State partition it reads (cluster mode, older checkpoints), or [[ChangePosition.Merged]]:
 * every partition, merged by the change feed in (timestamp, partition, key) order (local mode). A
 * cluster host's reader has a `group`: the partitions that host owned, merged in the same order
 * (`partition` is the lowest of them).
 */
private[sharedstate] final case class ChangePosition(partition: Int, from: Long, until: Long, index: Int,
    group: Seq[Int] = Nil)
    extends PartitionOffset {
  def json: String = s"$partition:$from:$until:$index" + (if (group.isEmpty) "" else group.mkString(":", "+", ""))

  /** The State partitions this reader reads. */
  def partitions: Seq[Int] = if (group.nonEmpty) group else Seq(partition)
}

private[sharedstate] object ChangePosition {
  val Merged: Int = -1

  def parse(text: String): ChangePosition = text.split(':') match {
    case Array(p, f, u, i) => ChangePosition(p.toInt, f.toLong, u.toLong, i.toInt)
    case Array(p, f, u, i, g) => ChangePosition(p.toInt, f.toLong, u.toLong, i.toInt, g.split('+').map(_.toInt).toSeq)
    case _ => throw new IllegalArgumentException(s"not a change-stream position: $text")
  }
}

/** A continuous offset of a change stream: the position of every partition. */
private[sharedstate] final case class ChangePositions(positions: Seq[ChangePosition]) extends Offset {
  override def json(): String = positions.sortBy(_.partition).map(_.json).mkString(",")
}
