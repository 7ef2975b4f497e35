package io.sharedstate.spark.fetch

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}

/**
 * The fetch join's operator in a logical plan. Its input is the events (event columns then the two
 * tick columns, null) unioned with the State's progress ticks; its output is [[FetchJoinRows.schema]].
 * `join` names the join in its query (its metrics and batch bounds); `latenessMicros` (-1: none)
 * lets it report the State's fetch progress F (see [[FetchProgressListener]], which finds the joins
 * of a query through these nodes). `inputs` lists the child's columns so the optimizer sees them all
 * used: the operator reads every event column by position and must not have any pruned below it.
 */
private[sharedstate] final case class FetchJoinNode(spec: FetchJoinSpec, join: String, latenessMicros: Long,
    eventsWatermarked: Boolean,
    inputs: Seq[Attribute],
    output: Seq[Attribute], child: LogicalPlan)
    extends UnaryNode {
  def reportsProgress: Boolean = latenessMicros >= 0 || eventsWatermarked
  override def producedAttributes: AttributeSet = AttributeSet(output)
  override protected def withNewChildInternal(newChild: LogicalPlan): FetchJoinNode = copy(child = newChild)
}
