package io.sharedstate.spark.durable

import io.sharedstate.core.{FetchAnswer, Key, RejectedUpdate, SharedStateException, State, StateSpec, UpdateBatch}
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

  test("a lease file truncated by a crash is an expired lease, not a live owner: the next application takes over") {
    val d = dir()
    val fs = d.getFileSystem(new Configuration())
    fs.mkdirs(d)
    Seq("""{"app":"app-a","app_na""", "").zipWithIndex.foreach { case (text, i) =>
      val out = fs.create(new Path(d, f"${i + 1}%020d.json"), true)
      out.write(text.getBytes("UTF-8")); out.close()
      val next = new OwnerLease(d, new Configuration(), "app-b", "B", leaseMs = 60000)
      assert(next.owner.exists(o => o.corrupt && !o.liveAt(System.currentTimeMillis())), text)
      assert(next.acquire(0).isEmpty && next.held, s"'$text' is taken over at once")
      assert(next.owner.exists(o => o.app == "app-b" && o.generation == i + 2))
      next.release()
      fs.delete(new Path(d, f"${i + 2}%020d.json"), false)
    }
  }

  test("renewals replace the lease file atomically: a reader always finds a whole file, no temporary is left") {
    val d = dir()
    val a = new OwnerLease(d, new Configuration(), "app-a", "A", leaseMs = 300) // renewed every 100 ms
    assert(a.acquire(0).isEmpty)
    val fs = d.getFileSystem(new Configuration())
    val file = fs.listStatus(d).map(_.getPath).filter(_.getName.endsWith(".json")).head
    val json = new com.fasterxml.jackson.databind.ObjectMapper()
    val renewedAt = collection.mutable.Set.empty[Long]
    val deadline = System.currentTimeMillis() + 1500
    var reads = 0
    while (System.currentTimeMillis() < deadline) {
      // the raw file, no retry: a half-written one fails to parse here
      val text = new String(Files.readAllBytes(java.nio.file.Paths.get(file.toUri)), "UTF-8")
      val n = json.readTree(text)
      assert(n != null && n.get("app").asText == "app-a", s"read $reads: '$text'")
      renewedAt += n.get("renewed_ms").asLong
      reads += 1
    }
    assert(renewedAt.size >= 3, s"renewed while read ($reads reads)")
    a.release()
    assert(fs.listStatus(d).map(_.getPath.getName).filterNot(_.endsWith(".crc")).toSeq == Seq(file.getName))
  }

  test("a stalled owner (renewals stopped, lease run out, taken over) gets its next commit refused") {
    val root = new Path(Files.createTempDirectory("fence-").toString)
    val conf = new Configuration()
    val spec = StateSpec("kv", "k STRING", "v STRING", 2, "replace")
    val changelog = new Path(root, "changelog").toString
    val rejected = RejectedTable.openOrCreate(new Path(root, "rejected").toString, conf)
    // An owner as DurableStates opens one: lease, changelog fenced with its generation, recovery, journal.
    final class Owner(app: String, lease: OwnerLease) {
      assert(lease.acquire(0).isEmpty, s"$app takes the lease")
      val log: DeltaChangelog = DeltaChangelog.openOrCreate(changelog, conf)
      log.takeOver(lease.heldGeneration.get)
      val target: ChangelogTarget = log.target(spec.partitions)
      val state = new State(spec)
      private val recovered = StateRecovery.replay(state, log, None, None)
      state.attachJournal(new DeltaJournal("kv", log, target, rejected, recovered.nextSeq, recovered.version, lease))
      def files(e: Long): Seq[ChangelogFile] = {
        val b = new UpdateBatch
        (0 until 4).foreach(i => b.add(s"k$i".getBytes, e * 100L + i, s"$app-$e".getBytes))
        target.writeTask("w", e, 0, b)
      }
      def commit(e: Long): Unit = {
        val b = new UpdateBatch
        (0 until 4).foreach(i => b.add(s"k$i".getBytes, e * 100L + i, s"$app-$e".getBytes))
        val written = target.writeTask("w", e, 0, b)
        state.stage("w", e, 0, b)
        state.commitEpoch("w", e, e * 100L + 50L, payload = written)
      }
    }
    // A's renewals are stalled (an hour apart: a hung file system or a long pause); its lease is 6 s
    // (room for its first commit on a loaded machine).
    val a = new Owner("A",
      new OwnerLease(new Path(root, "owner"), conf, "app-a", "A", leaseMs = 6000, renewEveryMs = Some(3600000L)))
    a.state.registerWriter("w")
    a.commit(0L)
    Thread.sleep(4100) // more than two thirds of the lease since its last renewal
    val lapsed = intercept[SharedStateException](a.commit(1L))
    assert(
      lapsed.getMessage.contains("lease of") && lapsed.getMessage.contains("was last renewed") &&
        lapsed.getMessage.contains("commits nothing until a renewal succeeds"),
      lapsed.getMessage
    )
    Thread.sleep(2000) // A's lease has run out: B takes the State over and commits
    val b = new Owner("B", new OwnerLease(new Path(root, "owner"), conf, "app-b", "B", leaseMs = 60000))
    b.commit(1L)
    def k0(s: State, t: Long): Option[(Long, String)] = s.fetchLatest(new Key("k0".getBytes), t) match {
      case FetchAnswer.Found(time, v) => Some((time, new String(v)))
      case _ => None
    }
    assert(k0(b.state, 0L).contains((0L, "A-0")) && k0(b.state, 100L).contains((100L, "B-1")),
      "B has A's commit and its own")
    // A commits past its lease check (as a pause between the check and the commit would): the changelog's
    // fence refuses it, and nothing of it is in the table.
    val fenced = intercept[SharedStateException](a.log.commitEpoch("w", 2L, a.files(2L)))
    assert(fenced.getMessage.contains("taken over by a newer owner (lease generation 2") &&
        fenced.getMessage.contains("generation 1"), fenced.getMessage)
    assert(b.log.lastEpoch("w").contains(1L))
    // The race Delta's conflict check closes: a transaction read before a takeover, committed after it.
    val engine = io.delta.kernel.defaults.engine.DefaultEngine.create(conf)
    val early = io.delta.kernel.Table.forPath(engine, changelog)
      .createTransactionBuilder(engine, "test", io.delta.kernel.Operation.STREAMING_UPDATE).build(engine)
    b.log.takeOver(3L)
    intercept[io.delta.kernel.exceptions.MetadataChangedException](KernelTables.commit(engine, early, Nil))
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
