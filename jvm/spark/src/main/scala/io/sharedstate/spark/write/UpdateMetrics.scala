package io.sharedstate.spark.write

import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric, CustomTaskMetric}

/** Task-level metrics of the update sink, summed by Spark (which builds them by reflection). */
private[sharedstate] object UpdateMetrics {
  val RowsStaged = "rowsStaged"
  val RowsRejectedInTask = "rowsRejectedNullKeyOrTime"

  def supported: Array[CustomMetric] = Array(new RowsStagedMetric, new RowsRejectedMetric)

  def task(metricName: String, v: Long): CustomTaskMetric = new CustomTaskMetric {
    override def name(): String = metricName
    override def value(): Long = v
  }
}

private[sharedstate] final class RowsStagedMetric extends CustomSumMetric {
  override def name(): String = UpdateMetrics.RowsStaged
  override def description(): String = "updates staged by the sharedstate sink"
}

private[sharedstate] final class RowsRejectedMetric extends CustomSumMetric {
  override def name(): String = UpdateMetrics.RowsRejectedInTask
  override def description(): String = "updates rejected for a null key or time"
}
