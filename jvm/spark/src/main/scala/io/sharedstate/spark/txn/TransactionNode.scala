package io.sharedstate.spark.txn

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}

/**
 * A transactional operator in a logical plan. Its input is the events (event columns then the two
 * tick columns, null) unioned with the group's progress ticks; its output is [[TransactionRows.schema]].
 * `name` names it in its query (its metrics and its writer); `inputs` lists the child's columns so the
 * optimizer sees them all used (the operator reads every event column by position). `stagedLog`: where the
 * tasks keep their staged batches when the group has a durable member ([[StagedTransactionLog]]).
 */
private[sharedstate] final case class TransactionNode(program: TransactionProgram, timeOrdinal: Int, group: String,
    name: String, latenessMicros: Long, outcomes: Boolean, stagedLog: Option[StagedTransactionLog],
    inputs: Seq[Attribute],
    output: Seq[Attribute], child: LogicalPlan)
    extends UnaryNode {
  def node: TransactionRuns.Node = TransactionRuns.Node(name, group, latenessMicros, outcomes, stagedLog)
  override def producedAttributes: AttributeSet = AttributeSet(output)
  override protected def withNewChildInternal(newChild: LogicalPlan): TransactionNode = copy(child = newChild)
}
