package io.sharedstate.spark.distributed

import io.sharedstate.core.{SharedStateException, State, StateSpec}
import io.sharedstate.spark.SharedStateRuntime
import io.sharedstate.spark.durable.DurableStates
import io.sharedstate.spark.distributed.Messages._
import java.util.concurrent.{ConcurrentHashMap, ConcurrentSkipListMap}
import java.util.concurrent.atomic.AtomicLong
import org.apache.spark.SparkContext
import org.apache.spark.internal.Logging
import org.apache.spark.sharedstate.RpcBridge
import org.apache.spark.sql.SparkSession
import scala.jdk.CollectionConverters._

/**
 * The driver's registry of States: definitions, partition owners and progress. In local mode the
 * driver JVM is the only host, so this is the process's [[SharedStateRuntime.registry]] with no RPC
 * at all. In a cluster it assigns each new State's partitions round-robin to the executors that
 * registered their host service (through [[SharedStatePlugin]], or lazily at their first State
 * access), keeps routes for tasks, and drives every host through [[DriverState]].
 */
final class Coordinator private (val sc: SparkContext, distributed: Boolean) extends RpcBridge.Handler with Logging {
  private val states = new ConcurrentHashMap[String, DriverState]()
  private val routes = new ConcurrentHashMap[String, StateRoute]()
  private val hosts = new ConcurrentSkipListMap[String, HostId]()
  private val incarnations = new AtomicLong()

  /** This driver's node in the cluster (null in local mode): it hosts partitions only when no executor can. */
  private[distributed] val node: ClusterNode = if (!distributed) null else {
    val server = RpcBridge.sparkEnvServer()
    var self: ClusterNode = null
    val driverHost = new HostService(HostId("driver", server.host, server.port), n => self.forget(n))
    self = new ClusterNode(server, driverHost, new ClusterNode.CoordinatorAccess {
      override def route(state: String): StateRoute = Coordinator.this.route(state)
      override def updateProgress(state: String): Long = Coordinator.this.state(state).updateProgress
      override def ensureReader(state: String, reader: String): Unit = Coordinator.this.ensureReader(state, reader)
      override def readerProgress(state: String, reader: String): Option[Long] =
        Coordinator.this.state(state).readerProgress(reader)
      override def plannedTick(key: String): Option[Long] = io.sharedstate.spark.PlannedTicks.onDriver(key)
    })
    server.serve(Coordinator.Endpoint, this)
    server.serve(HostService.Endpoint, driverHost)
    self
  }

  def isDistributed: Boolean = distributed

  /** Creates a State, or returns the existing one if it has exactly this definition. */
  def create(spec: StateSpec): DriverState =
    if (!distributed) new DriverState(SharedStateRuntime.registry.create(spec), None)
    else synchronized {
      val existing = states.get(spec.name)
      if (existing != null) {
        if (existing.spec != spec) throw new SharedStateException(s"State '${spec.name}' already exists with a " +
          s"different definition (${existing.spec}); asked for $spec. Drop it first or use State.get.")
        existing
      } else {
        val owners = hostsForNewState()
        val route = StateRoute(spec, incarnations.incrementAndGet(), Array.tabulate(spec.partitions)(i => owners(i % owners.size)))
        val asked = route.hosts.map(h => h -> node.link(h).ask(Host(spec, route.incarnation, route.partitionsOf(h).toArray)))
        asked.foreach { case (h, f) => HostLink.await[Any](f, h, spec.name, route.partitionsOf(h)) }
        val state = new DriverState(new State(spec), Some((route, node)))
        routes.put(spec.name, route)
        states.put(spec.name, state)
        logInfo(s"State ${spec.name}: ${spec.partitions} partition(s) on ${route.hosts.mkString(", ")}")
        state
      }
    }

  def state(name: String): DriverState =
    if (!distributed) new DriverState(localState(name), None)
    else Option(states.get(name)).getOrElse(throw unknown(name))

  // Local mode: a durable State not opened yet in this application is opened from the root of the
  // session (streaming query threads may have no active session, so the default one is asked too).
  private def localState(name: String): State =
    SharedStateRuntime.registry.find(name).orElse {
      val session = SparkSession.getActiveSession.orElse(SparkSession.getDefaultSession)
      session.flatMap(s => DurableStates.root(s, None).flatMap(r => DurableStates.open(s, name, r)))
    }.getOrElse(SharedStateRuntime.registry.get(name))

  def route(name: String): StateRoute = Option(routes.get(name)).getOrElse(throw unknown(name))

  def names: Seq[String] = if (!distributed) SharedStateRuntime.registry.names else states.keySet.asScala.toSeq.sorted

  /** Removes the State everywhere; every host and route cache forgets it. */
  def drop(name: String): Boolean =
    if (!distributed) { DurableStates.forget(name); SharedStateRuntime.registry.drop(name) }
    else synchronized {
      val state = states.remove(name)
      routes.remove(name)
      if (state != null) {
        val everyone = (hosts.values.asScala.toSeq :+ node.localHost.id).distinct
        everyone.map(h => h -> node.link(h).ask(Drop(name))).foreach { case (h, f) =>
          try HostLink.await[Any](f, h, name, Nil)
          catch { case e: SharedStateException => logWarning(s"State $name: $h did not confirm the drop: ${e.getMessage}") }
        }
        state.close()
      }
      state != null
    }

  /** Registers `reader` on State `name` unless it is registered already. */
  def ensureReader(name: String, reader: String): Unit = {
    val s = state(name)
    s.synchronized { if (s.readerProgress(reader).isEmpty) s.registerReader(reader) }
  }

  /** Executors that host partitions, by executor id. */
  def registeredHosts: Seq[HostId] = hosts.values.asScala.toSeq

  override def handle(message: Any): Any = message match {
    case RegisterHost(id) =>
      hosts.synchronized { hosts.put(id.executorId, id); hosts.notifyAll() }
      logInfo(s"sharedstate host registered: $id")
      true
    case GetRoute(name) => route(name)
    case GetUpdateProgress(name) => state(name).updateProgress
    case EnsureReader(name, reader) => ensureReader(name, reader); true
    case GetReaderProgress(name, reader) => state(name).readerProgress(reader)
    case GetPlannedTick(key) => io.sharedstate.spark.PlannedTicks.onDriver(key)
    case other => throw new SharedStateException(s"sharedstate coordinator: unknown message ${other.getClass.getName}.")
  }

  // With the plugin, executors register as they start: wait (bounded) for the expected number, so a
  // State created right after the session starts is still spread over them. With none, the driver hosts.
  private def hostsForNewState(): IndexedSeq[HostId] = {
    val expected = Coordinator.expectedHosts(sc)
    val waitMs = sc.getConf.getTimeAsMs(Coordinator.HostWaitOption, "60s")
    val deadline = System.currentTimeMillis() + waitMs
    hosts.synchronized {
      while (hosts.size < expected && System.currentTimeMillis() < deadline) hosts.wait(math.max(1L, deadline - System.currentTimeMillis()))
    }
    val found = hosts.values.asScala.toIndexedSeq
    if (found.isEmpty) {
      logWarning(s"No executor runs a sharedstate host (set spark.plugins=${classOf[SharedStatePlugin].getName}, " +
        "as ss.session does): the driver hosts the State and every task reaches it over RPC.")
      IndexedSeq(node.localHost.id)
    } else {
      if (found.size < expected) logWarning(s"Only ${found.size} of $expected executor(s) registered a sharedstate " +
        s"host within ${Coordinator.HostWaitOption}=${waitMs}ms; the State is spread over those.")
      found
    }
  }

  private def unknown(name: String): SharedStateException = {
    val known = names
    new SharedStateException(s"Unknown State '$name'. " +
      (if (known.isEmpty) "No State exists yet: create it with State.create." else s"Existing States: ${known.mkString(", ")}."))
  }
}

object Coordinator {
  val Endpoint = "sharedstate-coordinator"
  /** How many executors a new State waits for (default: spark.executor.instances, or N of local-cluster[N,..]). */
  val ExecutorsOption = "spark.sharedstate.executors"
  /** How long a new State waits for them. */
  val HostWaitOption = "spark.sharedstate.hostWaitTimeout"

  @volatile private var current: Coordinator = _

  /** The coordinator of the running application (local when there is no SparkContext or it is local). */
  def get: Coordinator = {
    val c = current
    if (c != null && c.sc != null && !c.sc.isStopped) c
    else synchronized {
      RpcBridge.activeContext match {
        case Some(sc) => start(sc)
        case None =>
          if (current == null || current.sc != null) current = new Coordinator(null, distributed = false)
          current
      }
    }
  }

  /** Starts the coordinator of `sc` (the driver plugin calls this while the context is being built). */
  def start(sc: SparkContext): Coordinator = synchronized {
    val c = current
    if (c != null && (c.sc eq sc)) c
    else {
      val fresh = new Coordinator(sc, distributed = !sc.isLocal)
      current = fresh
      fresh
    }
  }

  private val LocalCluster = """local-cluster\[\s*(\d+)\s*,.*""".r

  private[distributed] def expectedHosts(sc: SparkContext): Int = {
    val plugin = sc.getConf.get("spark.plugins", "").split(",").map(_.trim).contains(classOf[SharedStatePlugin].getName)
    if (!plugin) 0
    else sc.getConf.getOption(ExecutorsOption).orElse(sc.getConf.getOption("spark.executor.instances")).map(_.toInt)
      .getOrElse(sc.master match { case LocalCluster(n) => n.toInt; case _ => 1 })
  }
}
