package io.sharedstate.spark.cluster

import io.sharedstate.core.StateSpec
import org.apache.spark.SparkContext
import org.apache.spark.sharedstate.RpcBridge
import org.apache.spark.sql.SparkSession

/**
 * The driver's registry of States. One implementation per deployment, chosen once per
 * SparkContext: [[LocalCoordinator]] when the driver's JVM is the only host (no SparkContext, or a
 * local master), [[ClusterCoordinator]] when executors host the States' partitions.
 */
private[sharedstate] trait Coordinator {

  /** The SparkContext this coordinator serves (null when there is none). */
  def context: SparkContext

  /** Creates an in-memory State, or returns the existing one if it has exactly this definition. */
  def create(spec: StateSpec): StateController

  /**
   * Creates a durable State under `root`, or reopens (and recovers) it if its tables already exist
   * there. Creating means owning: another application's lease is waited for, then an error.
   */
  def createDurable(spark: SparkSession, spec: StateSpec, root: String): StateController

  /**
   * Opens the durable State `name` under `root` (None: no tables there) as `State.get` does:
   * `readOnly` Some(true) read-only, Some(false) as owner, None as owner unless another application
   * owns the root (then read-only). A State open here already is returned as it is.
   */
  def openDurable(spark: SparkSession, name: String, root: String, readOnly: Option[Boolean]): Option[StateController]

  /** The State called `name`; a durable one not open yet is opened from the session's root; else an error naming the existing ones. */
  def state(name: String): StateController

  /**
   * The State called `name` for a read: as [[state]], but a durable State not open yet is opened
   * read-only (it follows the owner's changelog): a read never takes the root's lease.
   */
  def stateForRead(name: String): StateController

  /** The definition of State `name` without opening it: the open State's, else the one stored under the session's root. */
  def specOf(name: String): StateSpec

  def names: Seq[String]

  /** Removes the State everywhere (its durable tables stay on storage). */
  def drop(name: String): Boolean

  /**
   * Moves `partitions` of State `name` to executor `executor` while it is in use (see
   * ClusterStateController.move); fails in local mode, where the driver's JVM holds every partition.
   */
  def move(name: String, partitions: Seq[Int], executor: String): Seq[ClusterStateController.Move]

  /** Spreads the partitions of State `name` evenly over the live executors (see [[RebalancePlan]]); none moves in local mode. */
  def rebalance(name: String): Seq[ClusterStateController.Move]

  /** Registers `reader` on State `name` unless it is registered already. */
  def ensureReader(name: String, reader: String): Unit = state(name).ensureReader(reader)

  /** What task-side code in the driver's JVM reaches States through. */
  def access: StateAccess
}

private[sharedstate] object Coordinator {

  /** The plugin's class (named here so this package need not see the root package). */
  val PluginClass = "io.sharedstate.spark.SharedStatePlugin"

  @volatile private var current: Coordinator = _

  /** The coordinator of the running application (local when there is no SparkContext or it is local). */
  def get: Coordinator = {
    val c = current
    if (c != null && c.context != null && !c.context.isStopped) c
    else synchronized {
      RpcBridge.activeContext match {
        case Some(sc) => start(sc)
        case None =>
          if (current == null || current.context != null) current = new LocalCoordinator(null)
          current
      }
    }
  }

  /** Starts the coordinator of `sc` (the driver plugin calls this while the context is being built). */
  def start(sc: SparkContext): Coordinator = synchronized {
    val c = current
    if (c != null && (c.context eq sc)) c
    else {
      val fresh = if (sc.isLocal) new LocalCoordinator(sc) else new ClusterCoordinator(sc)
      current = fresh
      fresh
    }
  }
}
