package io.sharedstate.spark.txn

import io.sharedstate.spark.fetch.batch.BatchBounds

import io.sharedstate.core.SharedStateException
import io.sharedstate.core.txn.TransactionBatch
import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, UnsafeProjection}
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import scala.collection.mutable.ArrayBuffer

/**
 * The transactional operator: narrow, one task per input partition, no shuffle and no sort. Task i
 * of m of micro-batch B reads all its events and stages them as one batch of the group's
 * transactions (writer = the query's, epoch = B, task = i; a retried task replaces its attempt),
 * then emits its share of the outcomes that B's bound makes final (see [[TransactionRuns]]):
 * those whose (task + position) mod m is i, in (time, id) order. The last task to stage commits B
 * and emits what that made final too ([[SameBatchCommit]]). The events wait in the engine,
 * not in files: a transaction is kept by its group until U passes it, and its outcome by
 * [[TransactionRuns]] until the batch that emitted it is behind; with a durable member, each task also
 * keeps its events in the group's [[StagedTransactionLog]].
 */
private[sharedstate] final case class TransactionExec(program: TransactionProgram, timeOrdinal: Int,
    node: TransactionRuns.Node, output: Seq[Attribute], child: SparkPlan)
    extends UnaryExecNode {

  override protected def doExecute(): RDD[InternalRow] = {
    val (program, timeOrdinal, node) = (this.program, this.timeOrdinal, this.node)
    val input = child.execute()
    // A micro-batch with no input partitions still emits the outcomes U made final.
    val rows = if (input.getNumPartitions > 0) input else sparkContext.parallelize(Seq.empty[InternalRow], 1)
    val tasks = rows.getNumPartitions
    rows.mapPartitionsWithIndex { (part, rows) =>
      val width = program.eventSchema.length
      val (query, batch) = Option(TaskContext.get()).flatMap(c => BatchBounds.microBatch(c.getLocalProperty))
        .getOrElse(throw new SharedStateException(
            s"Transactions ${node.name}: a transactional query runs in a micro-batch query (its tasks found no query or batch id)."))
      val writer = TransactionRuns.writerId(query, node.name)
      val bound = TransactionRuns.bound(query, node, batch)
      val events = UnsafeProjection.create(program.eventSchema)
      val out = new TransactionRows.Writer(program)
      val staged = new TransactionBatch
      val logged = ArrayBuffer.empty[(Long, Array[Byte])] // with a staged log: (time, event bytes) as staged
      val rejected = ArrayBuffer.empty[InternalRow]
      var maxTime = Long.MinValue // the largest event time staged (none: MinValue)
      // The tick rows (non-null U past the event columns) only make Spark run a batch when U moves.
      rows.filter(_.isNullAt(width)).foreach { r =>
        val event = events(r).copy()
        if (event.isNullAt(timeOrdinal)) { if (node.outcomes) rejected += out.nullTime(event).copy() }
        else {
          val time = event.getLong(timeOrdinal)
          if (time > maxTime) maxTime = time
          staged.add(program.transaction(event, time))
          if (node.log.isDefined) logged += ((time, event.getBytes))
        }
      }
      // Kept before the task ends, so before Spark can commit the batch (a retry replaces it).
      node.log.foreach(_.writeTask(writer, batch, part, logged.toSeq))
      TransactionGroups.named(node.group).stage(writer, batch, part, staged)
      val committedNow =
        SameBatchCommit.staged(query, node, batch, part, tasks, Option.when(maxTime != Long.MinValue)(maxTime))
      val mine =
        if (!node.outcomes) Iterator.empty
        else TransactionRuns.outcomes(writer, bound).iterator
          .filter(o => Math.floorMod(o.id.task + o.id.sequence, tasks) == part) ++ committedNow.iterator
      rejected.iterator ++ mine.map(out.row)
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): TransactionExec = copy(child = newChild)
}
