package io.sharedstate.spark.cluster

import io.sharedstate.spark.durable.{
  ChangelogFile,
  DeltaChangelog,
  DeltaJournal,
  OwnerLease,
  PartitionSource,
  RejectedTable,
  SnapshotTable,
  Snapshotter,
  StateRecovery
}
import io.sharedstate.spark.cluster.Messages._

import io.sharedstate.core.{FetchAnswer, Key, State, StateSpec, UpdateBatch}
import io.sharedstate.core.fetch.FetchRequest
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files
import org.apache.hadoop.conf.Configuration
import org.apache.spark.SparkConf
import org.apache.spark.sharedstate.RpcBridge
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/**
 * A durable State on three hosts in one JVM (A in-process, B and C over RPC), its tables on local
 * disk: every epoch is journaled to the Delta changelog before the hosts commit it; host C is lost
 * between staging and commit, host B mid-epoch (found by a task's stage); their partitions are
 * rebuilt on the live host from a snapshot and the changelog, and every answer still equals one
 * plain State given the same updates, and the rejected table holds each update the plain State
 * rejected exactly once (the hosts hand their rejections to the driver with each step's answer; the
 * lost hosts' share of the commit that found them lost comes from the rebuild). Then a "restarted
 * driver" rebuilds the State from the tables, and the hosts tell what the rejected table would lack.
 */
class DurableClusterSuite extends AnyFunSuite {
  private val conf =
    new SparkConf(false).set("spark.rpc.askTimeout", "10s").set("spark.app.id", "durable-cluster-suite")

  private def key(i: Int): Array[Byte] = s"key-$i".getBytes(UTF_8)
  private def value(s: String): Array[Byte] = s.getBytes(UTF_8)

  test("lost hosts' partitions are rebuilt from the changelog on a live host; answers equal one State's") {
    val serverA = RpcBridge.newStandaloneServer("dur-a", "127.0.0.1", conf)
    val serverB = RpcBridge.newStandaloneServer("dur-b", "127.0.0.1", conf)
    val serverC = RpcBridge.newStandaloneServer("dur-c", "127.0.0.1", conf)
    try {
      val hostA = new HostService(HostId("1", "127.0.0.1", serverA.port))
      val hostB = new HostService(HostId("2", "127.0.0.1", serverB.port))
      val hostC = new HostService(HostId("3", "127.0.0.1", serverC.port))
      serverA.serve(HostService.Endpoint, hostA, MessageAllowList)
      serverB.serve(HostService.Endpoint, hostB, MessageAllowList)
      serverC.serve(HostService.Endpoint, hostC, MessageAllowList)
      val spec = StateSpec("durable_routed", "k STRING", "v STRING", 6, "replace")
      val route = StateRoute(spec, 1L, Array.tabulate(6)(i => Seq(hostA.id, hostB.id, hostC.id)(i % 3)))

      val dir = Files.createTempDirectory("durable-cluster-")
      val hadoop = new Configuration()
      val log = DeltaChangelog.openOrCreate(dir.resolve("changelog").toString, hadoop)
      val snapshots = SnapshotTable.openOrCreate(dir.resolve("snapshots").toString, hadoop)
      val target = log.target(spec.partitions)
      val source = PartitionSource(log.path, snapshots.path, target.hadoopConf)
      val lost = scala.collection.mutable.Set.empty[HostId]
      def pick(r: StateRoute, gone: HostId): HostId = { lost += gone; Seq(hostA.id, hostB.id).find(h => !lost(h)).get }

      var driver: ClusterStateController = null
      val node = new ClusterNode(
        serverA,
        hostA,
        new ClusterNode.CoordinatorAccess {
          override def route(state: String): StateRoute = driver.route
          override def updateProgress(state: String): Long = driver.updateProgress
          override def ensureReader(state: String, reader: String): Unit = ()
          override def readerProgress(state: String, reader: String): Option[Long] = None
          override def hostUnreachable(state: String, host: HostId): Unit = driver.recover(host)
          override def askDriver[T](request: DriverRequest[T]): T = request.onDriver()
        }
      )
      route.hosts.foreach(h =>
        HostLink.await[Any](node.link(h).ask(Host(spec, 1L, route.partitionsOf(h).toArray, Some(source))), h, spec.name,
          Nil))
      val keeper = new State(spec)
      val rejectedTable = RejectedTable.openOrCreate(dir.resolve("rejected").toString, hadoop)
      val lease =
        new OwnerLease(new org.apache.hadoop.fs.Path(dir.resolve("owner").toString), hadoop, "app-test", "test", 60000)
      assert(lease.acquire(0).isEmpty)
      val start = StateRecovery.replay(keeper, log, None, rejected = None, rebuilds = _ => false)
      val journal = new DeltaJournal(spec.name, log, target, rejectedTable, start.nextSeq, start.version, lease)
      driver =
        new ClusterStateController(keeper, route, node, Some(ClusterStateController.Durable(journal, source, pick)))
      val client = node.client(spec.name)
      val oracle = new State(spec)
      driver.registerWriter("w"); oracle.registerWriter("w")

      val random = new Random(7)
      var maxTime = 0L
      def stageTask(epoch: Long, task: Int): Seq[ChangelogFile] = {
        val batch = new UpdateBatch
        val same = new UpdateBatch
        for (_ <- 0 until 150) {
          val t = epoch * 1000 + random.nextInt(1500) - 400 // out of order, some late
          val k = key(random.nextInt(40))
          val v = value(s"e$epoch-t$t")
          batch.add(k, t, v); same.add(k, t, v)
          maxTime = math.max(maxTime, t)
        }
        if (epoch == 3L || epoch == 5L) { // a null key, at the host of the task's partition
          val nullKey = io.sharedstate.core.RejectedUpdate(null, epoch * 1000, value(s"null-e$epoch-$task"),
            io.sharedstate.core.RejectedUpdate.NullKey, "w", epoch, Long.MinValue)
          batch.reject(nullKey); same.reject(nullKey)
        }
        oracle.stage("w", epoch, task, same)
        val files = target.writeTask("w", epoch, task, batch) // as a write task does, before staging
        client.stage("w", epoch, task, batch)
        files
      }
      def commit(epoch: Long, files: Seq[ChangelogFile]): Unit = {
        val progress = maxTime - 300
        val got = driver.commitEpoch("w", epoch, progress, payload = files)
        val want = oracle.commitEpoch("w", epoch, progress)
        assert(got.updateProgress == want.updateProgress)
      }

      for (epoch <- 0L until 2L) commit(epoch, (0 until 3).flatMap(stageTask(epoch, _)))
      // a cluster snapshot round: each partition encoded by its owner between commits
      val round = new Snapshotter(driver.snapshotSource, log, snapshots, retained = 2).round()
      assert(round.written == 6 && snapshots.ids(0).nonEmpty)

      // C is lost after the tasks staged epoch 2 there: the commit finds it, its partitions are rebuilt
      // from the snapshot and the changelog (which already holds epoch 2) on a live host.
      val files2 = (0 until 3).flatMap(stageTask(2L, _))
      serverC.shutdown()
      commit(2L, files2)
      assert(!driver.owners.contains(hostC.id) && driver.moves.map(_.from) == Seq(hostC.id))

      // B is lost mid-epoch: tasks 0 and 1 staged there, task 2's stage finds it gone (and retries on
      // the new owner); the commit stages the epoch again from the changelog where B's partitions went.
      val f3 = stageTask(3L, 0) ++ stageTask(3L, 1)
      serverB.shutdown()
      val files3 = f3 ++ stageTask(3L, 2)
      assert(driver.owners.forall(_ == hostA.id) && driver.moves.map(_.from) == Seq(hostC.id, hostB.id))
      commit(3L, files3)
      for (epoch <- 4L until 6L) commit(epoch, (0 until 3).flatMap(stageTask(epoch, _)))

      def sameAnswers(c: StateClient): Unit = {
        val requests = for (k <- 0 until 40; t <- Seq(-500L, 100L, 1700L, 2600L, 3999L, 4500L, 10000L))
          yield FetchRequest(new Key(key(k)), t)
        val answers = c.fetch(requests.toIndexedSeq)
        requests.zip(answers).foreach { case (r, a) => assertSame(a, oracle.fetch(r)) }
        assert(answers.count(_.isInstanceOf[FetchAnswer.Found]) > 100 && answers.count(_ == FetchAnswer.NotYet) > 0)
      }
      assert(driver.updateProgress == oracle.updateProgress)
      sameAnswers(client)
      assert(driver.metrics.keys == oracle.metrics.keys)
      // The rejected list of a moved partition holds what the changelog replay after its snapshot
      // rejected: the lost hosts' rejections of epochs 0 and 1 (before the snapshot) are gone with them.
      val moved = (0 until 6).filter(p => p % 3 != 0).toSet
      val forgotten = oracle.rejectedUpdates.count(r => r.epoch <= 1L && moved(new Key(r.key).partition(6)))
      assert(forgotten > 0 && oracle.metrics.updatesRejected > forgotten, "late updates before and after the snapshot")
      assert(driver.metrics.updatesRejected == oracle.metrics.updatesRejected - forgotten)
      assert(driver.rejectedUpdates.size.toLong == oracle.metrics.updatesRejected - forgotten)

      // The rejected table: every update the plain State rejected, once, tagged with its epoch's commit
      // event (journal events: 0 registers the writer, epoch e commits as event e + 1).
      def described(r: io.sharedstate.core.RejectedUpdate): (String, java.lang.Long, String, String, Long) =
        (Option(r.key).map(new String(_, UTF_8)).orNull, r.time, new String(r.value, UTF_8), r.reason, r.epoch)
      val inTable = rejectedTable.readAll()
      assert(oracle.rejectedUpdates.count(_.reason == io.sharedstate.core.RejectedUpdate.NullKey) == 6)
      assert(inTable.map(described).sortBy(_.toString) == oracle.rejectedUpdates.map(described).sortBy(_.toString))
      assert(rejectedTable.lastEvent == 6L && inTable.map(_.epoch) == inTable.map(_.epoch).sorted)

      // A restarted driver: a fresh keeper replays the journal, a fresh host rebuilds every partition,
      // and hands back what it rejected in the events above the one named (as if the table ended there).
      val keeper2 = new State(spec)
      StateRecovery.replay(keeper2, log, None, rejected = None, rebuilds = _ => false)
      assert(keeper2.updateProgress == oracle.updateProgress && keeper2.lastCommittedEpoch("w") == 5L)
      val route2 = StateRoute(spec, 2L, Array.fill(6)(hostA.id))
      val rebuilt =
        hostA.handle(Host(spec, 2L, (0 until 6).toArray, Some(source), rejectedAfter = 4L)).asInstanceOf[Rebuilt]
      assert(rebuilt.rejections.map(_._1).toSet == Set(5L, 6L))
      assert(rebuilt.rejections.map(r => described(r._2)).sortBy(_.toString).toSeq ==
        oracle.rejectedUpdates.filter(_.epoch >= 4L).map(described).sortBy(_.toString))
      sameAnswers(new RoutedStateClient(route2, node))
    } finally { serverA.shutdown(); serverB.shutdown(); serverC.shutdown() }
  }

  test("cluster snapshot rounds: hosts capture at the commit boundary, encode after it, and store only changed keys") {
    val serverA = RpcBridge.newStandaloneServer("dsnap-a", "127.0.0.1", conf)
    val serverB = RpcBridge.newStandaloneServer("dsnap-b", "127.0.0.1", conf)
    try {
      val hostA = new HostService(HostId("1", "127.0.0.1", serverA.port))
      val hostB = new HostService(HostId("2", "127.0.0.1", serverB.port))
      serverA.serve(HostService.Endpoint, hostA, MessageAllowList)
      serverB.serve(HostService.Endpoint, hostB, MessageAllowList)
      val spec = StateSpec("durable_deltas", "k STRING", "v STRING", 4, "replace")
      val route = StateRoute(spec, 1L, Array.tabulate(4)(i => Seq(hostA.id, hostB.id)(i % 2)))
      val dir = Files.createTempDirectory("durable-cluster-deltas-")
      val hadoop = new Configuration()
      val log = DeltaChangelog.openOrCreate(dir.resolve("changelog").toString, hadoop)
      val snapshots = SnapshotTable.openOrCreate(dir.resolve("snapshots").toString, hadoop)
      val target = log.target(spec.partitions)
      val source = PartitionSource(log.path, snapshots.path, target.hadoopConf)
      var driver: ClusterStateController = null
      val node = new ClusterNode(
        serverA,
        hostA,
        new ClusterNode.CoordinatorAccess {
          override def route(state: String): StateRoute = driver.route
          override def updateProgress(state: String): Long = driver.updateProgress
          override def ensureReader(state: String, reader: String): Unit = ()
          override def readerProgress(state: String, reader: String): Option[Long] = None
          override def askDriver[T](request: DriverRequest[T]): T = request.onDriver()
        }
      )
      route.hosts.foreach(h =>
        HostLink.await[Any](node.link(h).ask(Host(spec, 1L, route.partitionsOf(h).toArray, Some(source))), h, spec.name,
          Nil))
      val keeper = new State(spec)
      val lease =
        new OwnerLease(new org.apache.hadoop.fs.Path(dir.resolve("owner").toString), hadoop, "app-test", "test", 60000)
      assert(lease.acquire(0).isEmpty)
      val start = StateRecovery.replay(keeper, log, None, rejected = None, rebuilds = _ => false)
      val journal = new DeltaJournal(spec.name, log, target,
        RejectedTable.openOrCreate(dir.resolve("rejected").toString, hadoop), start.nextSeq, start.version, lease)
      driver = new ClusterStateController(keeper, route, node,
        Some(ClusterStateController.Durable(journal, source, (_, gone) => gone)))
      val client = node.client(spec.name)
      val oracle = new State(spec)
      driver.registerWriter("w"); oracle.registerWriter("w")
      def epoch(e: Long, keys: Seq[Int]): Unit = {
        val batch = new UpdateBatch
        val same = new UpdateBatch
        keys.foreach { k =>
          batch.add(key(k), e * 100 + 1, value(s"e$e-$k")); same.add(key(k), e * 100 + 1, value(s"e$e-$k"))
        }
        oracle.stage("w", e, 0, same)
        val files = target.writeTask("w", e, 0, batch)
        client.stage("w", e, 0, batch)
        driver.commitEpoch("w", e, e * 100 + 50, payload = files); oracle.commitEpoch("w", e, e * 100 + 50)
      }
      val snapshotter = new Snapshotter(driver.snapshotSource, log, snapshots, retained = 10, fullEvery = 8)
      epoch(0L, 0 until 200)
      val full = snapshotter.round()
      assert(full.written == 4 && full.deltas == 0 && full.entries == 200, full)
      epoch(1L, Seq(3, 77, 150))
      val delta = snapshotter.round()
      assert(delta.written == 4 && delta.deltas == 4 && delta.entries == 3, delta)
      epoch(2L, Seq(3, 9))
      assert(snapshotter.round().entries == 2)
      // Hosts encode outside the driver lock: a commit (it takes the driver lock and reaches every host)
      // lands while partition 0's owner is encoding its capture, and the round then completes.
      epoch(3L, Seq(1, 2, 3, 4))
      val landed = new java.util.concurrent.CountDownLatch(1)
      HostSnapshots.beforeEncode = p =>
        if (p == 0 && landed.getCount > 0) {
          new Thread(() => { epoch(4L, Seq(0, 5, 9)); landed.countDown() }).start()
          if (!landed.await(120, java.util.concurrent.TimeUnit.SECONDS))
            throw new AssertionError("a commit waited for a host's snapshot encoding")
        }
      val fourth =
        try snapshotter.round()
        finally HostSnapshots.beforeEncode = _ => ()
      assert(landed.getCount == 0 && fourth.written == 4 && fourth.deltas == 4, fourth)
      // A fresh State rebuilt from the chains (full + three deltas each) and the changelog after them
      // (the commit that landed during the round) answers as the oracle does.
      val fresh = new State(spec)
      StateRecovery.replay(fresh, log, Some(snapshots), rejected = None)
      assert((0 until 4).forall(p => snapshots.latestChain(p).size == 4))
      for (k <- 0 until 200; t <- Seq(50L, 150L, 250L, 350L, 450L, 1000L))
        assertSame(fresh.fetch(FetchRequest(new Key(key(k)), t)), oracle.fetch(FetchRequest(new Key(key(k)), t)))
    } finally { serverA.shutdown(); serverB.shutdown() }
  }

  private def assertSame(a: FetchAnswer, b: FetchAnswer): Unit = (a, b) match {
    case (FetchAnswer.Found(t1, v1), FetchAnswer.Found(t2, v2)) =>
      assert(t1 == t2 && new String(v1, UTF_8) == new String(v2, UTF_8))
    case _ => assert(a == b)
  }
}
