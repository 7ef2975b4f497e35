package io.sharedstate.spark.cluster

import io.sharedstate.core.{State, StateRegistry, StateSpec}
import io.sharedstate.spark.durable.DurableStates
import org.apache.spark.SparkContext
import org.apache.spark.sql.SparkSession

/**
 * Local mode (the embedded default): the driver's JVM is the only host, so the coordinator and
 * every task use the process's registry of States directly, with no RPC.
 */
private[sharedstate] final class LocalCoordinator(val context: SparkContext) extends Coordinator {
  import LocalCoordinator.registry

  override def create(spec: StateSpec): StateController = new LocalStateController(registry.create(spec))

  override def createDurable(spark: SparkSession, spec: StateSpec, root: String): StateController =
    new LocalStateController(DurableStates.create(spark, spec, root, registry))

  override def openDurable(spark: SparkSession, name: String, root: String,
      readOnly: Option[Boolean]): Option[StateController] =
    DurableStates.open(spark, name, root, registry, readOnly).map(new LocalStateController(_))

  override def state(name: String): StateController = new LocalStateController(find(name, readOnly = None))

  override def stateForRead(name: String): StateController = new LocalStateController(find(name, readOnly = Some(true)))

  override def specOf(name: String): StateSpec =
    registry.find(name).map(_.spec).orElse(DurableStates.storedSpec(name)).getOrElse(registry.get(name).spec)

  override def names: Seq[String] = registry.names

  override def move(name: String, partitions: Seq[Int], executor: String): Seq[ClusterStateController.Move] = {
    find(name, readOnly = None)
    throw new io.sharedstate.core.SharedStateException(s"State '$name' lives in the driver's JVM (master " +
      s"${Option(context).map(_.master).getOrElse("none")}): its partitions move between executors only in a cluster " +
      "(local-cluster, standalone, YARN, Kubernetes).")
  }

  override def rebalance(name: String): Seq[ClusterStateController.Move] = { find(name, readOnly = None); Nil }

  override def drop(name: String): Boolean = { DurableStates.forget(name); registry.drop(name) }

  override val access: StateAccess = new StateAccess {
    override def client(state: String): StateClient = new LocalStateClient(registry.get(state))
    override def askDriver[T](request: DriverRequest[T]): T = request.onDriver()
    override def clusterNode: Option[ClusterNode] = None
  }

  // A durable State not opened yet in this application is opened from the root of the session.
  private def find(name: String, readOnly: Option[Boolean]): State =
    registry.find(name).orElse(DurableStates.sessionRoot.flatMap { case (s, r) =>
      DurableStates.open(s, name, r, registry, readOnly)
    }).getOrElse(registry.get(name))
}

private[sharedstate] object LocalCoordinator {

  /** The States of this process in local mode; it outlives SparkContexts, as the States do. */
  val registry: StateRegistry = new StateRegistry
}
