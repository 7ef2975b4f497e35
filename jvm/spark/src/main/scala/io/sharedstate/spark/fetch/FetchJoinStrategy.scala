package io.sharedstate.spark.fetch

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}

/** Plans [[FetchJoinNode]] as [[FetchJoinExec]] (installed by the session extensions). */
private[sharedstate] object FetchJoinStrategy extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case n: FetchJoinNode =>
      FetchJoinExec(n.spec, n.join, n.child.isStreaming, n.reportsProgress, n.output, planLater(n.child)) :: Nil
    case _ => Nil
  }
}
