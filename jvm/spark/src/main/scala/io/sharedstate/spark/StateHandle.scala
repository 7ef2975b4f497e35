package io.sharedstate.spark

import io.sharedstate.spark.cluster.Coordinator
import io.sharedstate.spark.config.ReadOptions
import io.sharedstate.spark.fetch.FetchJoin
import io.sharedstate.spark.rows.StateSchemas

import io.sharedstate.core.{StateMetrics, StateSpec}
import org.apache.spark.sql.{DataFrame, SparkSession}

/** A handle on one State of this application. */
final class StateHandle private[spark] (spark: SparkSession, val name: String) {
  def spec: StateSpec = Coordinator.get.state(name).spec
  def schemas: StateSchemas = StateSchemas.of(spec)

  /** U, per-writer progress, sizes and counts. */
  def progress: StateMetrics = Coordinator.get.state(name).metrics

  /** Per key, the newest final value at or before `time` (a timestamp in the session time zone). */
  def asOf(time: String): DataFrame =
    spark.read.format("sharedstate").option("state", name).option(ReadOptions.AsOf, time).load()

  /** Per key, the newest final value. */
  def latest: DataFrame = spark.read.format("sharedstate").option("state", name).load()

  /** Late and rejected updates, with the reason and the U they arrived at. */
  def lateUpdates: DataFrame =
    spark.read.format("sharedstate").option("state", name).option(ReadOptions.Table, ReadOptions.RejectedTable).load()

  /** The change stream (see [[ChangeMicroBatchStream]]): `earliest` or `latest`. */
  def changes(startingOffsets: String = ReadOptions.Earliest): DataFrame =
    spark.readStream.format("sharedstate").option("state", name).option(ReadOptions.StartingOffsets, startingOffsets)
      .load()

  /** See [[FetchJoin]]. */
  def fetchJoin(events: DataFrame, keys: Seq[String], time: String, rule: String = "latest",
      mode: String = "committed", how: String = "left", staleness: String = null, window: String = null,
      continuous: Boolean = false, lateness: String = null): DataFrame =
    FetchJoin(events, name, keys, time, rule, mode, how, staleness, window, continuous, lateness)

  def drop(): Boolean = Coordinator.get.drop(name)

  override def toString: String = s"StateHandle($name)"
}
