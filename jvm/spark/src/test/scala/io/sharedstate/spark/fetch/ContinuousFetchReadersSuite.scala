package io.sharedstate.spark.fetch

import io.sharedstate.spark.cluster.StateClient
import io.sharedstate.spark.rows.StoredPairs

import io.sharedstate.core.{Change, FetchAnswer, RejectedUpdate, StateSpec, UpdateBatch}
import io.sharedstate.core.fetch.FetchRequest
import java.util.concurrent.CompletableFuture
import org.scalatest.funsuite.AnyFunSuite

/** A continuous fetch join registers its reader once per run and JVM, not once per epoch. */
class ContinuousFetchReadersSuite extends AnyFunSuite {

  /** Counts reader registrations; nothing else may be asked. */
  private final class CountingClient(val name: String, failFirst: Boolean = false) extends StateClient {
    var asked = 0
    override def ensureReader(reader: String): Unit = {
      asked += 1
      if (failFirst && asked == 1) throw new RuntimeException("coordinator unreachable")
    }
    private def no = throw new AssertionError("only ensureReader is expected")
    override def spec: StateSpec = no
    override def incarnation: Long = 1L
    override def updateProgress: Long = no
    override def stage(writer: String, epoch: Long, task: Int, batch: UpdateBatch): Unit = no
    override def fetch(requests: IndexedSeq[FetchRequest]): Array[FetchAnswer] = no
    override def fetchAsync(request: FetchRequest): CompletableFuture[FetchAnswer] = no
    override def changes(partition: Int, from: Long, until: Long): Array[Change] = no
    override def changeSubscription(id: Long): io.sharedstate.core.ChangeSubscription = no
    override def updateProgressAt(partition: Int): Long = no
    override def readerProgress(reader: String): Option[Long] = no
    override def asOf(partition: Int, asOf: Long): StoredPairs = no
    override def rejectedUpdates: Seq[RejectedUpdate] = no
    override def preferredHost(partition: Int): Option[String] = no
  }

  test("every epoch of a run asks the coordinator once; a new run (restart) asks again") {
    val client = new CountingClient("readers_once")
    (1 to 50).foreach(_ => ContinuousFetchReaders.ensure(client, "query-1", "run-a--x"))
    assert(client.asked == 1)
    (1 to 5).foreach(_ => ContinuousFetchReaders.ensure(client, "query-1", "run-b--y"))
    assert(client.asked == 2, "a restarted query registers again (its stop removed the reader)")
    ContinuousFetchReaders.ensure(client, "query-2", "run-c--z")
    assert(client.asked == 3)
    ContinuousFetchReaders.ensure(client, null, "run-d")
    assert(client.asked == 3, "outside a streaming query there is no reader")
  }

  test("a registration that failed is tried again by the next epoch") {
    val client = new CountingClient("readers_retry", failFirst = true)
    intercept[RuntimeException](ContinuousFetchReaders.ensure(client, "query-1", "run-a--x"))
    ContinuousFetchReaders.ensure(client, "query-1", "run-a--x")
    ContinuousFetchReaders.ensure(client, "query-1", "run-a--x")
    assert(client.asked == 2)
  }
}
