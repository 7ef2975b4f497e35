package io.sharedstate.spark

import io.sharedstate.core.EventTime
import io.sharedstate.core.fetch.ReadMode
import org.apache.spark.sql.Column
import org.apache.spark.sql.functions.{call_function, coalesce, col, hash, lit, pmod, try_subtract, unix_micros, when}
import org.apache.spark.sql.types.{IntegerType, StructField, StructType}

/**
 * How a streaming fetch join groups its rows: by (bucket, ring slot) instead of by State key.
 * An event goes to bucket hash(key) mod `buckets` and to the ring slot of its reply time (the time
 * U must pass before it can be answered: its event time, minus the staleness when read-uncommitted).
 * Every U step [from, U) of the State's progress stream becomes one tick row per bucket and per ring
 * slot the step passed, so a waiting event is visited, and answered, in the micro-batch whose tick
 * passes it: no event-time timeout, hence no extra no-data batch after every U step.
 *
 * The ring wraps (`RingSlots` slots of `SlotMicros`): a group may hold events of several laps, and a
 * step of a whole lap or more visits every slot, so every event is visited once U passes it,
 * whatever the gap; a visit answers every event of the group that U has passed, from any lap.
 *
 * Rows are grouped by one int, [[group]] of (bucket, ring slot): the sort Spark puts before the
 * operator is then a radix sort on the key alone, not a comparison sort of two columns (the largest
 * cost of a fetch join at high event rates).
 */
object FetchJoinGroups {
  /** Width of a ring slot: short enough that a U step re-reads few waiting events that stay waiting. */
  val SlotMicros = 100000L
  /** Slots in the ring (a minute of reply times): bounds the tick rows of a long U step. */
  val RingSlots = 600
  val Group = "__sharedstate_group"
  val keySchema: StructType = StructType(Seq(StructField(Group, IntegerType, nullable = false)))
  /**
   * Buckets per slot: 16 per shuffle partition, at most 1024. Many buckets keep each group's state
   * value small (a slot's waiting events, not all of a partition's); the cost is tick rows, one per
   * bucket and slot a U step passed (a one-second step: 10 slots x buckets rows, most of them empty
   * groups).
   */
  def buckets(shufflePartitions: Int): Int = math.min(1024, 16 * math.max(1, shufflePartitions))

  /** The group of events with no event time (answered at once, with nothing fetched). */
  val NoTime: Int = -1

  /**
   * An event's (bucket, ring slot) as column expressions over the event's own columns: bucket =
   * Murmur3 hash of the key columns mod `buckets`, ring = [[ring]] of the reply time in exact
   * integer arithmetic, [[NoTime]] for a null event time.
   */
  def groupOf(events: StructType, keyOrdinals: Seq[Int], timeOrdinal: Int, mode: ReadMode, buckets: Int): (Column, Column) = {
    def column(ordinal: Int): Column = col("`" + events(ordinal).name.replace("`", "``") + "`")
    val bucket = coalesce(pmod(hash(keyOrdinals.map(column): _*), lit(buckets)), lit(0))
    val t = unix_micros(column(timeOrdinal))
    val reply = mode match {
      case ReadMode.Committed => t
      case ReadMode.Uncommitted(staleness) => // saturates at -infinity like ReadMode.replyTime
        when(t.isNotNull, coalesce(try_subtract(t, lit(staleness)), lit(Long.MinValue)))
    }
    val width = lit(SlotMicros)
    val slot = call_function("div", reply, width) - when(reply.mod(width) < 0, lit(1L)).otherwise(lit(0L))
    (bucket, coalesce(pmod(slot, lit(RingSlots.toLong)).cast(IntegerType), lit(NoTime)))
  }

  /**
   * The group key of (bucket, ring slot): slot * buckets + bucket, below 1024 * 600; events with no
   * time ([[NoTime]]) go to -1 - bucket (answered at once, still spread over the buckets).
   */
  def group(bucket: Int, ring: Int, buckets: Int): Int = if (ring == NoTime) -1 - bucket else ring * buckets + bucket

  /** [[group]] as a column expression over the columns of [[groupOf]]. */
  def groupColumn(bucket: Column, ring: Column, buckets: Int): Column =
    when(ring === lit(NoTime), lit(-1) - bucket).otherwise(ring * lit(buckets) + bucket)

  def ring(replyTime: Long): Int = Math.floorMod(Math.floorDiv(replyTime, SlotMicros), RingSlots.toLong).toInt

  /** The ring slots a step of U from `from` to `until` passes (replies in [from, until)). */
  def ringsPassed(from: Long, until: Long): Iterator[Int] = {
    if (until <= from) return Iterator.empty
    val first = if (from == EventTime.MinusInfinity) Long.MinValue else Math.floorDiv(from, SlotMicros)
    val last = Math.floorDiv(until - 1, SlotMicros)
    if (first == Long.MinValue || last - first + 1 >= RingSlots) Iterator.range(0, RingSlots)
    else Iterator.iterate(first)(_ + 1).takeWhile(_ <= last).map(s => Math.floorMod(s, RingSlots.toLong).toInt)
  }
}
