package io.sharedstate.spark.cluster

import io.sharedstate.spark.rows.AsOfPairs
import io.sharedstate.spark.cluster.Messages._

import io.sharedstate.core.{FetchAnswer, Key, SharedStateException, State, StateSpec, UpdateBatch}
import io.sharedstate.core.fetch.FetchRequest
import java.nio.charset.StandardCharsets.UTF_8
import org.apache.spark.sharedstate.RpcBridge
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/**
 * Two hosts in one JVM, each behind its own RPC server: host A is "this JVM" (direct calls), host B
 * is reached over RPC. Writes, commits and fetches go through the routed client and the driver's
 * StateController, and every answer is checked against one plain State given the same updates.
 */
class RoutingSuite extends AnyFunSuite with TwoHosts {
  override protected def appId: String = "routing-suite"
  private val spec = StateSpec("routed", "k STRING", "v STRING", 6, "replace")
  private val route = StateRoute(spec, 7L, Array.tabulate(6)(i => if (i % 2 == 0) hostA.id else hostB.id))

  private def node(): ClusterNode = nodeA(RoutingSuite.this.route)

  // The key bytes are opaque to routing and storage, so plain UTF-8 stands in for binary rows here.
  private def key(i: Int): Array[Byte] = s"key-$i".getBytes(UTF_8)
  private def value(s: String): Array[Byte] = s.getBytes(UTF_8)

  test("updates staged per owner, committed at every host, fetched from the owner: answers of one State") {
    val n = node()
    route.hosts.foreach(h =>
      HostLink.await[Any](n.link(h).ask(Host(spec, route.incarnation, route.partitionsOf(h).toArray)), h, spec.name,
        Nil))
    val driver = new ClusterStateController(new State(spec), route, n)
    val oracle = new State(spec)
    val client = new RoutedStateClient(route, n)
    driver.registerWriter("w"); oracle.registerWriter("w")
    val random = new Random(42)
    var maxTime = 0L
    for (epoch <- 0L until 5L) {
      for (task <- 0 until 3) {
        val batch = new UpdateBatch
        val same = new UpdateBatch
        for (_ <- 0 until 200) {
          // out of order: times jitter around the epoch's window, some below the previous U (late)
          val t = epoch * 1000 + random.nextInt(1500) - 400
          val k = key(random.nextInt(50))
          val v = value(s"e$epoch-t$t")
          batch.add(k, t, v); same.add(k, t, v)
          maxTime = math.max(maxTime, t)
        }
        client.stage("w", epoch, task, batch)
        oracle.stage("w", epoch, task, same)
      }
      // a retried task replaces its first attempt at every host
      val retry = new UpdateBatch
      retry.add(key(1), epoch * 1000 + 500, value(s"retry-$epoch"))
      client.stage("w", epoch, 2, retry)
      val retryOracle = new UpdateBatch
      retryOracle.add(key(1), epoch * 1000 + 500, value(s"retry-$epoch"))
      oracle.stage("w", epoch, 2, retryOracle)
      val progress = maxTime - 300
      val got = driver.commitEpoch("w", epoch, progress)
      val want = oracle.commitEpoch("w", epoch, progress)
      assert((got.accepted, got.rejected, got.updateProgress) == (want.accepted, want.rejected, want.updateProgress))
    }
    assert(driver.updateProgress == oracle.updateProgress)
    assert(oracle.metrics.updatesRejected > 0, "the input had late updates")

    val requests = for (k <- 0 until 50; t <- Seq(-500L, 100L, 1700L, 3999L, 10000L))
      yield FetchRequest(new Key(key(k)), t)
    val answers = client.fetch(requests.toIndexedSeq)
    requests.zip(answers).foreach { case (r, a) => assertSame(a, oracle.fetch(r)) }
    assert(answers.count(_ == FetchAnswer.NotYet) > 0 && answers.count(_.isInstanceOf[FetchAnswer.Found]) > 0)

    // each host holds only its own partitions, and both hold data
    val keysA = hostA.handle(GetMetrics(spec.name, route.incarnation)).asInstanceOf[io.sharedstate.core.StateMetrics]
    val keysB = hostB.handle(GetMetrics(spec.name, route.incarnation)).asInstanceOf[io.sharedstate.core.StateMetrics]
    assert(keysA.keys > 0 && keysB.keys > 0)
    assert(keysA.partitionKeys.zipWithIndex.forall { case (c, p) => c == 0 || p % 2 == 0 })
    assert(driver.metrics.keys == oracle.metrics.keys)
    assert(driver.metrics.updatesRejected == oracle.metrics.updatesRejected)
    assert(client.rejectedUpdates.size.toLong == oracle.metrics.updatesRejected)

    // as-of scans of each partition equal the oracle's
    for (p <- 0 until spec.partitions) {
      val pairs = client.asOf(p, 2500L)
      val expected = AsOfPairs.of(oracle.partition(p), 2500L)
      assert(pairs.keys.map(new String(_, UTF_8)).zip(pairs.times).toSet ==
        expected.keys.map(new String(_, UTF_8)).zip(expected.times).toSet)
    }
  }

  test("a misrouted or stale request is refused, naming the State") {
    val n = node()
    route.hosts.foreach(h =>
      HostLink.await[Any](n.link(h).ask(Host(spec, route.incarnation, route.partitionsOf(h).toArray)), h, spec.name,
        Nil))
    val onB = (0 until 100).map(key).find(k => new Key(k).partition(6) % 2 == 1).get
    val misrouted =
      intercept[SharedStateException](hostA.fetch(spec.name, route.incarnation, Array(FetchRequest(new Key(onB), 0L))))
    assert(misrouted.getMessage.contains("'routed' partition") && misrouted.getMessage.contains("misrouted"))
    val stale =
      intercept[SharedStateException](HostLink.await[Any](n.link(hostB.id).ask(Fetch(spec.name, 99L, Array())),
          hostB.id, spec.name, Nil))
    assert(stale.getMessage.contains("State 'routed' is not hosted by executor 2"))
  }

  test("a lost host fails the request, naming the State and its partitions") {
    val serverC = RpcBridge.newStandaloneServer("host-c", "127.0.0.1", conf)
    val hostC = new HostService(HostId("3", "127.0.0.1", serverC.port))
    serverC.serve(HostService.Endpoint, hostC, MessageAllowList)
    val lostSpec = StateSpec("lost", "k STRING", "v STRING", 2, "replace")
    val lostRoute = StateRoute(lostSpec, 1L, Array(hostA.id, hostC.id))
    val n = node()
    lostRoute.hosts.foreach(h =>
      HostLink.await[Any](n.link(h).ask(Host(lostSpec, 1L, lostRoute.partitionsOf(h).toArray)), h, "lost", Nil))
    serverC.shutdown()
    val onC = (0 until 100).map(key).find(k => new Key(k).partition(2) == 1).get
    val e = intercept[SharedStateException](new RoutedStateClient(lostRoute, n).fetch(
        IndexedSeq(FetchRequest(new Key(onC), 0L))))
    assert(e.getMessage.contains("State 'lost' partition(s) 1 are hosted by executor 3"), e.getMessage)
  }

  private def assertSame(a: FetchAnswer, b: FetchAnswer): Unit = (a, b) match {
    case (FetchAnswer.Found(t1, v1), FetchAnswer.Found(t2, v2)) => assert(t1 == t2 && v1.sameElements(v2))
    case _ => assert(a == b)
  }
}
