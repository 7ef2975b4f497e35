package io.sharedstate.spark.config

import io.sharedstate.spark.rows.StateSchemas

import io.sharedstate.core.{SharedStateException, StateSpec}
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import scala.jdk.CollectionConverters._

/** The validated options of a streaming write into a State, bound to the input schema. */
private[sharedstate] final case class UpdateOptions(
    stateName: String,
    keyOrdinals: Array[Int],
    timeOrdinal: Int,
    valueOrdinals: Array[Int],
    latenessMicros: Long,
    inputSchema: StructType,
    maxAheadMicros: Long = UpdateOptions.DefaultMaxAheadMicros,
    idleTimeoutMicros: Long = UpdateOptions.NoIdleTimeout,
    incarnation: Long = -1L,
    partialInstances: String = null)

private[sharedstate] object UpdateOptions {
  val State = "state"
  val Key = "key"
  val Time = "time"
  val Value = "value"
  val LatenessOption = "lateness"

  /** How far ahead of the writing task's clock an update's time may be; `off` for replays of future-dated data. */
  val MaxAheadOption = "maxAhead"
  val DefaultMaxAhead = "1 day"
  val DefaultMaxAheadMicros: Long = 86400L * 1000000L

  /** No bound: every update time is accepted. */
  val NoMaxAhead: Long = -1L

  /**
   * A writer with no new input for this long stops holding U back, and rejoins at the current U when
   * input comes back (Flink's `withIdleness`); none by default.
   */
  val IdleTimeoutOption = "idleTimeout"
  val NoIdleTimeout: Long = -1L

  /** Options Spark itself passes to every sink. */
  private val SparkOwned = Set("checkpointlocation", "path", "queryname")
  val Known: Set[String] = Set(State, Key, Time, Value, LatenessOption, MaxAheadOption, IdleTimeoutOption)

  /** The required `state` option: the name of the State a write or read is for. */
  def stateName(options: CaseInsensitiveStringMap): String =
    Option(options.get(State)).map(_.trim).filter(_.nonEmpty).getOrElse(
      throw new SharedStateException("Option 'state' is required: the name of the State to write to or read."))

  /** The options of a write into the State defined by `spec`, bound to the `input` schema. */
  def parse(options: CaseInsensitiveStringMap, input: StructType, spec: StateSpec): UpdateOptions = {
    val unknown =
      options.keySet.asScala.map(_.toLowerCase).filterNot(k => Known.exists(_.equalsIgnoreCase(k)) || SparkOwned(k))
    if (unknown.nonEmpty) {
      throw new SharedStateException(s"Unknown option(s) ${unknown.toSeq.sorted.mkString(", ")} for a sharedstate " +
        s"write. Supported: ${Known.toSeq.sorted.mkString(", ")}.")
    }
    val schemas = StateSchemas.of(spec)
    val keyCols = columns(options, Key).getOrElse(throw new SharedStateException(
        s"Option 'key' is required: the column(s) holding the key of State '${spec.name}' (${schemas.key.toDDL})."))
    val timeCol = Option(options.get(Time)).map(_.trim).filter(_.nonEmpty).getOrElse(
      throw new SharedStateException("Option 'time' is required: the TIMESTAMP column with each update's event time."))
    val valueCols = columns(options, Value).getOrElse(schemas.value.fieldNames.toSeq)
    val lateness = Option(options.get(LatenessOption)).map(Intervals.parseMicros(LatenessOption, _)).getOrElse(0L)
    UpdateOptions(
      stateName = spec.name,
      keyOrdinals = StateSchemas.bindColumns(input, keyCols, schemas.key, Key, spec.name),
      timeOrdinal = StateSchemas.checkTimestamp(input, timeCol, Time),
      valueOrdinals = StateSchemas.bindColumns(input, valueCols, schemas.value, Value, spec.name),
      latenessMicros = lateness,
      inputSchema = input,
      maxAheadMicros = Option(options.get(MaxAheadOption)).map(_.trim).map {
        case off if off.equalsIgnoreCase("off") => NoMaxAhead
        case text => Intervals.parseMicros(MaxAheadOption, text)
      }.getOrElse(DefaultMaxAheadMicros),
      idleTimeoutMicros = idleTimeoutMicros(options),
      partialInstances = if (spec.isPartial) spec.instances else null
    )
  }

  /** The writer's idle timeout (`idleTimeout`) in microseconds, or [[NoIdleTimeout]]. */
  def idleTimeoutMicros(options: CaseInsensitiveStringMap): Long =
    Option(options.get(IdleTimeoutOption)).map(_.trim).map { text =>
      val micros = Intervals.parseMicros(IdleTimeoutOption, text)
      if (micros <= 0) throw new SharedStateException(
        s"Option '$IdleTimeoutOption': '$text' must be longer than 0; leave it out to keep a writer's hold on U.")
      micros
    }.getOrElse(NoIdleTimeout)

  private def columns(options: CaseInsensitiveStringMap, name: String): Option[Seq[String]] =
    Option(options.get(name)).map(_.split(",").map(_.trim).filter(_.nonEmpty).toSeq).filter(_.nonEmpty)
}
