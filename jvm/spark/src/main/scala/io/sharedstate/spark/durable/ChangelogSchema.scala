package io.sharedstate.spark.durable

import io.delta.kernel.types.{BinaryType, IntegerType, LongType, StringType, StructField, StructType}
import scala.jdk.CollectionConverters._

/**
 * The changelog table of a State, `<root>/<state>/changelog`, partitioned by `partition`.
 *
 * Partitions 0..n-1 hold every update a writer task sent, accepted or not (the decision is made at
 * the epoch's commit and is reproduced on replay from the commit's U). Partition -1 holds the rows
 * that belong to no State partition: the progress events (register, commit, finish, deregister) and
 * the updates rejected in the task for a null key; and the pairs a transaction group's rounds put in
 * the State (see [[Events.GroupAdvance]]). Times are microseconds since the epoch (UTC);
 * -/+ infinity are Long.MinValue/Long.MaxValue.
 */
private[sharedstate] object ChangelogSchema {

  /** The partition of progress events and key-less rows. */
  val JournalPartition: Int = -1

  val Partition = "partition"
  val Writer = "writer"
  val Epoch = "epoch"
  val Task = "task"
  val Seq_ = "seq"
  val Key = "key"
  val Timestamp = "timestamp"
  val Value = "value"
  val Event = "event"
  val UpdateProgress = "update_progress"
  val WriterProgress = "writer_progress"
  val CommitSeq = "commit_seq"

  object Events {
    val Register = "register"
    val Commit = "commit"
    val Finish = "finish"
    val Deregister = "deregister"

    /** The State joined a transaction group (writer = the group's name) at U `update_progress`. */
    val GroupJoin = "group_join"

    /**
     * The State's transaction group advanced U to `update_progress`; the pairs its transactions put in
     * that step (if any) are rows of the State's partitions with writer [[AppliedWriter]] and epoch =
     * this event's `commit_seq` (the event's own writer and epoch too), `seq` their order in the step.
     */
    val GroupAdvance = "group_advance"
  }

  /** The writer column of the pairs transactions put (no writer is named so: a writer is a query id or bulk load). */
  val AppliedWriter = "(transactions)"

  /** The columns of the Parquet files (the partition column lives in the Delta log, not in the files). */
  val physical: StructType = new StructType(Seq(
      new StructField(Writer, StringType.STRING, false),
      new StructField(Epoch, LongType.LONG, false),
      new StructField(Task, IntegerType.INTEGER, false),
      new StructField(Seq_, IntegerType.INTEGER, false), // order within the task (or within the commit, for events)
      new StructField(Key, BinaryType.BINARY, true), // UnsafeRow bytes of the key; null: rejected for a null key
      new StructField(Timestamp, LongType.LONG, true), // event time; null: rejected for a null time
      new StructField(Value, BinaryType.BINARY, true), // UnsafeRow bytes of the value
      new StructField(Event, StringType.STRING, true), // null for updates
      new StructField(UpdateProgress, LongType.LONG, true), // commit: the U that decided lateness
      new StructField(WriterProgress, LongType.LONG,
        true), // commit: the writer's progress after it; register: its start
      new StructField(CommitSeq, LongType.LONG, true) // events: their order, across writers
    ).asJava)

  val table: StructType = physical.add(new StructField(Partition, IntegerType.INTEGER, false))

  val partitionColumns: java.util.List[String] = java.util.List.of(Partition)
}
