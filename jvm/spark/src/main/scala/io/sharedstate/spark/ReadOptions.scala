package io.sharedstate.spark

import io.sharedstate.core.{EventTime, SharedStateException}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import org.apache.spark.unsafe.types.UTF8String

/** Options of a batch read: which table of the State, and as of when. */
final case class ReadOptions(table: String, asOfMicros: Long, schema: StructType)

object ReadOptions {
  val Table = "table"
  val AsOf = "asOf"
  val StateTable = "state"
  val RejectedTable = "rejected"

  def parse(options: CaseInsensitiveStringMap, schemas: StateSchemas): ReadOptions = {
    val table = Option(options.get(Table)).map(_.trim.toLowerCase).getOrElse(StateTable)
    table match {
      case StateTable =>
        ReadOptions(table, Option(options.get(AsOf)).map(parseTime).getOrElse(EventTime.PlusInfinity),
          schemas.asOfSchema)
      case RejectedTable =>
        if (options.containsKey(AsOf)) {
          throw new SharedStateException(s"Option '$AsOf' applies to table '$StateTable' only, not '$RejectedTable'.")
        }
        ReadOptions(table, EventTime.PlusInfinity, RejectedScan.schema(schemas))
      case other =>
        throw new SharedStateException(s"Option '$Table': unknown table '$other'; use '$StateTable' (the default) " +
          s"or '$RejectedTable' (late and rejected updates).")
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
