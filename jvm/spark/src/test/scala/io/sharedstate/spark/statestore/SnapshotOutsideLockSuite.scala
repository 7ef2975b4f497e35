package io.sharedstate.spark.statestore

import java.util.concurrent.CountDownLatch

import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration._

import org.scalatest.funsuite.AnyFunSuite

/**
 * Maintenance writes a snapshot from a frozen view outside the provider's lock: a task opens,
 * updates and commits the store while a snapshot is paused mid-way, and the snapshot still holds
 * the version it froze.
 */
class SnapshotOutsideLockSuite extends AnyFunSuite {
  import StoreTestRows._

  test("a task's getStore and commit do not wait for a snapshot being written") {
    val dir = newDir("statestore-snapshot")
    val p = provider(dir, minDeltasForSnapshot = 1)
    val s0 = p.getStore(0)
    (1 to 100).foreach(i => s0.put(key(s"k$i"), value(s"v$i")))
    assert(s0.commit() == 1)

    val frozen = new CountDownLatch(1)
    val release = new CountDownLatch(1)
    @volatile var lockHeld = true
    p.beforeSnapshotWrite = { () =>
      lockHeld = Thread.holdsLock(p)
      frozen.countDown()
      release.await()
    }
    val maintenance = Future(p.doMaintenance())(ExecutionContext.global)
    frozen.await()
    assert(!lockHeld, "the snapshot is written without the provider's lock")

    // The snapshot of version 1 is paused: the task of the next batch goes ahead meanwhile.
    val s1 = p.getStore(1)
    (1 to 100 by 2).foreach(i => s1.remove(key(s"k$i")))
    (101 to 300).foreach(i => s1.put(key(s"k$i"), value(s"w$i")))
    assert(s1.commit() == 2)
    assert(!p.files.snapshot(1).getFileSystem(p.hadoopConf).exists(p.files.snapshot(1)))
    release.countDown()
    Await.result(maintenance, 5.minutes)
    p.beforeSnapshotWrite = () => ()

    // The snapshot holds version 1 as committed: read it alone (its changelog deleted).
    p.files.delete(p.files.changelog(1))
    val reloaded = provider(dir)
    val v1 = reloaded.getReadStore(1, None).iterator().map(r => r.key.getString(0) -> r.value.getString(0)).toMap
    assert(v1 == (1 to 100).map(i => s"k$i" -> s"v$i").toMap)
    val v2 = reloaded.getReadStore(2, None).iterator().map(r => r.key.getString(0) -> r.value.getString(0)).toMap
    assert(v2 == ((2 to 100 by 2).map(i => s"k$i" -> s"v$i") ++ (101 to 300).map(i => s"k$i" -> s"w$i")).toMap)
    p.close(); reloaded.close()
  }
}
