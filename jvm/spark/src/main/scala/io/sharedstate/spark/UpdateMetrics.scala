package io.sharedstate.spark

import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric, CustomTaskMetric}

/** Task-level metrics of the update sink, summed by Spark into the SQL UI. */
object UpdateMetrics {
  val RowsStaged = "rowsStaged"
  val RowsRejectedInTask = "rowsRejectedNullKeyOrTime"

  final class Sum(metricName: String, text: String) extends CustomSumMetric {
    override def name(): String = metricName
    override def description(): String = text
  }

  def supported: Array[CustomMetric] = Array(
    new Sum(RowsStaged, "updates staged by the sharedstate sink"),
    new Sum(RowsRejectedInTask, "updates rejected for a null key or time"))

  def task(metricName: String, v: Long): CustomTaskMetric = new CustomTaskMetric {
    override def name(): String = metricName
    override def value(): Long = v
  }
}
