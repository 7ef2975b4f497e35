package io.sharedstate.spark.fetch

import io.sharedstate.spark.cluster.{LocalCoordinator, StateClient}
import io.sharedstate.spark.rows.StoredPairs

import io.sharedstate.core.{Change, RejectedUpdate, StateSpec, UpdateBatch}
import io.sharedstate.core.FetchAnswer
import io.sharedstate.core.fetch.FetchRequest
import java.util.concurrent.{CompletableFuture, Executors}
import java.util.concurrent.atomic.AtomicBoolean
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.encoders.ExpressionEncoder
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.types.StructType
import org.scalatest.funsuite.AnyFunSuite

/**
 * A continuous fetch join's answers complete on other threads (the one that advances U, or an RPC
 * reply) while the task thread answers others: every emitted row must carry its own key's value.
 */
class ContinuousFetchAnswersSuite extends AnyFunSuite {
  private val Keys = 64
  private val Times = 50

  test("answers completed on the U-advancing thread and on the task thread at once keep their own values") {
    val name = "continuous_answers_race"
    val state = LocalCoordinator.registry.create(StateSpec(name, "k BIGINT", "v BIGINT", 4, "replace"))
    try {
      val keyBytes = ExpressionEncoder(StructType.fromDDL("k BIGINT")).createSerializer()
      val valueBytes = ExpressionEncoder(StructType.fromDDL("v BIGINT")).createSerializer()
      def bytes(r: UnsafeRow) = r.copy().getBytes
      state.registerWriter("w")
      val batch = new UpdateBatch
      for (k <- 0 until Keys; t <- 1 to Times) {
        batch.add(bytes(keyBytes(Row(k.toLong)).asInstanceOf[UnsafeRow]), t.toLong,
          bytes(valueBytes(Row(k * 1000L + t)).asInstanceOf[UnsafeRow]))
      }
      state.stage("w", 0, 0, batch)
      state.commitEpoch("w", 0, Times / 2) // U = 25: half the events are answered at once, half wait

      val events = StructType.fromDDL("k BIGINT, t BIGINT, ts TIMESTAMP")
      val spec = FetchJoinSpec(events, name, Seq("k"), "ts", "latest", "committed", "left", null, null)
      val rows = (0 until 40000).map { i =>
        val t = 1 + i % (Times - 1)
        Row((i % Keys).toLong, t.toLong, DateTimeUtils.toJavaTimestamp(t.toLong))
      }
      // U moves on, one microsecond per step, while the task thread issues and answers fetches
      val stop = new AtomicBoolean(false)
      val advance = new Thread(() => {
        var epoch = 1L
        while (!stop.get() && epoch <= Times) {
          state.commitEpoch("w", epoch, Times / 2 + epoch); epoch += 1; Thread.sleep(1)
        }
      })
      advance.start()
      // replies arrive on several threads at once, as RPC replies from remote owners do
      val replies = Executors.newFixedThreadPool(8)
      val local = StateClient.of(name)
      val remoteLike: String => StateClient = _ =>
        new StateClient {
          override def fetchAsync(request: FetchRequest): CompletableFuture[FetchAnswer] =
            local.fetchAsync(request).thenApplyAsync((a: FetchAnswer) => a, replies)
          override def name: String = local.name
          override def spec: StateSpec = local.spec
          override def incarnation: Long = local.incarnation
          override def updateProgress: Long = local.updateProgress
          override def stage(writer: String, epoch: Long, task: Int, batch: UpdateBatch): Unit =
            local.stage(writer, epoch, task, batch)
          override def fetch(requests: IndexedSeq[FetchRequest]): Array[FetchAnswer] = local.fetch(requests)
          override def changes(partition: Int, from: Long, until: Long): Array[Change] =
            local.changes(partition, from, until)
          override def changeSubscription(id: Long): io.sharedstate.core.ChangeSubscription =
            local.changeSubscription(id)
          override def updateProgressAt(partition: Int): Long = local.updateProgressAt(partition)
          override def readerProgress(reader: String): Option[Long] = local.readerProgress(reader)
          override def ensureReader(reader: String): Unit = local.ensureReader(reader)
          override def asOf(partition: Int, asOf: Long): StoredPairs = local.asOf(partition, asOf)
          override def rejectedUpdates: Seq[RejectedUpdate] = local.rejectedUpdates
          override def preferredHost(partition: Int): Option[String] = local.preferredHost(partition)
        }
      val out =
        try new ContinuousFetchFunction(spec, remoteLike)(rows.iterator).toVector
        finally { stop.set(true); advance.join(); replies.shutdown() }
      assert(out.size == rows.size)
      val wrong = out.filter(r => r.getLong(3) != r.getLong(0) * 1000 + r.getLong(1))
      assert(wrong.isEmpty, s"${wrong.size} answers carry another event's value, e.g. ${wrong.take(3)}")
    } finally LocalCoordinator.registry.drop(name)
  }
}
