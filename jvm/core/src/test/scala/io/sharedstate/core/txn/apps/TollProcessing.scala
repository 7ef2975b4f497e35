package io.sharedstate.core.txn.apps

import io.sharedstate.core.StateSpec
import io.sharedstate.core.txn._
import scala.util.Random

/**
 * Toll Processing (TStream TP, from Linear Road): a SpeedTable and a CountTable over `segments` road
 * segments (skew 0.2). Each position report (vehicle, segment, speed) issues the fused operator's three
 * transactions at its time: Road Speed (length 1: the segment's average speed, a moving average
 * (7 old + new) / 8), Vehicle Count (length 1: the segment's vehicles as a 64-slot bitmap of vehicle id
 * mod 64, its bit count the unique-vehicle count; a HashSet in the paper) and Toll Notification
 * (length 2: reads both; the toll is [[TollProcessing.toll]] of the outcome's reads). No cross-chain
 * dependency: the best case for operation chains.
 */
final class TollProcessing(events: Int, segments: Int = 100, skew: Double = 0.2, vehicles: Int = 1000)
    extends TxnWorkload {
  import TollProcessing._
  val name = "tp"
  val states: Seq[StateSpec] = Seq(
    StateSpec(Speed, "k BIGINT", "v BIGINT", 4, "replace"),
    StateSpec(Count, "k BIGINT", "v BIGINT", 4, "replace"))
  private val picker = new KeyPicker(segments, skew, partitions = 4, ratio = 0.0)

  /** `events` transactions: a third of that many position reports. */
  def events(seed: Long): IndexedSeq[TxnEvent] = {
    val rnd = new Random(seed)
    (0 until events / 3).flatMap { i =>
      val time = AppTime.of(i, rnd)
      val seg = picker.zipf(rnd).toLong
      val speed = TxnRows.key(Speed, seg)
      val count = TxnRows.key(Count, seg)
      Seq(
        new Transaction(time, IndexedSeq(speed), IndexedSeq(speed), RoadSpeed(30L + rnd.nextInt(70))),
        new Transaction(time, IndexedSeq(count), IndexedSeq(count), VehicleCount(rnd.nextInt(vehicles).toLong)),
        new Transaction(time, IndexedSeq(speed, count), IndexedSeq.empty, TollNotification)
      ).map(TxnEvent.Txn(_))
    }
  }
}

object TollProcessing {
  val Speed = "tp_speed"
  val Count = "tp_count"

  /** The toll from a segment's average speed and unique vehicles (Linear Road: congested below 40 mph). */
  def toll(avgSpeed: Long, vehicles: Long): Long =
    if (avgSpeed >= 40 || vehicles <= 50) 0L else 2 * (vehicles - 50) * (vehicles - 50)

  final case class RoadSpeed(speed: Long) extends TransactionLogic {
    def decide(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]]): TransactionDecision = {
      val avg = reads(0).fold(speed)(v => (7 * TxnRows.readLong(v) + speed) / 8)
      if (avg <= 0) TransactionDecision.Abort("average speed must stay positive")
      else TransactionDecision.commit(WriteValue.Put(TxnRows.long(avg)))
    }
  }

  final case class VehicleCount(vehicle: Long) extends TransactionLogic {
    def decide(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]]): TransactionDecision =
      TransactionDecision.commit(WriteValue.Put(TxnRows.long(TxnRows.orZero(reads(0)) | (1L << (vehicle % 64)))))
  }

  object TollNotification extends TransactionLogic {
    def decide(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]]): TransactionDecision =
      TransactionDecision.Commit(IndexedSeq.empty)
  }
}
