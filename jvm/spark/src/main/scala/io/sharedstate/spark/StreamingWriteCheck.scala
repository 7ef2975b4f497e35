package io.sharedstate.spark

import io.sharedstate.spark.config.UpdateOptions

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.streaming.WriteToStream

/**
 * Validates the options of a streaming write into a State against the query's input schema when the
 * query starts, and installs the listener that registers the query as the State's writer.
 */
private[sharedstate] final class StreamingWriteCheck(session: SparkSession) extends (LogicalPlan => Unit) {
  override def apply(plan: LogicalPlan): Unit = plan.foreach {
    case w: WriteToStream =>
      w.sink match {
        case table: SharedStateTable =>
          UpdateOptions.parse(table.options, w.inputQuery.schema, table.spec)
          QueryLifecycleListener.ensure(session)
        case _ =>
      }
    case _ =>
  }
}
