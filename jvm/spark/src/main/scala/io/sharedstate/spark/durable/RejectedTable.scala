package io.sharedstate.spark.durable

import io.delta.kernel.{Operation, Table}
import io.delta.kernel.exceptions.ConcurrentTransactionException
import io.delta.kernel.types.{BinaryType, IntegerType, LongType, StringType, StructField, StructType}
import io.sharedstate.core.RejectedUpdate
import org.apache.hadoop.conf.Configuration
import scala.jdk.CollectionConverters._
import scala.jdk.OptionConverters._

/**
 * The late and rejected updates of a State, `<root>/<state>/rejected` (not partitioned): one row per
 * update the State rejected, with the reason, the writer and epoch that sent it, and the U that
 * decided it. `commit_seq` is the journal event during which it was rejected (its epoch's commit for
 * late and null updates; a later event for an update rule failing when U made the update final).
 *
 * It is a table of its own, so it cannot share the changelog's Delta transaction: the rows of an
 * event are committed right after the event (under the State's commit lock) with Delta's
 * SetTransaction `("journal", commit_seq)`, and recovery writes the rows of every replayed event
 * above the table's last one (see [[StateRecovery]]). So each rejection is in the table exactly once.
 */
private[sharedstate] final class RejectedTable private (val path: String, conf: Configuration) {
  import RejectedTable._
  private val writeConf = KernelTables.compressed(conf)
  private val engine = KernelTables.engine(writeConf)
  private val table = Table.forPath(engine, path)

  /**
   * Commits `rows` (commit_seq, rejection) in one Delta transaction guarded by ("journal", `guard`):
   * returns false, adding nothing, if the table already holds that event or a later one.
   * `guard` None: no guard (rejections of a step that journaled no event of its own).
   */
  def append(rows: Seq[(Long, RejectedUpdate)], guard: Option[Long]): Boolean = rows.isEmpty || (try {
    val builder = table.createTransactionBuilder(engine, KernelTables.EngineInfo, Operation.WRITE)
    guard.foreach(g => builder.withTransactionId(engine, TxnApp, g))
    val txn = builder.build(engine)
    val n = rows.size
    def col[T <: AnyRef](f: ((Long, RejectedUpdate), Int) => T)(implicit tag: scala.reflect.ClassTag[T]): Array[T] =
      rows.zipWithIndex.map { case (r, i) => f(r, i) }.toArray
    val columns = IndexedSeq[Array[_ <: AnyRef]](
      col((r, _) => java.lang.Long.valueOf(r._1)),
      col((_, i) => Integer.valueOf(i)),
      col((r, _) => r._2.writer),
      col((r, _) => java.lang.Long.valueOf(r._2.epoch)),
      col((r, _) => r._2.reason),
      col((r, _) => r._2.key),
      col((r, _) => r._2.time),
      col((r, _) => r._2.value),
      col((r, _) => java.lang.Long.valueOf(r._2.updateProgressAtArrival))
    )
    KernelTables.commit(engine, txn, KernelTables.writeFiles(engine, writeConf, txn, Map.empty, schema, columns, n))
    true
  } catch { case _: ConcurrentTransactionException => false })

  /** The last journal event whose rejections the table holds (-1: none). */
  def lastEvent: Long =
    table.getLatestSnapshot(engine).getLatestTransactionVersion(engine, TxnApp).toScala.map(_.longValue).getOrElse(-1L)

  /** Every rejection, in the order the State rejected them. */
  def readAll(): Seq[RejectedUpdate] = readWithEvents().map(_._2)

  /** Every rejection with the journal event it was rejected in, in the order the State rejected them. */
  def readWithEvents(): Seq[(Long, RejectedUpdate)] =
    KernelTables.scan(engine, table.getLatestSnapshot(engine), None, schema) { row =>
      val r = new KernelTables.Named(row)
      ((r.long(CommitSeq), r.int(Seq_)),
        RejectedUpdate(r.binary(Key), r.longOrNull(Timestamp), r.binary(Value), r.string(Reason), r.string(Writer),
          r.long(Epoch), r.long(UpdateProgress)))
    }.sortBy(_._1).map { case ((seq, _), r) => seq -> r }
}

private[sharedstate] object RejectedTable {
  private val TxnApp = "journal"
  val CommitSeq = "commit_seq"
  val Seq_ = "seq"
  val Writer = "writer"
  val Epoch = "epoch"
  val Reason = "reason"
  val Key = "key"
  val Timestamp = "timestamp"
  val Value = "value"
  val UpdateProgress = "update_progress"

  val schema: StructType = new StructType(Seq(
      new StructField(CommitSeq, LongType.LONG, false), // the journal event during which it was rejected
      new StructField(Seq_, IntegerType.INTEGER, false), // order within that event
      new StructField(Writer, StringType.STRING, false),
      new StructField(Epoch, LongType.LONG, false),
      new StructField(Reason, StringType.STRING, false), // late, null_key, null_time, rule_failed: <message>
      new StructField(Key, BinaryType.BINARY, true), // UnsafeRow bytes; null for a null key
      new StructField(Timestamp, LongType.LONG, true), // event time (micros); null for a null time
      new StructField(Value, BinaryType.BINARY, true),
      new StructField(UpdateProgress, LongType.LONG, false) // the U that decided it (-/+inf: Long.Min/MaxValue)
    ).asJava)

  def openOrCreate(path: String, conf: Configuration): RejectedTable = {
    KernelTables.create(KernelTables.engine(conf), path, schema, Nil)
    new RejectedTable(path, conf)
  }
}
