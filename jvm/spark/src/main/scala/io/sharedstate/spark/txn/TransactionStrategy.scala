package io.sharedstate.spark.txn

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}

/** Plans [[TransactionNode]] as [[TransactionExec]] (installed by the session extensions). */
private[sharedstate] object TransactionStrategy extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case n: TransactionNode => TransactionExec(n.program, n.timeOrdinal, n.node, n.output, planLater(n.child)) :: Nil
    case _ => Nil
  }
}
