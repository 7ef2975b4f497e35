package io.sharedstate.spark.durable

import io.sharedstate.core.RejectedUpdate
import java.nio.file.Files
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

class OwnerLeaseSuite extends AnyFunSuite {
  private def dir(): Path = new Path(Files.createTempDirectory("lease-").resolve("state").resolve("owner").toString)

  test("one owner at a time: a live lease is refused, a released one is taken at once, the owner keeps its own") {
    val d = dir()
    val a = new OwnerLease(d, new Configuration(), "app-a", "A", leaseMs = 60000)
    val b = new OwnerLease(d, new Configuration(), "app-b", "B", leaseMs = 60000)
    assert(a.acquire(0).isEmpty && a.held)
    val refused = b.acquire(0)
    assert(refused.exists(o => o.app == "app-a" && o.appName == "A" && !o.released) && !b.held)
    assert(new OwnerLease(d, new Configuration(), "app-a", "A", 60000).acquire(0).isEmpty,
      "the same application reopens")
    a.release()
    assert(!a.held)
    assert(b.acquire(0).isEmpty && b.held)
    assert(b.owner.exists(o => o.app == "app-b" && o.generation == 2))
    b.release()
  }

  test("a lease that is not renewed runs out and is taken over; the old owner then finds it lost") {
    val d = dir()
    // 3 s leases (renewed every second): shorter ones run out on a loaded machine between renewals.
    val a = new OwnerLease(d, new Configuration(), "app-a", "A", leaseMs = 3000)
    assert(a.acquire(0).isEmpty)
    val b = new OwnerLease(d, new Configuration(), "app-b", "B", leaseMs = 3000)
    assert(b.acquire(0).nonEmpty, "renewed every second: live")
    // A dead owner: its renewals stopped and its file was last renewed long ago.
    a.release()
    val fs = d.getFileSystem(new Configuration())
    val out = fs.create(fs.listStatus(d).head.getPath, true)
    out.write("""{"app":"app-a","app_name":"A","renewed_ms":1,"lease_ms":300,"released":false}""".getBytes("UTF-8"))
    out.close()
    val next = new OwnerLease(d, new Configuration(), "app-c", "C", leaseMs = 3000)
    assert(next.acquire(0).isEmpty, "an expired lease is taken over")
    assert(b.acquire(2000).exists(_.app == "app-c"), "waits up to 2 s; the new owner keeps renewing")
    next.release()
  }

  test("the rejected table takes each journal event once") {
    val path = Files.createTempDirectory("rejected-").resolve("rejected").toString
    val t = RejectedTable.openOrCreate(path, new Configuration())
    def r(k: String, time: Long) =
      RejectedUpdate(k.getBytes("UTF-8"), time, Array[Byte](1), RejectedUpdate.Late, "w", 3, 10)
    assert(t.lastEvent == -1L)
    assert(t.append(Seq(5L -> r("a", 1), 5L -> r("b", 2)), Some(5L)))
    assert(!t.append(Seq(5L -> r("a", 1)), Some(5L)), "the same event again adds nothing")
    assert(!t.append(Seq(4L -> r("z", 1)), Some(4L)), "nor an older one")
    assert(t.append(Seq(7L -> r("c", 3)), Some(7L)))
    assert(t.lastEvent == 7L)
    assert(t.readAll().map(x => new String(x.key, "UTF-8")) == Seq("a", "b", "c"))
    assert(
      t.readAll().forall(x => x.reason == "late" && x.writer == "w" && x.epoch == 3 && x.updateProgressAtArrival == 10))
  }
}
