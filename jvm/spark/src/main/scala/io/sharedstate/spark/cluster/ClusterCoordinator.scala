package io.sharedstate.spark.cluster

import io.sharedstate.spark.config.SharedStateConf

import io.sharedstate.spark.durable.{
  DeltaJournal,
  DurableStates,
  DurableTables,
  PartitionSource,
  ReadOnlyJournal,
  StateRecovery
}

import io.sharedstate.core.{SharedStateException, State, StateSpec}
import Messages._
import java.util.concurrent.{CompletableFuture, ConcurrentHashMap, ConcurrentSkipListMap, Executors}
import java.util.concurrent.atomic.AtomicLong
import scala.util.control.NonFatal
import org.apache.spark.SparkContext
import org.apache.spark.internal.Logging
import org.apache.spark.scheduler.{SparkListener, SparkListenerExecutorRemoved}
import org.apache.spark.sharedstate.RpcBridge
import org.apache.spark.sql.SparkSession
import scala.jdk.CollectionConverters._

/**
 * The driver's registry of States when executors host them: it assigns each new State's partitions round-robin to the executors that
 * registered their host service (through [[SharedStatePlugin]], or lazily at their first State
 * access), keeps routes for tasks, and drives every host through [[ClusterStateController]].
 *
 * Durable States work in a cluster too: the driver journals every step to the Delta changelog before
 * the hosts hear of it, hosts rebuild their partitions from the tables when the State is opened, and
 * when an executor is lost (Spark's executor-removed event, or a host that stops answering) its
 * partitions are rebuilt on a live executor while the others keep serving.
 */
private[sharedstate] final class ClusterCoordinator(sc: SparkContext)
    extends Coordinator with RpcBridge.Handler with Logging {
  override def context: SparkContext = sc
  private val states = new ConcurrentHashMap[String, ClusterStateController]()
  private val hosts = new ConcurrentSkipListMap[String, HostId]()
  private val lostHosts = ConcurrentHashMap.newKeySet[HostId]()
  // Executors being decommissioned: their partitions are handed over, and no partition moves to them.
  private val leaving = ConcurrentHashMap.newKeySet[HostId]()
  private val incarnations = new AtomicLong()
  // Recoveries and the requests that wait for them run here, not on the RPC dispatcher's threads.
  private lazy val recoveries = Executors.newCachedThreadPool { (r: Runnable) =>
    val t = new Thread(r, "sharedstate-recovery"); t.setDaemon(true); t
  }

  // With spark.authenticate off and no opt-in the service does not serve (see RpcSecurity): its
  // endpoints are not set up on the driver's RpcEnv and every State creation or use fails naming the fix.
  private val serving = RpcSecurity.allowed(sc.getConf)
  // Whether live moves pre-copy (docs/elasticity.md); read once, as the application's other settings are.
  private[cluster] val preCopy = SharedStateConf.ElasticityPreCopy.read(sc.getConf)

  /** This driver's node in the cluster: it hosts partitions only when no executor can. */
  private[cluster] lazy val node: ClusterNode = {
    RpcSecurity.requireAllowed(sc.getConf, "driver")
    val server = RpcBridge.sparkEnvServer()
    var self: ClusterNode = null
    val driverHost = new HostService(HostId("driver", server.host, server.port), n => self.forget(n))
    self = new ClusterNode(
      server,
      driverHost,
      new ClusterNode.CoordinatorAccess {
        override def route(state: String): StateRoute = ClusterCoordinator.this.route(state)
        override def updateProgress(state: String): Long = ClusterCoordinator.this.state(state).updateProgress
        override def ensureReader(state: String, reader: String): Unit =
          ClusterCoordinator.this.ensureReader(state, reader)
        override def readerProgress(state: String, reader: String): Option[Long] =
          ClusterCoordinator.this.state(state).readerProgress(reader)
        override def hostUnreachable(state: String, host: HostId): Unit = checkHost(state, host)
        override def askDriver[T](request: DriverRequest[T]): T = request.onDriver()
      }
    )
    server.serve(ClusterCoordinator.Endpoint, this, MessageAllowList)
    server.serve(HostService.Endpoint, driverHost, MessageAllowList)
    if (sc.getConf.getBoolean("spark.decommission.enabled", false)) watchDecommissions()
    sc.addSparkListener(new SparkListener {
      override def onExecutorRemoved(removed: SparkListenerExecutorRemoved): Unit =
        Option(hosts.get(removed.executorId)).foreach { h =>
          recoveries.submit((() => hostLost(h, s"executor removed: ${removed.reason}")): Runnable)
        }
    })
    self
  }
  if (serving) node // now, so that executors starting with the plugin can register

  override def access: StateAccess = node

  private def requireServing(): Unit = if (!serving) throw RpcSecurity.error("driver")

  override def create(spec: StateSpec): StateController = synchronized {
    requireServing()
    val existing = states.get(spec.name)
    if (existing != null) {
      if (existing.spec != spec) throw new SharedStateException(s"State '${spec.name}' already exists with a " +
        s"different definition (${existing.spec}); asked for $spec. Drop it first or use State.get.")
      existing
    } else {
      val owners = hostsForNewState()
      val route =
        StateRoute(spec, incarnations.incrementAndGet(), Array.tabulate(spec.partitions)(i => owners(i % owners.size)))
      val asked =
        route.hosts.map(h => h -> node.link(h).ask(Host(spec, route.incarnation, route.partitionsOf(h).toArray)))
      asked.foreach { case (h, f) => HostLink.await[Any](f, h, spec.name, route.partitionsOf(h)) }
      val state = new ClusterStateController(new State(spec), route, node, preCopy = preCopy)
      states.put(spec.name, state)
      logInfo(s"State ${spec.name}: ${spec.partitions} partition(s) on ${route.hosts.mkString(", ")}")
      state
    }
  }

  /**
   * Creates a durable State under `root`, or reopens it there: the driver's progress keeper replays
   * the journal's events, and each host rebuilds its partitions from the tables (in parallel) before
   * anyone can use the State. The tables must be on a file system every executor sees. `mode`: as
   * owner (`State.create`: waits up to the lease for another owner's to run out), or as
   * [[DurableStates.open]] says for `State.get`; opened read-only, see [[followDurable]].
   */
  override def createDurable(spark: SparkSession, spec: StateSpec, root: String): StateController =
    createDurable(spark, spec, root, null)

  private def createDurable(spark: SparkSession, spec: StateSpec, root: String,
      mode: DurableStates.Mode): ClusterStateController = synchronized {
    requireServing()
    val existing = states.get(spec.name)
    if (existing != null) {
      if (existing.spec != spec) throw new SharedStateException(s"State '${spec.name}' already exists with a " +
        s"different definition (${existing.spec}); asked for $spec. Drop it first or use State.get.")
      if (!existing.isDurable && DurableStates.readOnly(spec.name).isEmpty) throw new SharedStateException(s"State " +
        s"'${spec.name}' already exists in this application without durability; drop it before creating it under $root.")
      if (mode == null || mode.isInstanceOf[DurableStates.Owner]) DurableStates.readOnly(spec.name).foreach(why =>
        throw ReadOnlyJournal.error(spec.name, root, why,
          "it cannot be opened for writing while it is open read-only; drop it here first"))
      existing
    } else {
      val started = System.nanoTime()
      val tables = DurableStates.tables(spark, spec, root, Option(mode).getOrElse(DurableStates.ownerMode(spark)))
      if (tables.readOnly.isDefined) return followDurable(spark, spec, tables)
      val source = PartitionSource.of(tables)
      val keeper = new State(spec)
      val keeperRecovered = StateRecovery.replay(keeper, tables.log, None, rejected = None, rebuilds = _ => false)
      val nextSeq = keeperRecovered.nextSeq
      val owners = hostsForNewState()
      val route =
        StateRoute(spec, incarnations.incrementAndGet(), Array.tabulate(spec.partitions)(i => owners(i % owners.size)))
      // The keeper sees no partition's updates, so the hosts tell what their replay rejected in the events
      // the rejected table lacks (the last application stopped between a changelog and a rejected commit).
      val rejectedThrough = tables.rejected.lastEvent
      val asked = route.hosts.map(h =>
        h -> node.link(h).ask(Host(spec, route.incarnation, route.partitionsOf(h).toArray,
            Some(source), rejectedAfter = rejectedThrough)))
      val missing = asked.flatMap { case (h, f) =>
        HostLink.await[Rebuilt](f, h, spec.name, route.partitionsOf(h)).rejections
      }
        .sortBy(_._1) // stable: per event, host by host
      if (missing.nonEmpty) tables.rejected.append(missing, Some(missing.map(_._1).max))
      val journal = new DeltaJournal(
        spec.name,
        tables.log,
        tables.target,
        tables.rejected,
        nextSeq,
        keeperRecovered.version,
        tables.lease,
        rejectedAtOpen = (rejectedThrough +: missing.map(_._1)).max
      )
      val state =
        new ClusterStateController(keeper, route, node, Some(ClusterStateController.Durable(journal, source, pickHost)),
          preCopy = preCopy)
      DurableStates.attachCluster(spark, spec.name, tables, state.snapshotSource)
      states.put(spec.name, state)
      logInfo(s"State ${spec.name}: durable under $root, ${spec.partitions} partition(s) opened on " +
        s"${route.hosts.mkString(", ")} in ${(System.nanoTime() - started) / 1000000} ms")
      state
    }
  }

  /**
   * Opens the durable State `name` under `root` (None: no tables there) as `State.get` does:
   * `readOnly` Some(true) read-only, Some(false) as owner, None as owner unless another application
   * owns the root (then read-only). A State open here already is returned as it is.
   */
  override def openDurable(spark: SparkSession, name: String, root: String,
      readOnly: Option[Boolean]): Option[StateController] = {
    StateSpec.validateName(name)
    DurableStates.storedSpec(spark, name, root).map(spec =>
      createDurable(spark, spec, root, DurableStates.mode(spark, readOnly)))
  }

  // A read-only durable State in a cluster application: the driver's JVM holds it, following the
  // owner's changelog (as in local mode), and hosts all its partitions; executors' tasks reach it over RPC.
  private def followDurable(spark: SparkSession, spec: StateSpec, tables: DurableTables): ClusterStateController = {
    val started = System.nanoTime()
    val state = DurableStates.followCluster(spark, spec, tables)
    val route = StateRoute(spec, incarnations.incrementAndGet(), Array.fill(spec.partitions)(node.localHost.id))
    node.localHost.hostExisting(route.incarnation, state)
    val driverState = new ClusterStateController(state, route, node, keeperHosted = true)
    states.put(spec.name, driverState)
    logInfo(s"State ${spec.name}: opened read-only under ${tables.root} (${tables.readOnly.get}) on the driver in " +
      s"${(System.nanoTime() - started) / 1000000} ms; it follows the owner's changelog")
    driverState
  }

  /**
   * `host` is gone: every durable State's partitions on it are rebuilt on live hosts (an in-memory
   * State's are lost; requests for them fail naming the host). Runs once per host.
   */
  def hostLost(host: HostId, why: String): Unit = {
    if (lostHosts.add(host)) {
      hosts.remove(host.executorId, host)
      logWarning(s"sharedstate host lost: $host ($why)")
    }
    states.values.asScala.foreach { s =>
      if (s.isDurable) s.recover(host)
      else if (s.owners.contains(host))
        logError(s"State ${s.name}: partition(s) on lost $host are lost (an in-memory " +
          "State is not rebuilt; create it with a root to make it durable)")
    }
  }

  /** Moves `partitions` of State `name` to executor `executor`, live (see ClusterStateController.move). */
  override def move(name: String, partitions: Seq[Int], executor: String): Seq[ClusterStateController.Move] = {
    val s = state(name)
    val target = liveHosts.find(_.executorId == executor).getOrElse(throw new SharedStateException(
        s"State '$name': no live executor '$executor' hosts States here; live executors: " +
          s"${liveHosts.map(_.executorId).mkString(", ")}."))
    s.move(partitions, target, "move")
  }

  override def rebalance(name: String): Seq[ClusterStateController.Move] = rebalance(state(name), "rebalance")

  // Even over the live executors; the driver's partitions (no executor had registered) and those of a
  // decommissioned executor go too. A read-only State stays on the driver.
  private def rebalance(s: ClusterStateController, reason: String): Seq[ClusterStateController.Move] =
    if (!s.movable) Nil
    else {
      val plan = RebalancePlan(s.owners.toIndexedSeq, liveHosts, h => leaving.contains(h) || h == node.localHost.id)
      plan.groupBy(_._2).toSeq.sortBy(_._1.executorId).flatMap { case (target, parts) =>
        s.move(parts.keys.toSeq.sorted, target, reason)
      }
    }

  private def liveHosts: Seq[HostId] =
    hosts.values.asScala.toSeq.filterNot(h => lostHosts.contains(h) || leaving.contains(h))

  // Every State, each on its own (one failing does not keep the others from moving).
  private def rebalanceAll(reason: String): Unit = states.values.asScala.toSeq.sortBy(_.name).foreach { s =>
    try rebalance(s, reason)
    catch { case NonFatal(e) => logWarning(s"State ${s.name}: partitions did not move ($reason)", e) }
  }

  // Spark posts no event when it starts decommissioning an executor (only its removal, too late for an
  // in-memory State), so the scheduler is asked a few times a second; the executor lingers at least a
  // second after the decommission starts, and the hand-over runs in that time.
  private def watchDecommissions(): Unit = {
    val watcher = Executors.newSingleThreadScheduledExecutor { (r: Runnable) =>
      val t = new Thread(r, "sharedstate-decommission-watch"); t.setDaemon(true); t
    }
    watcher.scheduleWithFixedDelay(
      () =>
        try {
          val starting = hosts.values.asScala.toSeq.filter(h =>
            !leaving.contains(h) && !lostHosts.contains(h) && RpcBridge.decommissioning(sc, h.executorId))
          if (starting.nonEmpty) {
            starting.foreach(leaving.add)
            logInfo(s"sharedstate: executor(s) ${starting.map(_.executorId).mkString(", ")} decommissioning; " +
              "handing their partitions over")
            rebalanceAll("decommission")
          }
        } catch { case NonFatal(e) => logWarning("sharedstate: decommission watch failed", e) },
      100,
      100,
      java.util.concurrent.TimeUnit.MILLISECONDS
    )
    sc.addSparkListener(new SparkListener {
      override def onApplicationEnd(end: org.apache.spark.scheduler.SparkListenerApplicationEnd): Unit =
        watcher.shutdownNow()
    })
  }

  // Checks a host a task could not reach: if it answers, the failure was passing; else it is lost.
  private def checkHost(state: String, host: HostId): Boolean = {
    val alive = !lostHosts.contains(host) && HostLink.answers(node.link(host))
    if (!alive) {
      hostLost(host, "it did not answer a task")
      val s = this.state(state)
      if (!s.isDurable) throw new SharedStateException(s"State '$state' partition(s) " +
        s"${s.owners.indices.filter(s.owners(_) == host).mkString(", ")} were hosted by $host, which is lost; an in-memory " +
        "State's partitions are not rebuilt: re-create the State or restart the application (a State with a root is rebuilt).")
    }
    alive
  }

  // The live host with the fewest of the State's partitions (a replacement executor that registered
  // takes them first); the driver if no executor is left.
  private def pickHost(route: StateRoute, lost: HostId): HostId = {
    val live = liveHosts.filterNot(_ == lost)
    if (live.isEmpty) node.localHost.id
    else live.minBy(h => (route.owners.count(_ == h), h.executorId))
  }

  override def state(name: String): ClusterStateController =
    Option(states.get(name)).orElse(openDurable(name, readOnly = None)).getOrElse(throw unknown(name))

  override def stateForRead(name: String): ClusterStateController =
    Option(states.get(name)).orElse(openDurable(name, readOnly = Some(true))).getOrElse(throw unknown(name))

  override def specOf(name: String): StateSpec =
    Option(states.get(name)).map(_.spec).orElse(DurableStates.storedSpec(name)).getOrElse(throw unknown(name))

  // A durable State not opened yet in this application is opened from the session's root.
  private def openDurable(name: String, readOnly: Option[Boolean]): Option[ClusterStateController] =
    DurableStates.sessionRoot.flatMap { case (s, r) =>
      DurableStates.storedSpec(s, name, r).map(spec => createDurable(s, spec, r, DurableStates.mode(s, readOnly)))
    }

  // Where tasks find a State's partitions. A write opens its State on the driver before any task asks,
  // so a State not open yet is asked for by a read (a fetch join, the SQL function): read-only.
  def route(name: String): StateRoute = stateForRead(name).route

  override def names: Seq[String] = states.keySet.asScala.toSeq.sorted

  /** Removes the State everywhere; every host and route cache forgets it. */
  override def drop(name: String): Boolean = synchronized {
    val state = states.remove(name)
    DurableStates.forget(name)
    if (state != null) {
      val everyone = (hosts.values.asScala.toSeq :+ node.localHost.id).distinct
      everyone.map(h => h -> node.link(h).ask(Drop(name))).foreach { case (h, f) =>
        try HostLink.await[Any](f, h, name, Nil)
        catch {
          case e: SharedStateException => logWarning(s"State $name: $h did not confirm the drop: ${e.getMessage}")
        }
      }
      state.close()
    }
    state != null
  }

  override def handle(message: Any): Any = message match {
    case RegisterHost(id) =>
      val joined = hosts.synchronized { val old = hosts.put(id.executorId, id); hosts.notifyAll(); old != id }
      logInfo(s"sharedstate host registered: $id")
      // A host joining a running application takes its share of every State (see RebalancePlan).
      if (joined && !states.isEmpty && SharedStateConf.RebalanceOnExecutorAdded.read(sc.getConf))
        recoveries.submit((() => rebalanceAll("executor added")): Runnable)
      true
    // Both may wait for partitions being rebuilt: answered later, from the recovery pool.
    case GetRoute(name) => CompletableFuture.supplyAsync(() => route(name), recoveries)
    case HostUnreachable(name, host) =>
      CompletableFuture.supplyAsync(() => Boolean.box(checkHost(name, host)), recoveries)
    case GetUpdateProgress(name) => state(name).updateProgress
    case EnsureReader(name, reader) => ensureReader(name, reader); true
    case GetReaderProgress(name, reader) => state(name).readerProgress(reader)
    case AskDriver(request) => request.onDriver()
    case other => throw new SharedStateException(s"sharedstate coordinator: unknown message ${other.getClass.getName}.")
  }

  // With the plugin, executors register as they start: wait (bounded) for the expected number, so a
  // State created right after the session starts is still spread over them. With none, the driver hosts.
  private def hostsForNewState(): IndexedSeq[HostId] = {
    val expected = ClusterCoordinator.expectedHosts(sc)
    val waitMs = SharedStateConf.HostWaitTimeout.read(sc.getConf)
    val deadline = System.currentTimeMillis() + waitMs
    hosts.synchronized {
      while (hosts.size < expected && System.currentTimeMillis() < deadline)
        hosts.wait(math.max(1L, deadline - System.currentTimeMillis()))
    }
    val found = hosts.values.asScala.toIndexedSeq
    if (found.isEmpty) {
      logWarning(s"No executor runs a sharedstate host (set spark.plugins=${Coordinator.PluginClass}, " +
        "as ss.session does): the driver hosts the State and every task reaches it over RPC.")
      IndexedSeq(node.localHost.id)
    } else {
      if (found.size < expected) logWarning(s"Only ${found.size} of $expected executor(s) registered a sharedstate " +
        s"host within ${SharedStateConf.HostWaitTimeout.key}=${waitMs}ms; the State is spread over those.")
      found
    }
  }

  private def unknown(name: String): SharedStateException = {
    val known = names
    new SharedStateException(s"Unknown State '$name'. " +
      (if (known.isEmpty) "No State exists yet: create it with State.create."
       else s"Existing States: ${known.mkString(", ")}."))
  }
}

private[sharedstate] object ClusterCoordinator {
  val Endpoint = "sharedstate-coordinator"

  private val LocalCluster = """local-cluster\[\s*(\d+)\s*,.*""".r

  private[cluster] def expectedHosts(sc: SparkContext): Int = {
    val plugin = sc.getConf.get("spark.plugins", "").split(",").map(_.trim).contains(Coordinator.PluginClass)
    if (!plugin) 0
    else
      SharedStateConf.Executors.read(sc.getConf).orElse(sc.getConf.getOption("spark.executor.instances").map(_.toInt))
        .getOrElse(sc.master match { case LocalCluster(n) => n.toInt; case _ => 1 })
  }
}
