package io.sharedstate.spark.durable

import io.sharedstate.core.{SharedStateException, State, StateSpec}
import io.sharedstate.spark.SharedStateRuntime
import java.util.concurrent.ConcurrentHashMap
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

  private final case class Durable(root: String, log: DeltaChangelog, target: ChangelogTarget)
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
    val metadata = new Path(dir, "metadata").toString
    if (MetadataTable.exists(metadata, conf)) {
      val stored = MetadataTable.read(metadata, conf)
      if (stored != spec) throw new SharedStateException(s"State '${spec.name}' already exists under $root with a " +
        s"different definition: ${MetadataTable.toJson(stored)}; asked for ${MetadataTable.toJson(spec)}. Use State.get to " +
        "open it, or another root or name.")
    }
    else MetadataTable.create(metadata, spec, conf)
    attach(spec, dir, root, conf)
  }

  /** Opens the State `name` from its tables under `root`, if they exist there. */
  def open(spark: SparkSession, name: String, root: String): Option[State] = synchronized {
    StateSpec.validateName(name)
    SharedStateRuntime.registry.find(name).orElse {
      val conf = spark.sessionState.newHadoopConf()
      val dir = stateDir(root, name, conf)
      val metadata = new Path(dir, "metadata").toString
      if (!MetadataTable.exists(metadata, conf)) None
      else Some(attach(MetadataTable.read(metadata, conf), dir, root, conf))
    }
  }

  /** Forgets the State's tables in this application (they stay on storage). */
  def forget(name: String): Unit = open.remove(name)

  private def attach(spec: StateSpec, dir: Path, root: String, conf: Configuration): State = {
    SharedStateRuntime.registry.find(spec.name).foreach { existing =>
      if (open.containsKey(spec.name)) return SharedStateRuntime.registry.create(spec) // checks the definition
      throw new SharedStateException(s"State '${spec.name}' already exists in this application without durability " +
        s"(${existing.spec.partitions} partitions, in memory); drop it before creating it under $root.")
    }
    val log = DeltaChangelog.openOrCreate(new Path(dir, "changelog").toString, conf)
    val target = log.target(spec.partitions)
    val state = SharedStateRuntime.registry.create(spec, { s =>
      val started = System.nanoTime()
      val nextSeq = StateRecovery.replay(s, log)
      s.attachJournal(new DeltaJournal(spec.name, log, target, nextSeq))
      logInfo(s"State ${spec.name}: recovered from ${log.path} in ${(System.nanoTime() - started) / 1000000} ms " +
        s"(${s.metrics.updatesApplied} updates applied, ${s.metrics.updatesStaged} waiting)")
    })
    open.put(spec.name, Durable(root, log, target))
    state
  }

  // The State's directory; its name is a plain identifier (validated by StateSpec), so it stays under the root.
  private def stateDir(root: String, name: String, conf: Configuration): Path = {
    StateSpec.validateName(name)
    val rootPath = new Path(root)
    val qualified = rootPath.getFileSystem(conf).makeQualified(rootPath)
    new Path(qualified, name)
  }
}
