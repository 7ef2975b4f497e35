package io.sharedstate.spark

import io.sharedstate.core.EventTime
import org.apache.spark.sql.Row
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
 */
object FetchJoinGroups {
  /** Width of a ring slot: short enough that a U step re-reads few waiting events that stay waiting. */
  val SlotMicros = 100000L
  /** Slots in the ring (a minute of reply times): bounds the tick rows of a long U step. */
  val RingSlots = 600
  val Bucket = "__sharedstate_bucket"
  val Ring = "__sharedstate_ring"
  val keySchema: StructType = StructType(Seq(StructField(Bucket, IntegerType, nullable = false),
    StructField(Ring, IntegerType, nullable = false)))
  /**
   * Buckets per slot: 16 per shuffle partition, at most 1024. Many buckets keep each group's state
   * value small (a slot's waiting events, not all of a partition's); the cost is tick rows, one per
   * bucket and slot a U step passed (a one-second step: 10 slots x buckets rows, most of them empty
   * groups).
   */
  def buckets(shufflePartitions: Int): Int = math.min(1024, 16 * math.max(1, shufflePartitions))

  /** The group of events with no event time (answered at once, with nothing fetched). */
  val NoTime: Int = -1

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

/**
 * The grouping key of a fetch-join row: (bucket, ring slot). Event rows (no tick column set, or a
 * batch join with no ticks at all) get theirs from their key and reply time; tick rows carry theirs.
 */
final class FetchJoinGroupOf(spec: FetchJoinSpec, buckets: Int, streaming: Boolean) extends (Row => Row) with Serializable {
  private val width = spec.eventSchema.length

  override def apply(row: Row): Row =
    if (streaming && !row.isNullAt(width)) Row(row.getInt(width + 2), row.getInt(width + 3))
    else {
      val bucket = Math.floorMod(Row.fromSeq(spec.keyOrdinals.toSeq.map(row.get)).hashCode, buckets)
      val t = row.get(spec.timeOrdinal)
      Row(bucket, if (t == null) FetchJoinGroups.NoTime else FetchJoinGroups.ring(spec.mode.replyTime(EventTimes.micros(t))))
    }
}
