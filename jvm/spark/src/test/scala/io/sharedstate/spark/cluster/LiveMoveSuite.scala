package io.sharedstate.spark.cluster

import io.sharedstate.spark.changes.{ChangePosition, HostChangeFeeds, HostChangeTail, HostChangeTailReader, HostFeed}
import io.sharedstate.spark.rows.{ChangeRows, StateSchemas}
import io.sharedstate.spark.cluster.Messages._

import io.sharedstate.core.{FetchAnswer, Key, State, StateSpec, UpdateBatch}
import io.sharedstate.core.fetch.FetchRequest
import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.TimeUnit
import org.apache.spark.sharedstate.RpcBridge
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/**
 * Live moves between three hosts in one JVM (A in-process, B and C over RPC): partitions move while
 * an epoch is staged but not committed, to a host that already holds some of the State and to one
 * new to it; a request split by the old route is answered "moved" and sent again; an asynchronous
 * fetch waiting at the old owner follows its partition. Every answer equals one plain State given the
 * same updates (the oracle), and the keys are counted once.
 */
class LiveMoveSuite extends AnyFunSuite with TwoHosts {
  override protected def appId: String = "live-move-suite"
  private lazy val serverC = RpcBridge.newStandaloneServer(s"$appId-c", "127.0.0.1", conf)
  private lazy val hostC = {
    val h = new HostService(HostId("3", "127.0.0.1", serverC.port))
    serverC.serve(HostService.Endpoint, h, MessageAllowList)
    h
  }
  override def afterAll(): Unit =
    try serverC.shutdown()
    finally super.afterAll()

  private def key(i: Int): Array[Byte] = s"key-$i".getBytes(UTF_8)
  private def value(s: String): Array[Byte] = s.getBytes(UTF_8)

  private def setUp(name: String, preCopy: Boolean = true): (ClusterStateController, ClusterNode, StateSpec) = {
    val spec = StateSpec(name.replace("-", "_"), "k STRING", "v STRING", 6, "replace")
    val route = StateRoute(spec, 11L, Array.tabulate(6)(i => if (i % 2 == 0) hostA.id else hostB.id))
    var driver: ClusterStateController = null
    val n = nodeA(driver.route)
    route.hosts.foreach(h =>
      HostLink.await[Any](n.link(h).ask(Host(spec, route.incarnation, route.partitionsOf(h).toArray)), h, spec.name,
        Nil))
    driver = new ClusterStateController(new State(spec), route, n, preCopy = preCopy)
    (driver, n, spec)
  }

  private def stageEpoch(client: StateClient, oracle: State, epoch: Long, random: Random): Long = {
    var maxTime = 0L
    for (task <- 0 until 3) {
      val (batch, same) = (new UpdateBatch, new UpdateBatch)
      for (_ <- 0 until 150) {
        val t = epoch * 1000 + random.nextInt(1400) - 300
        val (k, v) = (key(random.nextInt(60)), value(s"e$epoch-t$t"))
        batch.add(k, t, v); same.add(k, t, v)
        maxTime = math.max(maxTime, t)
      }
      client.stage("w", epoch, task, batch)
      oracle.stage("w", epoch, task, same)
    }
    maxTime
  }

  private def assertAnswers(client: StateClient, oracle: State): Unit = {
    val requests = for (k <- 0 until 60; t <- Seq(-400L, 150L, 1700L, 2999L, 4500L, 9000L))
      yield FetchRequest(new Key(key(k)), t)
    val answers = client.fetch(requests.toIndexedSeq)
    requests.zip(answers).foreach { case (r, a) => assertSame(a, oracle.fetch(r)) }
    assert(answers.count(_.isInstanceOf[FetchAnswer.Found]) > 0)
  }

  test("partitions move between epochs and mid-epoch, to a host of the State and to a new one: answers of one State") {
    hostC
    val (driver, n, spec) = setUp("moving")
    val oracle = new State(spec)
    val client = new RecoveringStateClient(spec.name, n)
    driver.registerWriter("w"); oracle.registerWriter("w")
    val random = new Random(7)
    for (epoch <- 0L until 6L) {
      val maxTime = stageEpoch(client, oracle, epoch, random)
      // staged, not committed: the moved partitions' share of the tasks' batches moves with them
      epoch match {
        case 1L => assert(driver.move(Seq(0, 2), hostB.id, "move").map(_.partitions) == Seq(Seq(0, 2)))
        case 2L =>
          driver.move(Seq(1, 4), hostC.id, "move") // C is new to the State: it starts from the keeper's progress
        case 4L => driver.move(Seq(0, 1, 2, 3, 4, 5), hostA.id, "move")
        case _ => ()
      }
      val progress = maxTime - 300
      val got = driver.commitEpoch("w", epoch, progress)
      val want = oracle.commitEpoch("w", epoch, progress)
      assert((got.accepted, got.rejected, got.updateProgress) == (want.accepted, want.rejected, want.updateProgress))
      assertAnswers(client, oracle)
    }
    assert(driver.owners.forall(_ == hostA.id) && driver.route.version == 5)
    assert(driver.moves.map(m => (m.partitions, m.from.executorId, m.to.executorId)) == Seq(
      (Seq(0, 2), "1", "2"), (Seq(4), "1", "3"), (Seq(1), "2", "3"), (Seq(0, 2, 3, 5), "2", "1"),
      (Seq(1, 4), "3", "1")))
    assert(driver.moves.forall(m => m.millis >= 0 && m.reason == "move"))
    // each key counted once: the old owners forgot what they handed over
    assert(driver.metrics.keys == oracle.metrics.keys)
    assert(driver.metrics.updatesRejected == oracle.metrics.updatesRejected)
  }

  test("moves with and without a pre-copy while a writer commits and fetches run: the data of a State never moved") {
    hostC
    for (preCopy <- Seq(true, false)) {
      val (driver, n, spec) = setUp(s"concurrent-$preCopy")
      val oracle = new State(spec)
      val client = new RecoveringStateClient(spec.name, n)
      driver.registerWriter("w"); oracle.registerWriter("w")
      val random = new Random(21)
      // the oracle commits first: whatever U the driver reports, the oracle has applied as much
      def commit(epoch: Long): Unit = {
        val progress = stageEpoch(client, oracle, epoch, random) - 300
        oracle.commitEpoch("w", epoch, progress); driver.commitEpoch("w", epoch, progress)
      }
      (0L until 3L).foreach(commit)
      val stop = new java.util.concurrent.atomic.AtomicBoolean(false)
      val failures = new java.util.concurrent.ConcurrentLinkedQueue[Throwable]()
      val (epochs, fetchRounds) =
        (new java.util.concurrent.atomic.AtomicLong(3), new java.util.concurrent.atomic.AtomicLong)
      def running(body: => Unit): Thread = {
        val t = new Thread(() =>
          try while (!stop.get()) body
          catch { case e: Throwable => failures.add(e) })
        t.start(); t
      }
      val writer = running { commit(epochs.getAndIncrement()) }
      val fetcher = running {
        // final answers only (below U): each request answered once, as the State that never moved answers it
        val at = driver.updateProgress - 1 - random.nextInt(800)
        val requests = (0 until 60).map(k => FetchRequest(new Key(key(k)), at))
        val answers = client.fetch(requests)
        assert(answers.size == requests.size)
        requests.zip(answers).foreach { case (r, a) => assertSame(a, oracle.fetch(r)) }
        fetchRounds.incrementAndGet()
      }
      Thread.sleep(200)
      driver.move(Seq(0, 2), hostB.id, "move", preCopy)
      Thread.sleep(200)
      driver.move(Seq(1, 4), hostC.id, "move", preCopy) // C is new to the State
      Thread.sleep(200)
      driver.move(0 until 6, hostA.id, "move", preCopy)
      Thread.sleep(200)
      stop.set(true); writer.join(); fetcher.join()
      failures.forEach(e => throw e)
      assert(epochs.get > 6 && fetchRounds.get > 3, s"the writer and the fetches ran during the moves ($preCopy)")
      // every partition, where it is now, holds what the oracle holds: nothing lost, nothing applied twice
      for (p <- 0 until 6) {
        val owner = driver.route.owners(p)
        val bytes = HostLink.await[Array[Byte]](n.link(owner).ask(EncodePartition(spec.name, driver.incarnation, p)),
          owner, spec.name, Seq(p))
        def show(s: io.sharedstate.core.codec.PartitionSnapshot) =
          (s.entries.map { case (k, v) =>
              (new String(k.bytes, UTF_8), (0 until v.size).map(i => (v.timeAt(i), new String(v.valueAt(i), UTF_8))))
            }.sortBy(_._1), s.staged.map { case (k, t, v) => (new String(k.bytes, UTF_8), t, new String(v, UTF_8)) })
        val want = io.sharedstate.core.codec.SnapshotCodec.decode(oracle.snapshotPartition(p))
        assert(show(io.sharedstate.core.codec.SnapshotCodec.decode(bytes)) == show(want), s"partition $p ($preCopy)")
      }
      assert(driver.metrics.keys == oracle.metrics.keys)
    }
  }

  test("spark.sharedstate.elasticity.preCopy switches the pre-copy of moves, rebalances and hand-overs") {
    hostC
    for (preCopy <- Seq(true, false)) {
      val conf = new org.apache.spark.SparkConf(false)
        .set(io.sharedstate.spark.config.SharedStateConf.ElasticityPreCopy.key, preCopy.toString)
      val (driver, n, spec) =
        setUp(s"switched-$preCopy", io.sharedstate.spark.config.SharedStateConf.ElasticityPreCopy.read(conf))
      val oracle = new State(spec)
      driver.registerWriter("w"); oracle.registerWriter("w")
      val client = new RecoveringStateClient(spec.name, n)
      val random = new Random(5)
      for (epoch <- 0L until 4L) {
        val progress = stageEpoch(client, oracle, epoch, random) - 300
        oracle.commitEpoch("w", epoch, progress); driver.commitEpoch("w", epoch, progress)
        driver.move(Seq(epoch.toInt), if (epoch % 2 == 0) hostC.id else hostA.id, "rebalance")
      }
      assert(driver.moves.size == 4 && driver.moves.forall(_.preCopied == preCopy), driver.moves)
      // commits waited for the fence, and with a pre-copy for its last round too
      assert(driver.moves.forall(m => m.heldMillis >= m.millis))
      assertAnswers(client, oracle)
      assert(driver.metrics.keys == oracle.metrics.keys)
    }
    val e = intercept[io.sharedstate.core.SharedStateException](
      io.sharedstate.spark.config.SharedStateConf.ElasticityPreCopy.fromText("sometimes"))
    assert(e.getMessage.contains("spark.sharedstate.elasticity.preCopy") && e.getMessage.contains("true or false"))
  }

  test("a stage split by the route before a move is answered 'moved' and sent again on the new route") {
    val (driver, n, spec) = setUp("stale-stage")
    val oracle = new State(spec)
    driver.registerWriter("w"); oracle.registerWriter("w")
    val before = driver.route
    val random = new Random(3)
    stageEpoch(new RecoveringStateClient(spec.name, n), oracle, 0L, random)
    driver.move(Seq(0), hostB.id, "move")
    // a retried task split by the old route: B (part of the move) refuses it, A refuses partition 0's share
    val retry = new UpdateBatch
    (0 until 60).foreach(i => retry.add(key(i), 500L, value(s"retry-$i")))
    val moved = intercept[PartitionMovedException](new RoutedStateClient(before, n).stage("w", 0L, 1, retry))
    assert(moved.getMessage.contains("sent again on the new route"))
    val same = new UpdateBatch
    (0 until 60).foreach(i => same.add(key(i), 500L, value(s"retry-$i")))
    new RecoveringStateClient(spec.name, n).stage("w", 0L, 1, retry)
    oracle.stage("w", 0L, 1, same)
    driver.commitEpoch("w", 0L, 2000L); oracle.commitEpoch("w", 0L, 2000L)
    assertAnswers(new RecoveringStateClient(spec.name, n), oracle)
    assert(driver.metrics.keys == oracle.metrics.keys)
  }

  test("an asynchronous fetch waiting at the old owner follows its partition and is answered once") {
    val (driver, n, spec) = setUp("waiting-fetch")
    val oracle = new State(spec)
    driver.registerWriter("w"); oracle.registerWriter("w")
    val random = new Random(5)
    val maxTime = stageEpoch(new RecoveringStateClient(spec.name, n), oracle, 0L, random)
    val onB = (0 until 60).find(i => new Key(key(i)).partition(6) % 2 == 1).get
    val request = FetchRequest(new Key(key(onB)), 500L) // answered once U passes 500
    val waiting = new RecoveringStateClient(spec.name, n).fetchAsync(request)
    Thread.sleep(100)
    assert(!waiting.isDone)
    driver.move(Seq(new Key(key(onB)).partition(6)), hostC.id, "move")
    driver.commitEpoch("w", 0L, maxTime); oracle.commitEpoch("w", 0L, maxTime)
    assertSame(waiting.get(10, TimeUnit.SECONDS), oracle.fetch(request))
  }

  test("a partition that moves away and back between two reads of the change feeds: each of its pairs once") {
    // Both hosts keep other partitions, so their subscriptions stay open through the moves: the pairs
    // partition 0 got at B never went through A's feed, and B's feed has them though B's subscription
    // does not cover partition 0. The owners end as they began (the planner must still see the moves).
    val (driver, n, spec) = setUp("round-trip-feed")
    val oracle = new State(spec)
    val client = new RecoveringStateClient(spec.name, n)
    driver.registerWriter("w"); oracle.registerWriter("w")
    val random = new Random(13)
    def commit(epoch: Long): Long = {
      val progress = stageEpoch(client, oracle, epoch, random) - 300
      val got = driver.commitEpoch("w", epoch, progress)
      assert(got.updateProgress == oracle.commitEpoch("w", epoch, progress).updateProgress)
      got.updateProgress
    }
    def show(cs: Array[io.sharedstate.core.Change]): Seq[(String, Long, String)] =
      cs.toSeq.map(c => (new String(c.key, UTF_8), c.time, new String(c.value, UTF_8)))
    val start = driver.updateProgress
    val feeds = HostChangeFeeds.open(n, driver.route, _ => start, () => driver.route).get
    def read(f: HostFeed, from: Long, until: Long) =
      show(HostChangeFeeds.read(n, spec.name, driver.route.incarnation, f, from, until, client))
    val u0 = commit(0L)
    for (f <- feeds.feeds) assert(read(f, start, u0) == show(oracle.mergedChanges(start, u0, f.partitions.toSeq)))
    HostChangeFeeds.commit(n, feeds, u0)
    // between this read and the next: partition 0 goes to B, an epoch is applied there, and it comes back
    driver.move(Seq(0), hostB.id, "move")
    val u1 = commit(1L)
    assert(oracle.changes(0, u0, u1).nonEmpty, "partition 0 got pairs while it was on B")
    driver.move(Seq(0), hostA.id, "move")
    val u2 = commit(2L)
    assert(driver.route.owners.sameElements(feeds.route.owners))
    // a batch planned before the moves, read after them, gets every pair from the kept subscriptions
    for (f <- feeds.feeds) {
      assert(read(f, u0, u2) == show(oracle.mergedChanges(u0, u2, f.partitions.toSeq)), s"${f.host}")
    }
    // and the planner sees the moves although the owners are as they were: the next batch is read by scan
    assert(!HostChangeFeeds.sameLayout(feeds.route, driver.route))
    HostChangeFeeds.close(n, feeds)
  }

  test("a continuous host reader whose host gives all its partitions away goes on with them, each pair once") {
    val (driver, n, spec) = setUp("continuous-away")
    val oracle = new State(spec)
    val client = new RecoveringStateClient(spec.name, n)
    driver.registerWriter("w"); oracle.registerWriter("w")
    val random = new Random(17)
    def commit(epoch: Long): Long = {
      val progress = stageEpoch(client, oracle, epoch, random) - 300
      oracle.commitEpoch("w", epoch, progress); driver.commitEpoch("w", epoch, progress).updateProgress
    }
    val start = driver.updateProgress
    val feeds = HostChangeFeeds.open(n, driver.route, _ => start, () => driver.route).get
    val group = driver.route.partitionsOf(hostA.id) // A is this JVM: its reader waits on its feed
    val reader = new HostChangeTailReader(
      HostChangeTail(spec.name, driver.incarnation, feeds.feedOf(hostA.id).get,
        ChangePosition(group.min, start, start, 0, group), 50L, 5L),
      new ChangeRows(StateSchemas.of(spec)),
      n
    )
    val u0 = commit(0L)
    def take(count: Int): Seq[Long] = {
      val taking = java.util.concurrent.Executors.newSingleThreadExecutor()
      try taking.submit(() =>
          (0 until count).map { _ =>
            assert(reader.next()); reader.get().getLong(2)
          }).get(60, TimeUnit.SECONDS)
      finally taking.shutdownNow()
    }
    def want(from: Long, until: Long) =
      oracle.mergedChanges(from, until, group).toSeq.map(_.time)
    val before = take(want(start, u0).size)
    assert(before == want(start, u0))
    driver.move(group, hostB.id, "move") // A holds none of the State now: its feed stops
    val u2 = (1L to 2L).map(commit).last
    assert(take(want(u0, u2).size) == want(u0, u2), "the pairs after the move, from where the partitions are now")
    HostChangeFeeds.close(n, feeds)
  }

  test("a rebalance plan spreads partitions evenly with the fewest moves, leaving hosts emptied, lost ones kept") {
    val (a, b, c, d) = (hostA.id, hostB.id, HostId("3", "h", 3), HostId("4", "h", 4))
    val owners = IndexedSeq(a, a, a, a, b, b, a, b)
    val plan = RebalancePlan(owners, Seq(a, b, c), _ => false)
    val after = owners.indices.map(p => plan.getOrElse(p, owners(p)))
    val counts = Seq(a, b, c).map(h => after.count(_ == h))
    assert(counts.max - counts.min <= 1 && plan.size == 2 && plan.values.forall(_ == c))
    assert(RebalancePlan(after, Seq(a, b, c), _ => false).isEmpty) // balanced: nothing moves
    // c leaves (decommission): its partitions go; d is lost: its partition stays where it is
    val leavingPlan = RebalancePlan(after.updated(7, d), Seq(a, b), _ == c)
    assert(leavingPlan.keySet == after.indices.filter(after(_) == c).toSet)
    assert(!leavingPlan.contains(7))
  }

  private def assertSame(a: FetchAnswer, b: FetchAnswer): Unit = (a, b) match {
    case (FetchAnswer.Found(t1, v1), FetchAnswer.Found(t2, v2)) => assert(t1 == t2 && v1.sameElements(v2))
    case _ => assert(a == b)
  }
}
