package io.sharedstate.spark.durable

/** One row of the changelog table (see [[ChangelogSchema]]); nullable columns are boxed. */
private[sharedstate] final case class ChangelogRow(
    partition: Int,
    writer: String,
    epoch: Long,
    task: Int,
    seq: Int,
    key: Array[Byte],
    timestamp: java.lang.Long,
    value: Array[Byte],
    event: String = null,
    updateProgress: java.lang.Long = null,
    writerProgress: java.lang.Long = null,
    commitSeq: java.lang.Long = null) {

  def isEvent: Boolean = event != null
}

private[sharedstate] object ChangelogRow {

  /** The physical columns of `rows`, in [[ChangelogSchema.physical]] order. */
  def columns(rows: IndexedSeq[ChangelogRow]): IndexedSeq[Array[_ <: AnyRef]] = IndexedSeq(
    rows.map(_.writer).toArray,
    rows.map(r => java.lang.Long.valueOf(r.epoch)).toArray,
    rows.map(r => Integer.valueOf(r.task)).toArray,
    rows.map(r => Integer.valueOf(r.seq)).toArray,
    rows.map(_.key).toArray,
    rows.map(_.timestamp).toArray,
    rows.map(_.value).toArray,
    rows.map(_.event).toArray,
    rows.map(_.updateProgress).toArray,
    rows.map(_.writerProgress).toArray,
    rows.map(_.commitSeq).toArray
  )
}

/** A Parquet file a task (or the driver) wrote into the changelog, not yet committed to it. */
private[sharedstate] final case class ChangelogFile(partition: Int, path: String, size: Long, modificationTime: Long)
