package io.sharedstate.spark.cluster

import Messages._
import org.apache.spark.internal.Logging
import org.apache.spark.sharedstate.RpcBridge

/**
 * An executor's node: a server-mode RPC environment of its own (the executor's SparkEnv one is
 * client-only), carrying Spark's authentication, on which the executor's [[HostService]] answers.
 * Started by [[SharedStatePlugin]] when the executor starts, or at the first State access of a task;
 * never with `spark.authenticate` off unless the user opted in (see [[RpcSecurity]]).
 */
private[sharedstate] object ExecutorNode extends Logging {
  @volatile private var node: ClusterNode = _
  @volatile private var server: RpcBridge.Server = _

  def get: ClusterNode = { val n = node; if (n != null) n else start(RpcBridge.executorHost) }

  def start(host: String): ClusterNode = synchronized {
    if (node == null) {
      ExecutorClasspath.ensurePackages()
      val conf = RpcBridge.env.get.conf
      RpcSecurity.requireAllowed(conf, s"executor ${RpcBridge.executorId}'s host")
      val s = RpcBridge.newServer("sharedstate-host", host, conf)
      val (driverHost, driverPort) = RpcBridge.driverAddress(conf)
      val coordinator = s.connect(driverHost, driverPort, ClusterCoordinator.Endpoint)
      var self: ClusterNode = null
      val service = new HostService(HostId(RpcBridge.executorId, host, s.port), n => self.forget(n))
      s.serve(HostService.Endpoint, service, MessageAllowList)
      self = new ClusterNode(
        s,
        service,
        new ClusterNode.CoordinatorAccess {
          override def route(state: String): StateRoute = HostLink.call[StateRoute](coordinator, GetRoute(state))
          override def updateProgress(state: String): Long = HostLink.call[Long](coordinator, GetUpdateProgress(state))
          override def ensureReader(state: String, reader: String): Unit =
            HostLink.call[Any](coordinator, EnsureReader(state, reader))
          override def readerProgress(state: String, reader: String): Option[Long] =
            HostLink.call[Option[Long]](coordinator, GetReaderProgress(state, reader))
          override def hostUnreachable(state: String, host: HostId): Unit =
            HostLink.call[Any](coordinator, HostUnreachable(state, host))
          override def askDriver[T](request: DriverRequest[T]): T = HostLink.call[T](coordinator, AskDriver(request))
        }
      )
      HostLink.call[Any](coordinator, RegisterHost(service.id))
      logInfo(s"sharedstate host started: ${service.id}")
      server = s
      node = self
    }
    node
  }

  def stop(): Unit = synchronized {
    if (server != null) { server.shutdown(); server = null; node = null }
  }
}
