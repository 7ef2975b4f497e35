package io.sharedstate.spark.cluster

import io.sharedstate.core.EventTime
import org.apache.spark.SparkConf
import org.apache.spark.sharedstate.RpcBridge
import org.scalatest.{BeforeAndAfterAll, Suite}

/**
 * Two State hosts in one JVM, each behind its own RPC server: host A is "this JVM" (direct calls),
 * host B is reached over RPC. `appId` names the suite's RPC application.
 */
trait TwoHosts extends BeforeAndAfterAll { this: Suite =>
  protected def appId: String

  protected final lazy val conf =
    new SparkConf(false).set("spark.rpc.askTimeout", "10s").set("spark.app.id", appId)
  protected final lazy val serverA: RpcBridge.Server = RpcBridge.newStandaloneServer(s"$appId-a", "127.0.0.1", conf)
  protected final lazy val serverB: RpcBridge.Server = RpcBridge.newStandaloneServer(s"$appId-b", "127.0.0.1", conf)
  protected final lazy val hostA: HostService = serve(serverA, "1")
  protected final lazy val hostB: HostService = serve(serverB, "2")

  private def serve(server: RpcBridge.Server, id: String): HostService = {
    val host = new HostService(HostId(id, "127.0.0.1", server.port))
    server.serve(HostService.Endpoint, host, MessageAllowList)
    host
  }

  override def beforeAll(): Unit = { super.beforeAll(); hostA; hostB }

  override def afterAll(): Unit =
    try { serverA.shutdown(); serverB.shutdown() }
    finally super.afterAll()

  /** Node A, whose coordinator always routes by `layout` and answers driver requests in place. */
  protected def nodeA(layout: => StateRoute): ClusterNode = new ClusterNode(
    serverA,
    hostA,
    new ClusterNode.CoordinatorAccess {
      override def route(state: String): StateRoute = layout
      override def updateProgress(state: String): Long = EventTime.MinusInfinity
      override def ensureReader(state: String, reader: String): Unit = ()
      override def readerProgress(state: String, reader: String): Option[Long] = None
      override def askDriver[T](request: DriverRequest[T]): T = request.onDriver()
    }
  )
}
