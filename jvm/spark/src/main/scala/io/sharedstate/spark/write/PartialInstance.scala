package io.sharedstate.spark.write

import io.sharedstate.spark.config.UpdateOptions

import io.sharedstate.core.{SharedStateException, StateSpec}
import io.sharedstate.core.partial.QueryInstance

/**
 * The instance of a partial State a writer task updates: its partition (instances `task`), or a
 * number of the writer query's id (instances `query`, [[QueryInstance]]; the id is the same across restarts
 * from the checkpoint, so the instance is too; two writer queries with the same number are refused when
 * the second registers). -1 for a State that is not partial.
 */
private[sharedstate] object PartialInstance {
  def of(options: UpdateOptions, writer: String, partition: Int): Int = options.partialInstances match {
    case null => -1
    case StateSpec.QueryInstances => QueryInstance.of(writer)
    case _ => partition
  }

  /**
   * With instances `task` an instance is a partition of the writer's input, so that partitioning must
   * stay the same from one micro-batch to the next: a local fetch reads the instance of the same
   * partition index. Fails naming the State and both partition counts when it changes.
   */
  def checkTasks(options: UpdateOptions, writer: String, known: Option[Int], now: Int): Int = {
    if (options.partialInstances == StateSpec.TaskInstances) known.foreach { k =>
      if (k != now) throw new SharedStateException(
        s"Partial State '${options.stateName}' (instances='task') is written by query $writer without a known " +
          s"partitioning: its input had $k partitions, now $now. Give the writer a fixed partitioning " +
          "(e.g. df.repartition(n, <key columns>)) or create the State with instances='query'.")
    }
    now
  }
}
