package io.sharedstate.spark.config

import io.sharedstate.spark.rows.{ProgressTicks, StateSchemas}

import io.sharedstate.core.{EventTime, SharedStateException}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import org.apache.spark.unsafe.types.UTF8String

/**
 * Options of a read: which table of the State and as of when (batch), or where a change stream
 * starts (streaming: `startingOffsets` = `earliest`, every pair still kept, or `latest`, from U now).
 */
private[sharedstate] final case class ReadOptions(table: String, asOfMicros: Long, schema: StructType,
    startingOffsets: String, instances: Boolean = false) {

  /** Fails for options that only apply to streaming reads. */
  def checkBatch(): Unit = {
    if (startingOffsets != null) throw new SharedStateException(
      s"Option '${ReadOptions.StartingOffsets}' applies to streaming reads (the change stream) only.")
    if (table == ReadOptions.ProgressTable) throw new SharedStateException(
      s"Table '${ReadOptions.ProgressTable}' is a stream of update progress; read it with readStream.")
  }

  /** Fails for options that only apply to batch reads. */
  def checkStreaming(): Unit = {
    if (table != ReadOptions.StateTable && table != ReadOptions.ProgressTable) throw new SharedStateException(
      s"A streaming read of a State is its change stream; option '${ReadOptions.Table}' = '$table' applies to batch reads only.")
    if (asOfMicros != EventTime.PlusInfinity) throw new SharedStateException(
      s"Option '${ReadOptions.AsOf}' applies to batch reads only; a streaming read gives the changes in time order.")
    if (instances) throw new SharedStateException(
      s"Option '${ReadOptions.Instances}' applies to batch as-of reads only; the change stream has the merged values.")
  }
}

private[sharedstate] object ReadOptions {
  val Table = "table"
  val AsOf = "asOf"
  val StateTable = "state"
  val RejectedTable = "rejected"

  /** A stream of U itself, one row each time it advances: what drives fetch joins' waiting rows. */
  val ProgressTable = "progress"
  val StartingOffsets = "startingOffsets"
  val Earliest = "earliest"
  val Latest = "latest"

  /** `true`: an as-of read of a partial State has one row per instance (column `instance`), not merged values. */
  val Instances = "instances"
  val Known: Seq[String] = Seq(UpdateOptions.State, Table, AsOf, StartingOffsets, Instances)

  /** Every option of a scan must be known: a typo is an error, not a silent default. */
  def checkKnown(options: CaseInsensitiveStringMap): Unit = {
    import scala.jdk.CollectionConverters._
    val unknown = options.keySet.asScala.filterNot(k => Known.exists(_.equalsIgnoreCase(k)))
    if (unknown.nonEmpty) throw new SharedStateException(
      s"Unknown read option(s) ${unknown.toSeq.sorted.mkString(", ")}; supported: ${Known.mkString(", ")}.")
  }

  def parse(options: CaseInsensitiveStringMap, schemas: StateSchemas): ReadOptions = {
    val table = Option(options.get(Table)).map(_.trim.toLowerCase).getOrElse(StateTable)
    val starting = Option(options.get(StartingOffsets)).map(_.trim.toLowerCase).orNull
    if (starting != null && starting != Earliest && starting != Latest) throw new SharedStateException(
      s"Option '$StartingOffsets': '${options.get(StartingOffsets)}' is not supported; use '$Earliest' or '$Latest'.")
    val instances = Option(options.get(Instances)).map(_.trim.toLowerCase) match {
      case None | Some("false") => false
      case Some("true") => true
      case Some(other) =>
        throw new SharedStateException(s"Option '$Instances': '$other' is not supported; use 'true' or 'false'.")
    }
    if (instances && (table != StateTable || schemas.partial == null)) throw new SharedStateException(
      s"Option '$Instances' applies to as-of reads of a partial State; State '${schemas.stateName}' " +
        (if (schemas.partial == null) "is not partial." else s"has no instances in table '$table'."))
    table match {
      case StateTable =>
        ReadOptions(
          table,
          Option(options.get(AsOf)).map(parseTime).getOrElse(EventTime.PlusInfinity),
          if (instances) schemas.instancesSchema else schemas.asOfSchema,
          starting,
          instances
        )
      case RejectedTable =>
        if (options.containsKey(AsOf)) {
          throw new SharedStateException(s"Option '$AsOf' applies to table '$StateTable' only, not '$RejectedTable'.")
        }
        ReadOptions(table, EventTime.PlusInfinity, schemas.rejectedSchema, starting)
      case ProgressTable =>
        ReadOptions(table, EventTime.PlusInfinity, ProgressTicks.schema, starting)
      case other =>
        throw new SharedStateException(s"Option '$Table': unknown table '$other'; use '$StateTable' (the default), " +
          s"'$RejectedTable' (late and rejected updates) or '$ProgressTable' (a stream of update progress).")
    }
  }

  /** A timestamp in the session time zone, as Spark SQL would read it. */
  def parseTime(text: String): Long = {
    val zone = SparkSession.getActiveSession.map(_.sessionState.conf.sessionLocalTimeZone)
      .map(DateTimeUtils.getZoneId).getOrElse(java.time.ZoneId.systemDefault())
    DateTimeUtils.stringToTimestamp(UTF8String.fromString(text.trim), zone).getOrElse(
      throw new SharedStateException(s"Option '$AsOf': '$text' is not a timestamp; use e.g. '2026-11-20 10:00:00'."))
  }
}
