package io.sharedstate.spark.cluster

import java.util.concurrent.ConcurrentHashMap
import org.apache.spark.sharedstate.RpcBridge

/**
 * This JVM's place in a distributed application: the RPC environment it talks through, the host
 * service it runs (if it hosts partitions), how it asks the coordinator, and the routes it knows.
 */
private[sharedstate] final class ClusterNode(server: RpcBridge.Server, val localHost: HostService,
    coordinator: ClusterNode.CoordinatorAccess)
    extends StateAccess {
  private val links = new ConcurrentHashMap[HostId, HostLink]()
  private val routes = new ConcurrentHashMap[String, StateRoute]()

  def link(id: HostId): HostLink =
    if (localHost != null && localHost.id == id) new HostLink.InProcess(localHost)
    else
      links.computeIfAbsent(id, i => new HostLink.Remote(i, () => server.connect(i.host, i.port, HostService.Endpoint)))

  def route(state: String): StateRoute = {
    val known = routes.get(state)
    if (known != null) known
    else {
      val fresh = coordinator.route(state)
      routes.put(state, fresh)
      fresh
    }
  }

  def forget(state: String): Unit = routes.remove(state)

  /** Where the State's partitions are now, asked afresh (no cached route). */
  def currentRoute(state: String): StateRoute = coordinator.route(state)

  def updateProgress(state: String): Long = coordinator.updateProgress(state)

  def ensureReader(state: String, reader: String): Unit = coordinator.ensureReader(state, reader)

  def readerProgress(state: String, reader: String): Option[Long] = coordinator.readerProgress(state, reader)

  /** The client tasks use: routed by the current route, retried while a lost host's partitions move. */
  override def client(state: String): StateClient = new RecoveringStateClient(state, this)

  override def askDriver[T](request: DriverRequest[T]): T = coordinator.askDriver(request)

  override def clusterNode: Option[ClusterNode] = Some(this)

  /** Routed by the route this node knows now. */
  def routed(state: String): RoutedStateClient = new RoutedStateClient(route(state), this)

  /** `host` did not answer a request for `state`: the coordinator checks it (and rebuilds its partitions if it is lost). */
  def hostUnreachable(state: String, host: HostId): Unit = coordinator.hostUnreachable(state, host)

}

private[sharedstate] object ClusterNode {

  /** What a node asks the coordinator: in-process on the driver, over RPC on executors. */
  trait CoordinatorAccess {
    def route(state: String): StateRoute
    def updateProgress(state: String): Long
    def ensureReader(state: String, reader: String): Unit
    def readerProgress(state: String, reader: String): Option[Long]

    /** Returns once `host` answers again or its partitions of a durable State live elsewhere; fails for an in-memory State's lost partitions. */
    def hostUnreachable(state: String, host: HostId): Unit = ()
    def askDriver[T](request: DriverRequest[T]): T
  }
}
