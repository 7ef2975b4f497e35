package org.apache.spark.sql.sharedstate

import org.apache.spark.sql.{classic, DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.streaming.StreamingRelationV2
import org.apache.spark.sql.catalyst.types.DataTypeUtils.toAttributes
import org.apache.spark.sql.connector.catalog.Table
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/** DataFrames over plans of ours (Spark keeps `Dataset.ofRows` to its own packages). */
object PlanFrames {
  def of(session: SparkSession, plan: LogicalPlan): DataFrame =
    classic.Dataset.ofRows(session.asInstanceOf[classic.SparkSession], plan)

  /**
   * A streaming DataFrame reading `table` (which must support micro-batch reads) as a source of its
   * query, as `readStream.format(...)` would give, but for a table no data source name or option
   * reaches: Spark plans it through `newScanBuilder(empty options).build().toMicroBatchStream`.
   */
  def stream(session: SparkSession, sourceName: String, table: Table, schema: StructType): DataFrame =
    of(session,
      StreamingRelationV2(None, sourceName, table, CaseInsensitiveStringMap.empty(),
        toAttributes(schema), None, None, None))
}
