package io.sharedstate.spark.durable

import io.sharedstate.spark.config.SharedStateConf
import io.sharedstate.spark.rows.StoredPairs

import io.sharedstate.core.{RejectedUpdate, SharedStateException, State, StateRegistry, StateSpec}
import java.util.concurrent.{ConcurrentHashMap, Executors, ScheduledExecutorService, TimeUnit}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.internal.Logging
import org.apache.spark.scheduler.{SparkListener, SparkListenerApplicationEnd}
import org.apache.spark.sql.SparkSession
import scala.util.control.NonFatal

/**
 * The durable States of this application: each keeps its Delta tables under a root directory
 * (`spark.sharedstate.root`, or a root given at creation), `<root>/<state>/changelog` and
 * `<root>/<state>/metadata`. Creating a State whose tables exist reopens it: its definition must
 * match, and its partitions are rebuilt from the changelog before anyone can use it. A State whose
 * metadata exists but a table of which is missing is not opened (see [[StateIntegrity]]).
 */
private[sharedstate] object DurableStates extends Logging {

  /**
   * A durable State of this application. `readOnly`: why it is read-only (then it has a follower and
   * no snapshotter), or None when this application owns the root (then it holds the lease).
   */
  private final case class Durable(root: String, log: DeltaChangelog, snapshots: SnapshotTable, target: ChangelogTarget,
      rejected: RejectedTable,
      snapshotter: Option[Snapshotter], schedule: Option[ScheduledExecutorService], lease: OwnerLease,
      readOnly: Option[String], follower: Option[StateFollower]) {
    def stop(): Unit = {
      schedule.foreach(_.shutdownNow())
      follower.foreach(_.stop())
      lease.release()
    }
  }
  private val open = new ConcurrentHashMap[String, Durable]()
  @volatile private var listening: Option[org.apache.spark.SparkContext] = None

  /** The root for a State: `explicit` when given, else the session's `spark.sharedstate.root`, else none (in memory). */
  def root(spark: SparkSession, explicit: Option[String]): Option[String] =
    explicit.map(_.trim).filter(_.nonEmpty).orElse(SharedStateConf.Root.read(spark))

  /**
   * The session a State not open yet is looked for from, with its root: the active session, else the
   * default one (streaming query threads may have no active session). None without a root.
   */
  def sessionRoot: Option[(SparkSession, String)] =
    SparkSession.getActiveSession.orElse(SparkSession.getDefaultSession).flatMap(s => root(s, None).map(s -> _))

  /** The definition stored for State `name` under the session's root, if its tables exist there. */
  def storedSpec(name: String): Option[StateSpec] = sessionRoot.flatMap { case (s, r) => storedSpec(s, name, r) }

  /**
   * What write tasks of `state` need to log their updates, when the State is durable. A write to a
   * read-only State fails here, before any task runs.
   */
  def target(state: String): Option[ChangelogTarget] = Option(open.get(state)).map { d =>
    d.readOnly.foreach(why => throw ReadOnlyJournal.error(state, d.root, why, "it cannot be written"))
    d.target
  }

  /** Why the durable State `state` is read-only in this application, if it is. */
  def readOnly(state: String): Option[String] = Option(open.get(state)).flatMap(_.readOnly)

  /**
   * A read-only State catches up with the changelog's latest Delta version (a read on it is at least
   * as new as the table when the read started); no-op for other States. Returns the version it is at.
   */
  def catchUp(state: String): Option[Long] = Option(open.get(state)).flatMap(_.follower).map(_.catchUp())

  /**
   * Per partition, the durable State `state` as of `time` rebuilt from its Delta tables (see
   * [[TimeTravel]]) when `time` is below `horizon`, min(F, U), under which compaction may have dropped
   * versions in memory; None when memory answers (not durable, no compaction, or `time` not below it).
   */
  def asOfFromTables(spark: SparkSession, spec: StateSpec, time: Long, horizon: Long): Option[IndexedSeq[StoredPairs]] =
    Option(open.get(spec.name)).flatMap { d =>
      if (time >= horizon || spec.compaction.trim.equalsIgnoreCase("none")) None
      else Some(TimeTravel.asOf(spark, spec, d.log, d.snapshots, time))
    }

  /** Every update the durable State `state` rejected, from its rejected table (None: not durable). */
  def rejected(state: String): Option[Seq[RejectedUpdate]] = Option(open.get(state)).map { d =>
    d.follower.foreach(_.catchUp())
    d.rejected.readAll()
  }

  /** The root a durable State lives under. */
  def rootOf(state: String): Option[String] = Option(open.get(state)).map(_.root)

  /** The session's Hadoop configuration for a durable State's files (local ones without child processes). */
  def hadoopConf(spark: SparkSession): Configuration =
    ForkFreeRawLocalFileSystem.configure(spark.sessionState.newHadoopConf())

  /**
   * Creates the State under `root`, or reopens (and recovers) it if its tables already exist there.
   * Creating means owning: if another application holds the root's lease, this waits up to the lease
   * for it to run out (a crashed owner), then fails naming the owner.
   */
  def create(spark: SparkSession, spec: StateSpec, root: String, registry: StateRegistry): State = synchronized {
    val conf = hadoopConf(spark)
    val dir = stateDir(root, spec.name, conf)
    val exists = checkMetadata(spec, dir, root, conf)
    attach(spark, spec, dir, root, conf, Owner(waitMs = SharedStateConf.OwnerLease.read(spark)), registry, exists)
  }

  /** The definition stored for State `name` under `root`, if its tables exist there. */
  def storedSpec(spark: SparkSession, name: String, root: String): Option[StateSpec] = {
    val conf = hadoopConf(spark)
    val metadata = new Path(stateDir(root, name, conf), "metadata").toString
    if (MetadataTable.exists(metadata, conf)) Some(MetadataTable.read(metadata, conf)) else None
  }

  /**
   * Opens the tables of `spec` under `root` (created when the State has no metadata yet; a missing
   * table of an existing State, or one stored with a different definition, is an error) for a State whose partitions live on cluster hosts. `mode` as for
   * [[open]]: the driver takes the root's lease as owner, or the tables are opened read-only
   * (`DurableTables.readOnly` says why; then see [[followCluster]]).
   */
  def tables(spark: SparkSession, spec: StateSpec, root: String, mode: Mode): DurableTables = synchronized {
    val conf = hadoopConf(spark)
    val dir = stateDir(root, spec.name, conf)
    val exists = checkMetadata(spec, dir, root, conf)
    openTables(spark, spec, dir, root, conf, mode, exists)
  }

  // The one open sequence of a durable State's tables, in local mode and in a cluster: the lease as
  // `mode` says, then the changelog, snapshot and rejected tables (the lease let go if they fail).
  // `exists`: the State's metadata exists, so every table must (a missing one is an error naming it,
  // never re-created: see StateIntegrity); else the tables are created, the metadata last, so a State
  // with metadata always had all its tables.
  private def openTables(spark: SparkSession, spec: StateSpec, dir: Path, root: String, conf: Configuration,
      mode: Mode, exists: Boolean): DurableTables = {
    releaseLeasesAtEnd(spark)
    val sc = spark.sparkContext
    val lease =
      new OwnerLease(new Path(dir, "owner"), conf, sc.applicationId, sc.appName, SharedStateConf.OwnerLease.read(spark))
    val readOnly = takeLease(spec.name, root, lease, mode)
    try {
      val engine = KernelTables.engine(conf)
      def path(table: String): String = {
        val p = new Path(dir, table).toString
        if (exists && !KernelTables.exists(engine, p)) throw StateIntegrity.missing(spec.name, table, p)
        p
      }
      if (!exists) refuseOrphanChangelog(spec.name, path("changelog"), conf)
      val log = DeltaChangelog.openOrCreate(path("changelog"), conf)
      // The owner fences the changelog with its lease generation before it reads it to recover.
      if (readOnly.isEmpty) lease.heldGeneration.foreach(log.takeOver)
      val snapshots = SnapshotTable.openOrCreate(path("snapshots"), conf)
      val rejected = RejectedTable.openOrCreate(path("rejected"), conf)
      if (!exists) MetadataTable.create(new Path(dir, "metadata").toString, spec, conf)
      DurableTables(root, log, snapshots, log.target(spec.partitions), rejected, lease, readOnly)
    } catch { case e: Throwable => lease.release(); throw e }
  }

  // A changelog with commits but no metadata beside it (the metadata table was deleted): creating the
  // State there would adopt another definition's rows.
  private def refuseOrphanChangelog(name: String, path: String, conf: Configuration): Unit =
    if (DeltaChangelog.exists(path, conf) && DeltaChangelog.open(path, conf).latestVersion > 0)
      throw new SharedStateException(s"State '$name': a changelog with commits exists at $path but its metadata " +
        s"table beside it is missing (it should hold the State's definition); the State is not created over it. " +
        "Restore the metadata table, or delete the whole State directory to start over.")

  /** Registers a cluster State's tables: its write tasks find their changelog target, snapshot rounds encode through `source`. */
  def attachCluster(spark: SparkSession, name: String, tables: DurableTables, source: SnapshotSource): Unit =
    synchronized {
      // No restored chains: the hosts hold no stored capture after a rebuild, so each partition's first
      // snapshot is full (a host asked for a delta without one answers in full anyway).
      val snapshotter = ownerSnapshotter(spark, source, tables.log, tables.snapshots, Map.empty)
      open.put(
        name,
        Durable(
          tables.root,
          tables.log,
          tables.snapshots,
          tables.target,
          tables.rejected,
          Some(snapshotter),
          schedule(spark, name, snapshotter, Seq(tables.log.path, tables.snapshots.path)),
          tables.lease,
          None,
          None
        )
      )
    }

  /**
   * A read-only State of a cluster application (`tables.readOnly` set): recovered from the tables in
   * a State of the driver's JVM, which then follows the owner's changelog as in local mode (the
   * driver hosts its partitions; tasks reach them over RPC). Registered here like a local one.
   */
  def followCluster(spark: SparkSession, spec: StateSpec, tables: DurableTables): State = synchronized {
    val why =
      tables.readOnly.getOrElse(throw new IllegalArgumentException(s"State '${spec.name}': tables opened as owner"))
    val state = new State(spec)
    try {
      val recovered =
        StateRecovery.replay(state, tables.log, Some(tables.snapshots), rejected = None, readsOwnersTables = true)
      state.attachJournal(new ReadOnlyJournal(spec.name, tables.root, why))
      val follower = new StateFollower(state, tables.log, recovered, SharedStateConf.FollowInterval.read(spark))
      open.put(spec.name,
        Durable(tables.root, tables.log, tables.snapshots, tables.target, tables.rejected, None, None,
          tables.lease, Some(why), Some(follower)))
      state
    } catch { case e: Throwable => state.close(); throw e }
  }

  // Whether the State's metadata exists (then with `spec`'s definition, or an error naming both).
  private def checkMetadata(spec: StateSpec, dir: Path, root: String, conf: Configuration): Boolean = {
    val metadata = new Path(dir, "metadata").toString
    val exists = MetadataTable.exists(metadata, conf)
    if (exists) {
      val stored = MetadataTable.read(metadata, conf)
      if (stored != spec) throw new SharedStateException(s"State '${spec.name}' already exists under $root with a " +
        s"different definition: ${MetadataTable.toJson(stored)}; asked for ${MetadataTable.toJson(spec)}. Use State.get to " +
        "open it, or another root or name.")
    }
    exists
  }

  /**
   * Opens the State `name` from its tables under `root`, if they exist there. `readOnly`: Some(true)
   * opens it read-only (following the owner's commits); None takes the root's lease if no other
   * application holds it and opens read-only if one does; Some(false) must own it (waits up to the
   * lease, then fails naming the owner).
   */
  def open(spark: SparkSession, name: String, root: String, registry: StateRegistry,
      readOnly: Option[Boolean] = None): Option[State] = synchronized {
    StateSpec.validateName(name)
    registry.find(name).map { s =>
      if (readOnly.contains(false)) this.readOnly(name).foreach(why =>
        throw ReadOnlyJournal.error(name, root, why,
          "it cannot be opened for writing while it is open read-only; drop it here first"))
      s
    }.orElse {
      val conf = hadoopConf(spark)
      val dir = stateDir(root, name, conf)
      val metadata = new Path(dir, "metadata").toString
      if (!MetadataTable.exists(metadata, conf)) None
      else {
        Some(attach(spark, MetadataTable.read(metadata, conf), dir, root, conf, mode(spark, readOnly), registry,
            exists = true))
      }
    }
  }

  /** Forgets the State's tables in this application (they stay on storage), stops its background work, lets go of its lease. */
  def forget(name: String): Unit = Option(open.remove(name)).foreach(_.stop())

  /** Takes a snapshot round of the durable State `name` now (see [[Snapshotter]]). */
  def snapshot(name: String): SnapshotRound = Option(open.get(name)) match {
    case None => throw new SharedStateException(s"State '$name' is not durable in this application: it has no root " +
        s"(create it with a root, or set ${SharedStateConf.Root.key}).")
    case Some(d) => d.snapshotter.map(_.round()).getOrElse(
        throw ReadOnlyJournal.error(name, d.root, d.readOnly.getOrElse("read-only"), "it takes no snapshots"))
  }

  /** How a durable State is opened: read-only, as owner if no other application owns the root, or as owner (waiting up to `waitMs`). */
  sealed trait Mode
  case object ReadOnly extends Mode
  case object OwnerIfFree extends Mode
  final case class Owner(waitMs: Long) extends Mode

  /** The mode of `State.get(..., read_only)`: Some(true) read-only, Some(false) must own (waits up to the lease), None owner if free. */
  def mode(spark: SparkSession, readOnly: Option[Boolean]): Mode = readOnly match {
    case Some(true) => ReadOnly
    case Some(false) => Owner(waitMs = SharedStateConf.OwnerLease.read(spark))
    case None => OwnerIfFree
  }

  /** The mode of `State.create`: owner, waiting up to the lease for a crashed owner's to run out. */
  def ownerMode(spark: SparkSession): Mode = Owner(waitMs = SharedStateConf.OwnerLease.read(spark))

  // Takes the lease as `mode` says; returns why the State is read-only, or None when this application owns it.
  private def takeLease(name: String, root: String, lease: OwnerLease, mode: Mode): Option[String] = mode match {
    case ReadOnly => Some("opened with read_only")
    case OwnerIfFree => lease.acquire(0L).map(o => s"${o.describe} owns it")
    case Owner(waitMs) => lease.acquire(waitMs).map { o =>
        throw new SharedStateException(s"State '$name' under $root is owned by ${o.describe}; a second " +
          s"application cannot write it. Open it read-only there (State.get(spark, '$name', read_only=True)) or " +
          s"stop that application (its lease runs out ${SharedStateConf.OwnerLease.key} after its last renewal).")
      }
  }

  private def attach(spark: SparkSession, spec: StateSpec, dir: Path, root: String, conf: Configuration, mode: Mode,
      registry: StateRegistry, exists: Boolean): State = {
    registry.find(spec.name).foreach { existing =>
      if (open.containsKey(spec.name)) return registry.create(spec) // checks the definition
      throw new SharedStateException(s"State '${spec.name}' already exists in this application without durability " +
        s"(${existing.spec.partitions} partitions, in memory); drop it before creating it under $root.")
    }
    val DurableTables(_, log, snapshots, target, rejected, lease, readOnly) =
      openTables(spark, spec, dir, root, conf, mode, exists)
    var journal: DeltaJournal = null
    var recovered: Recovered = null
    val state =
      try registry.create(
          spec,
          { s =>
            val started = System.nanoTime()
            // A read-only State leaves the rejected table to its owner.
            // The owner tracks changed keys from the loaded snapshots on: its next snapshots are deltas on them.
            recovered = StateRecovery.replay(
              s,
              log,
              Some(snapshots),
              if (readOnly.isEmpty) Some(rejected) else None,
              trackChanges = readOnly.isEmpty && SharedStateConf.SnapshotFullEvery.read(spark) > 1,
              readsOwnersTables = readOnly.nonEmpty
            )
            readOnly match {
              case None =>
                journal =
                  new DeltaJournal(spec.name, log, target, rejected, recovered.nextSeq, recovered.version, lease)
                s.attachJournal(journal)
              case Some(why) => s.attachJournal(new ReadOnlyJournal(spec.name, root, why))
            }
            logInfo(s"State ${spec.name}: recovered from ${dir} in ${(System.nanoTime() - started) / 1000000} ms " +
              s"(${s.metrics.keys} keys, ${s.metrics.updatesStaged} updates waiting, ${recovered.dataFilesRead} changelog files read)" + readOnly
                .fold("")(w => s", read-only: $w"))
          }
        )
      catch { case e: Throwable => lease.release(); throw e }
    if (readOnly.nonEmpty) {
      val follower = new StateFollower(state, log, recovered, SharedStateConf.FollowInterval.read(spark))
      open.put(spec.name, Durable(root, log, snapshots, target, rejected, None, None, lease, readOnly, Some(follower)))
      return state
    }
    val snapshotter = ownerSnapshotter(spark, SnapshotSource.local(state, journal), log, snapshots, recovered.chains)
    val schedule = this.schedule(spark, spec.name, snapshotter, Seq(log.path, snapshots.path))
    open.put(spec.name, Durable(root, log, snapshots, target, rejected, Some(snapshotter), schedule, lease, None, None))
    state
  }

  /**
   * The snapshot rounds of a State this application owns, local or cluster alike: retention and the
   * chain length from the session's conf, `restored` the chain each partition was recovered from.
   */
  private[durable] def ownerSnapshotter(spark: SparkSession, source: SnapshotSource, log: DeltaChangelog,
      snapshots: SnapshotTable, restored: Map[Int, SnapshotChain]): Snapshotter =
    new Snapshotter(
      source,
      log,
      snapshots,
      SharedStateConf.SnapshotsRetained.read(spark),
      SharedStateConf.SnapshotFullEvery.read(spark),
      restored,
      SharedStateConf.SnapshotAfterUpdates.read(spark)
    )

  // The owner's background work on one thread, so none of it overlaps: snapshot rounds every
  // spark.sharedstate.snapshot.interval, rounds once a partition applied spark.sharedstate.snapshot.
  // afterUpdates updates since its last snapshot (looked at every ChangeCheckMs), and VACUUM of
  // `vacuumed` (the tables retention removes files from) every spark.sharedstate.vacuum.interval.
  // Each is off at 0; None when all are.
  private def schedule(spark: SparkSession, name: String, snapshotter: Snapshotter,
      vacuumed: Seq[String]): Option[ScheduledExecutorService] = {
    val intervalMs = SharedStateConf.SnapshotInterval.read(spark)
    val onChange = SharedStateConf.SnapshotAfterUpdates.read(spark) > 0
    val vacuumMs = SharedStateConf.VacuumInterval.read(spark)
    val retentionMs = SharedStateConf.VacuumRetention.read(spark)
    if (intervalMs <= 0 && !onChange && vacuumMs <= 0) None
    else Some {
      val executor = Executors.newSingleThreadScheduledExecutor { (r: Runnable) =>
        val t = new Thread(r, s"sharedstate-snapshots-$name"); t.setDaemon(true); t
      }
      def guarded(what: String)(body: => Unit): Runnable = () =>
        try body
        catch { case e: Exception => logWarning(s"State $name: $what failed", e) }
      if (intervalMs > 0)
        executor.scheduleWithFixedDelay(guarded("snapshot round")(snapshotter.round(SnapshotRound.Interval)),
          intervalMs, intervalMs, TimeUnit.MILLISECONDS)
      if (onChange)
        executor.scheduleWithFixedDelay(guarded("snapshot round")(snapshotter.roundIfDue(SnapshotRound.Updates)),
          ChangeCheckMs, ChangeCheckMs, TimeUnit.MILLISECONDS)
      if (vacuumMs > 0)
        executor.scheduleWithFixedDelay(guarded("VACUUM")(vacuumed.foreach(TableVacuum.run(spark, _, retentionMs))),
          vacuumMs, vacuumMs, TimeUnit.MILLISECONDS)
      executor
    }
  }

  /** How often the background thread looks whether a round on change is due. */
  private val ChangeCheckMs = 500L

  /**
   * After a bulk load of `name` committed: a round if one is due on change (see
   * spark.sharedstate.snapshot.afterUpdates), so a large load returns with its data in snapshots. A
   * failed round is logged: the load itself is committed.
   */
  def afterBulkLoad(name: String): Option[SnapshotRound] = Option(open.get(name)).flatMap(_.snapshotter).flatMap {
    s =>
      try s.roundIfDue(SnapshotRound.BulkLoad)
      catch {
        case NonFatal(e) => logWarning(s"State $name: the snapshot round after a bulk load failed", e); None
      }
  }

  /**
   * Runs `commit`, a bulk load of `name` that ends with [[afterBulkLoad]]: meanwhile the background look
   * starts no round on change, so the round the load makes due is the load's own.
   */
  def bulkLoading[T](name: String)(commit: => T): T =
    Option(open.get(name)).flatMap(_.snapshotter).fold(commit)(_.loading(commit))

  /** The newest snapshot rounds of the durable State `name` this application owns, oldest first. */
  def recentRounds(name: String): Seq[SnapshotRound] =
    Option(open.get(name)).flatMap(_.snapshotter).map(_.recentRounds).getOrElse(Nil)

  private val beforeRelease = new ConcurrentHashMap[String, () => Unit]()

  /**
   * Runs `hook` (once per `name`) when the application ends, before its leases are let go: a last commit
   * that must reach every State (transactions commit an epoch on each member of a group) is made with
   * every lease still held, not refused on the members released first.
   */
  def beforeLeasesRelease(name: String, hook: () => Unit): Unit = beforeRelease.putIfAbsent(name, hook)

  // When the application ends, its leases are let go, so the next application takes the roots at once.
  private def releaseLeasesAtEnd(spark: SparkSession): Unit = {
    val sc = spark.sparkContext
    if (!listening.contains(sc)) {
      listening = Some(sc)
      sc.addSparkListener(new SparkListener {
        override def onApplicationEnd(end: SparkListenerApplicationEnd): Unit = {
          beforeRelease.forEach { (name, hook) =>
            try hook()
            catch { case NonFatal(e) => logWarning(s"$name: the last step before the leases are released failed", e) }
          }
          open.keySet.toArray(Array.empty[String]).foreach(forget)
        }
      })
    }
  }

  // The State's directory; its name is a plain identifier (validated by StateSpec), so it stays under the root.
  private def stateDir(root: String, name: String, conf: Configuration): Path = {
    StateSpec.validateName(name)
    val rootPath = new Path(root)
    val qualified = rootPath.getFileSystem(conf).makeQualified(rootPath)
    new Path(qualified, name)
  }
}

/** The Delta tables of one durable State under its root; `readOnly`: why this application only reads them (None: it owns the root). */
private[sharedstate] final case class DurableTables(root: String, log: DeltaChangelog, snapshots: SnapshotTable,
    target: ChangelogTarget,
    rejected: RejectedTable, lease: OwnerLease, readOnly: Option[String] = None)
