package io.sharedstate.spark.cluster

import io.sharedstate.spark.changes.{
  ChangePosition,
  HostChangeFeeds,
  HostChangeTail,
  HostChangeTailReader,
  HostFeed,
  HostFeedSet
}
import io.sharedstate.spark.rows.{ChangeRows, StateSchemas}
import io.sharedstate.spark.cluster.HostFeedMessages._
import io.sharedstate.spark.cluster.Messages._

import io.sharedstate.core.{Change, State, StateSpec, UpdateBatch}
import java.nio.charset.StandardCharsets.UTF_8
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/**
 * The per-host change feed with two hosts in one JVM (as RoutingSuite: host A is this JVM, host B is
 * reached over RPC): every range a change-stream query reads from each host's subscription is checked,
 * pair for pair and in order, against one plain State given the same randomised out-of-order input
 * (its merged scan of that host's partitions), including subscriptions opened below U (a restart),
 * re-reads of an uncommitted range, and the scan a task falls back to when a subscription is gone.
 */
class HostFeedSuite extends AnyFunSuite with TwoHosts {
  override protected def appId: String = "host-feed-suite"
  private def setup(
      name: String, incarnation: Long): (StateRoute, ClusterNode, StateController, RoutedStateClient, State) = {
    val spec = StateSpec(name, "k STRING", "v STRING", 6, "replace")
    // uneven on purpose: A owns 0, 1, 4 and B owns 2, 3, 5
    val layout = StateRoute(spec, incarnation, Array(hostA.id, hostA.id, hostB.id, hostB.id, hostA.id, hostB.id))
    val route = layout
    val n = nodeA(layout)
    route.hosts.foreach(h =>
      HostLink.await[Any](n.link(h).ask(Host(spec, incarnation, route.partitionsOf(h).toArray)), h, name, Nil))
    val driver = new ClusterStateController(new State(spec), route, n)
    driver.registerWriter("w")
    val oracle = new State(spec)
    oracle.registerWriter("w")
    (route, n, driver, new RoutedStateClient(route, n), oracle)
  }

  // One epoch of out-of-order input (some of it late), staged through the routed client and into the oracle.
  private def epoch(
      random: Random, e: Long, client: RoutedStateClient, driver: StateController, oracle: State): Long = {
    var maxTime = 0L
    for (task <- 0 until 2) {
      val batch = new UpdateBatch
      val same = new UpdateBatch
      for (_ <- 0 until 150) {
        val t = e * 1000 + random.nextInt(1600) - 500
        val k = s"key-${random.nextInt(40)}".getBytes(UTF_8)
        val v = s"e$e-t$t-${random.nextInt(1000)}".getBytes(UTF_8)
        batch.add(k, t, v); same.add(k, t, v)
        maxTime = math.max(maxTime, t)
      }
      client.stage("w", e, task, batch)
      oracle.stage("w", e, task, same)
    }
    val progress = maxTime - 300
    val got = driver.commitEpoch("w", e, progress)
    val want = oracle.commitEpoch("w", e, progress)
    assert(got.updateProgress == want.updateProgress)
    got.updateProgress
  }

  private def show(cs: Array[Change]): Seq[(String, Long, String)] =
    cs.toSeq.map(c => (new String(c.key, UTF_8), c.time, new String(c.value, UTF_8)))

  private def expected(oracle: State, feed: HostFeed, from: Long, until: Long): Seq[(String, Long, String)] =
    show(oracle.mergedChanges(from, until, feed.partitions.toSeq))

  private def read(n: ClusterNode, route: StateRoute, client: RoutedStateClient, f: HostFeed, from: Long, until: Long) =
    show(HostChangeFeeds.read(n, route.name, route.incarnation, f, from, until, client))

  test("each host's subscription gives its partitions' changes of every batch, in merged order, once") {
    val (route, n, driver, client, oracle) = setup("feed", 1L)
    val random = new Random(7)
    val start = driver.updateProgress
    val feeds = HostChangeFeeds.open(n, route, _ => start, () => route).get
    assert(feeds.feeds.map(f => (f.host, f.partitions.toSeq)) == Seq(hostA.id -> Seq(0, 1, 4),
      hostB.id -> Seq(2, 3, 5)))
    assert(feeds.feeds.head.location == "executor_127.0.0.1_1")
    var from = start
    var late: HostFeedSet = null
    var lateFrom = 0L
    val seen = Seq.newBuilder[(String, Long, String)]
    for (e <- 0L until 8L) {
      val until = epoch(random, e, client, driver, oracle)
      for (f <- feeds.feeds) {
        val got = read(n, route, client, f, from, until)
        assert(got == expected(oracle, f, from, until), s"epoch $e, ${f.host}")
        // a re-planned batch (not committed yet) reads the very same changes
        assert(read(n, route, client, f, from, until) == got)
        seen ++= got
      }
      HostChangeFeeds.commit(n, feeds, until)
      if (e == 3L) {
        // a query restarted from its checkpoint: subscriptions opened below U read [from, U) by scan, then the feed
        lateFrom = from
        late = HostChangeFeeds.open(n, route, _ => lateFrom, () => route).get
      }
      from = until
    }
    assert(oracle.metrics.updatesRejected > 0, "the input had late updates")
    val all = seen.result()
    assert(all.sortBy(_.toString) == show(oracle.mergedChanges(start, from)).sortBy(_.toString) && all.size > 500,
      "every pair of every host once")
    for (f <- late.feeds) assert(read(n, route, client, f, lateFrom, from) == expected(oracle, f, lateFrom, from))
    HostChangeFeeds.close(n, late)
    HostChangeFeeds.close(n, feeds)
    val closed = feeds.feeds.head
    intercept[io.sharedstate.core.SharedStateException](hostA.handle(ReadHostFeed(route.name, 1L, closed.subscription,
          from, from)))
  }

  test("a subscription that cannot be read falls back to a scan of the host's partitions: the same changes") {
    val (route, n, driver, client, oracle) = setup("fallback", 2L)
    val random = new Random(11)
    val start = driver.updateProgress
    var until = start
    for (e <- 0L until 3L) until = epoch(random, e, client, driver, oracle)
    val before = HostChangeFeeds.readFallbacks()
    val gone = HostFeed(hostB.id, 424242L, route.partitionsOf(hostB.id).toArray)
    val got = read(n, route, client, gone, start, until)
    assert(got == expected(oracle, gone, start, until) && got.nonEmpty)
    assert(HostChangeFeeds.readFallbacks() == before + 1)
  }

  test("subscriptions are not kept when the layout changes while they open") {
    val (route, n, driver, _, _) = setup("moving", 3L)
    val moved = route.copy(owners = route.owners.map(_ => hostA.id))
    assert(HostChangeFeeds.open(n, route, _ => driver.updateProgress, () => moved).isEmpty)
    assert(!HostChangeFeeds.sameLayout(route, moved) && HostChangeFeeds.sameLayout(route, route.copy()))
    // what it opened was closed again: a subscription opened now is the host's only one
    val fresh = HostChangeFeeds.open(n, route, _ => driver.updateProgress, () => route).get
    fresh.feeds.foreach(f => assert(f.subscription == 1L, "ids count per feed: the closed one's feed was dropped"))
    HostChangeFeeds.close(n, fresh)
  }

  test("a continuous host reader restarted from its position emits the rest of its host's sequence, once") {
    val (route, n, driver, client, oracle) = setup("tail", 4L)
    val random = new Random(5)
    val rows = new ChangeRows(StateSchemas.of(route.spec))
    val start = driver.updateProgress
    for (e <- 0L until 3L) epoch(random, e, client, driver, oracle)
    val more = Iterator.from(3).map(_.toLong)
    // host A is read in-process (waits on its feed), host B over RPC (polls)
    for (h <- route.hosts) {
      val group = route.partitionsOf(h)
      val u1 = driver.updateProgress
      def times(from: Long, until: Long): Seq[Long] = oracle.mergedChanges(from, until, group).toSeq.map(_.time)
      def tail(set: HostFeedSet, at: ChangePosition) =
        HostChangeTail(route.name, route.incarnation, set.feedOf(h).get, at, 50L, 5L)
      def take(reader: HostChangeTailReader, count: Int): Seq[Long] =
        (0 until count).map { _ => assert(reader.next()); reader.get().getLong(2) }

      val first = HostChangeFeeds.open(n, route, _ => start, () => route).get
      val firstReader =
        new HostChangeTailReader(tail(first, ChangePosition(group.min, start, start, 0, group)), rows, n)
      val firstRange = times(start, u1)
      assert(firstRange.size > 20)
      val emitted = take(firstReader, firstRange.size / 2)
      val at = firstReader.getOffset.asInstanceOf[ChangePosition]
      assert(at == ChangePosition(group.min, start, u1, firstRange.size / 2, group))
      assert(ChangePosition.parse(at.json) == at)
      HostChangeFeeds.close(n, first) // the query stops mid-range
      val u2 = epoch(random, more.next(), client, driver, oracle)

      val second = HostChangeFeeds.open(n, route, _ => at.from, () => route).get
      val secondReader = new HostChangeTailReader(tail(second, at), rows, n)
      val rest = take(secondReader, firstRange.size - at.index + times(u1, u2).size)
      assert(emitted ++ rest == times(start, u2), s"$h")
      assert(secondReader.getOffset == ChangePosition(group.min, u1, u2, times(u1, u2).size, group))
      HostChangeFeeds.close(n, second)
    }
  }
}
