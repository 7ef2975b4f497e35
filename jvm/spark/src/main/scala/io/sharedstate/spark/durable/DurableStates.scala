package io.sharedstate.spark.durable

import io.sharedstate.core.{SharedStateException, State, StateSpec}
import io.sharedstate.spark.SharedStateRuntime
import io.sharedstate.spark.Intervals
import java.util.concurrent.{ConcurrentHashMap, Executors, ScheduledExecutorService, TimeUnit}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession

/**
 * The durable States of this application: each keeps its Delta tables under a root directory
 * (`spark.sharedstate.root`, or a root given at creation), `<root>/<state>/changelog` and
 * `<root>/<state>/metadata`. Creating a State whose tables exist reopens it: its definition must
 * match, and its partitions are rebuilt from the changelog before anyone can use it.
 */
object DurableStates extends Logging {
  val RootConf = "spark.sharedstate.root"
  /** Period of the background snapshot rounds ("10 minutes"; "0" = only on request). */
  val SnapshotIntervalConf = "spark.sharedstate.snapshot.interval"
  val DefaultSnapshotInterval = "10 minutes"
  /** Snapshots kept per partition; the changelog keeps what the oldest of them does not hold. */
  val SnapshotsRetainedConf = "spark.sharedstate.snapshot.retained"
  val DefaultSnapshotsRetained = 2

  private final case class Durable(root: String, log: DeltaChangelog, target: ChangelogTarget, snapshotter: Snapshotter,
      schedule: Option[ScheduledExecutorService])
  private val open = new ConcurrentHashMap[String, Durable]()

  /** The root for a State: `explicit` when given, else the session's `spark.sharedstate.root`, else none (in memory). */
  def root(spark: SparkSession, explicit: Option[String]): Option[String] =
    explicit.map(_.trim).filter(_.nonEmpty).orElse(spark.conf.getOption(RootConf).map(_.trim).filter(_.nonEmpty))

  /** What write tasks of `state` need to log their updates, when the State is durable. */
  def target(state: String): Option[ChangelogTarget] = Option(open.get(state)).map(_.target)

  /** The root a durable State lives under. */
  def rootOf(state: String): Option[String] = Option(open.get(state)).map(_.root)

  /** Creates the State under `root`, or reopens (and recovers) it if its tables already exist there. */
  def create(spark: SparkSession, spec: StateSpec, root: String): State = synchronized {
    val conf = spark.sessionState.newHadoopConf()
    val dir = stateDir(root, spec.name, conf)
    checkOrCreateMetadata(spec, dir, root, conf)
    attach(spark, spec, dir, root, conf)
  }

  /** The definition stored for State `name` under `root`, if its tables exist there. */
  def storedSpec(spark: SparkSession, name: String, root: String): Option[StateSpec] = {
    val conf = spark.sessionState.newHadoopConf()
    val metadata = new Path(stateDir(root, name, conf), "metadata").toString
    if (MetadataTable.exists(metadata, conf)) Some(MetadataTable.read(metadata, conf)) else None
  }

  /**
   * Opens the tables of `spec` under `root` (created when missing; stored with a different
   * definition is an error) for a State whose partitions live on cluster hosts.
   */
  def tables(spark: SparkSession, spec: StateSpec, root: String): DurableTables = synchronized {
    val conf = spark.sessionState.newHadoopConf()
    val dir = stateDir(root, spec.name, conf)
    checkOrCreateMetadata(spec, dir, root, conf)
    val log = DeltaChangelog.openOrCreate(new Path(dir, "changelog").toString, conf)
    val snapshots = SnapshotTable.openOrCreate(new Path(dir, "snapshots").toString, conf)
    DurableTables(root, log, snapshots, log.target(spec.partitions))
  }

  /** Registers a cluster State's tables: its write tasks find their changelog target, snapshot rounds encode through `source`. */
  def attachCluster(spark: SparkSession, name: String, tables: DurableTables, source: SnapshotSource): Unit = synchronized {
    val snapshotter = new Snapshotter(spark, source, tables.log, tables.snapshots, retained(spark))
    open.put(name, Durable(tables.root, tables.log, tables.target, snapshotter, schedule(spark, name, snapshotter)))
  }

  private def checkOrCreateMetadata(spec: StateSpec, dir: Path, root: String, conf: Configuration): Unit = {
    val metadata = new Path(dir, "metadata").toString
    if (MetadataTable.exists(metadata, conf)) {
      val stored = MetadataTable.read(metadata, conf)
      if (stored != spec) throw new SharedStateException(s"State '${spec.name}' already exists under $root with a " +
        s"different definition: ${MetadataTable.toJson(stored)}; asked for ${MetadataTable.toJson(spec)}. Use State.get to " +
        "open it, or another root or name.")
    }
    else MetadataTable.create(metadata, spec, conf)
  }

  /** Opens the State `name` from its tables under `root`, if they exist there. */
  def open(spark: SparkSession, name: String, root: String): Option[State] = synchronized {
    StateSpec.validateName(name)
    SharedStateRuntime.registry.find(name).orElse {
      val conf = spark.sessionState.newHadoopConf()
      val dir = stateDir(root, name, conf)
      val metadata = new Path(dir, "metadata").toString
      if (!MetadataTable.exists(metadata, conf)) None
      else Some(attach(spark, MetadataTable.read(metadata, conf), dir, root, conf))
    }
  }

  /** Forgets the State's tables in this application (they stay on storage) and stops its snapshots. */
  def forget(name: String): Unit = Option(open.remove(name)).foreach(_.schedule.foreach(_.shutdownNow()))

  /** Takes a snapshot round of the durable State `name` now (see [[Snapshotter]]). */
  def snapshot(name: String): SnapshotRound = Option(open.get(name)).map(_.snapshotter.round()).getOrElse(
    throw new SharedStateException(s"State '$name' is not durable in this application: it has no root " +
      s"(create it with a root, or set $RootConf)."))

  private def attach(spark: SparkSession, spec: StateSpec, dir: Path, root: String, conf: Configuration): State = {
    SharedStateRuntime.registry.find(spec.name).foreach { existing =>
      if (open.containsKey(spec.name)) return SharedStateRuntime.registry.create(spec) // checks the definition
      throw new SharedStateException(s"State '${spec.name}' already exists in this application without durability " +
        s"(${existing.spec.partitions} partitions, in memory); drop it before creating it under $root.")
    }
    val log = DeltaChangelog.openOrCreate(new Path(dir, "changelog").toString, conf)
    val snapshots = SnapshotTable.openOrCreate(new Path(dir, "snapshots").toString, conf)
    val target = log.target(spec.partitions)
    var journal: DeltaJournal = null
    val state = SharedStateRuntime.registry.create(spec, { s =>
      val started = System.nanoTime()
      val nextSeq = StateRecovery.replay(s, log, Some(snapshots))
      journal = new DeltaJournal(spec.name, log, target, nextSeq)
      s.attachJournal(journal)
      logInfo(s"State ${spec.name}: recovered from ${dir} in ${(System.nanoTime() - started) / 1000000} ms " +
        s"(${s.metrics.keys} keys, ${s.metrics.updatesStaged} updates waiting)")
    })
    val snapshotter = new Snapshotter(spark, SnapshotSource.local(state, journal), log, snapshots, retained(spark))
    val schedule = this.schedule(spark, spec.name, snapshotter)
    open.put(spec.name, Durable(root, log, target, snapshotter, schedule))
    state
  }

  private def retained(spark: SparkSession): Int = spark.conf.getOption(SnapshotsRetainedConf).map { text =>
    text.trim.toIntOption.filter(_ >= 1).getOrElse(throw new SharedStateException(
      s"$SnapshotsRetainedConf must be a whole number >= 1 (snapshots kept per partition), got '$text'."))
  }.getOrElse(DefaultSnapshotsRetained)

  // Background snapshot rounds every spark.sharedstate.snapshot.interval (none when it is 0).
  private def schedule(spark: SparkSession, name: String, snapshotter: Snapshotter): Option[ScheduledExecutorService] = {
    val intervalText = spark.conf.getOption(SnapshotIntervalConf).getOrElse(DefaultSnapshotInterval).trim
    val intervalMs = if (intervalText == "0") 0L else Intervals.parseMicros(SnapshotIntervalConf, intervalText) / 1000L
    if (intervalMs <= 0) None else Some {
      val executor = Executors.newSingleThreadScheduledExecutor { (r: Runnable) =>
        val t = new Thread(r, s"sharedstate-snapshots-$name"); t.setDaemon(true); t
      }
      executor.scheduleWithFixedDelay(() =>
        try snapshotter.round() catch { case e: Exception => logWarning(s"State $name: snapshot round failed", e) },
        intervalMs, intervalMs, TimeUnit.MILLISECONDS)
      executor
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

/** The Delta tables of one durable State under its root. */
final case class DurableTables(root: String, log: DeltaChangelog, snapshots: SnapshotTable, target: ChangelogTarget)
