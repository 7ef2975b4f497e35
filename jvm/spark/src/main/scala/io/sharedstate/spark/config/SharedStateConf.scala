package io.sharedstate.spark.config

import io.sharedstate.core.SharedStateException
import org.apache.spark.SparkConf
import org.apache.spark.network.util.JavaUtils
import org.apache.spark.sql.SparkSession
import scala.util.control.NonFatal

/**
 * Every `spark.sharedstate.*` setting: its key, its default and how it is read, in one place (the
 * README's configuration table lists the same). Session settings are read from the session that
 * opens a State; cluster settings from the SparkContext's conf when the coordinator starts.
 */
private[sharedstate] object SharedStateConf {

  /** A setting with its key, default text and parser; `read` fails naming the key and what is allowed. */
  final case class Entry[T](key: String, default: String, doc: String)(parse: (String, String) => T) {
    def fromText(text: String): T = parse(key, text.trim)
    def read(spark: SparkSession): T = fromText(spark.conf.getOption(key).getOrElse(default))
    def read(conf: SparkConf): T = fromText(conf.get(key, default))
  }

  private def interval(zeroMeansOff: Boolean)(key: String, text: String): Long =
    if (zeroMeansOff && text == "0") 0L else Intervals.parseMicros(key, text) / 1000L

  private def boolean(key: String, text: String): Boolean = text.toLowerCase match {
    case "true" => true
    case "false" => false
    case _ => throw new SharedStateException(s"$key must be true or false, got '$text'.")
  }

  private def atLeastOne(what: String)(key: String, text: String): Int =
    text.toIntOption.filter(_ >= 1).getOrElse(throw new SharedStateException(
        s"$key must be a whole number >= 1 ($what), got '$text'."))

  /** Where durable States keep their Delta tables (`<root>/<state>/...`); unset: in memory. */
  val Root: Entry[Option[String]] = Entry[Option[String]]("spark.sharedstate.root", "",
    "directory of durable States' tables; unset = in memory")((_, t) => Option(t).filter(_.nonEmpty))

  /** Period of the background snapshot rounds, in ms ("0" = only on request). */
  val SnapshotInterval: Entry[Long] = Entry("spark.sharedstate.snapshot.interval", "10 minutes",
    "period of background snapshot rounds; 0 = only on request")(interval(zeroMeansOff = true))

  /** Period of VACUUM on a durable State's changelog and snapshots tables, in ms ("0" = never). */
  val VacuumInterval: Entry[Long] = Entry("spark.sharedstate.vacuum.interval", "1 hour",
    "period of the owner's VACUUM of a durable State's changelog and snapshots; 0 = never")(
    interval(zeroMeansOff = true))

  /**
   * How long files retention removed from a durable State's tables stay on disk before VACUUM deletes
   * them, in ms (applied in whole hours, rounded up; "0" = at once).
   */
  val VacuumRetention: Entry[Long] = Entry("spark.sharedstate.vacuum.retention", "7 days",
    "how long removed files stay on disk before VACUUM deletes them; 0 = at once")(interval(zeroMeansOff = true))

  /** Snapshots kept per partition; the changelog keeps what the oldest of them does not hold. */
  val SnapshotsRetained: Entry[Int] = Entry("spark.sharedstate.snapshot.retained", "2",
    "snapshots kept per partition")(atLeastOne("snapshots kept per partition"))

  /**
   * Longest snapshot chain per partition, its full snapshot included: the snapshots after a full one
   * are deltas (only the keys changed since the previous snapshot) until the chain has this many
   * links (or its deltas outgrow the full snapshot). 1 = every snapshot is full.
   */
  val SnapshotFullEvery: Entry[Int] = Entry("spark.sharedstate.snapshot.fullEvery", "8",
    "longest snapshot chain (full + deltas)")(
    atLeastOne("snapshots per chain, its full snapshot included; 1 = every snapshot full"))

  /**
   * Updates a partition applies after its last snapshot before a round is started for it (like a
   * memtable flushed once it holds so much): in the background after a streaming commit, and at the
   * end of a bulk load (which returns once its data is in snapshots). 0 = off.
   */
  val SnapshotAfterUpdates: Entry[Long] = Entry("spark.sharedstate.snapshot.afterUpdates", "1000000",
    "updates a partition applies after its last snapshot before a round starts; 0 = off")((key, text) =>
    text.toLongOption.filter(_ >= 0).getOrElse(throw new SharedStateException(
        s"$key must be a whole number >= 0 (updates applied by a partition since its last snapshot; 0 = off), " +
          s"got '$text'.")))

  /** How long an owner's lease lasts without renewal, in ms (it renews every third of it). */
  val OwnerLease: Entry[Long] = Entry("spark.sharedstate.owner.lease", "30 seconds",
    "how long an owner's lease lasts without renewal")(interval(zeroMeansOff = false))

  /** How often a read-only State looks for new changelog versions in the background, in ms ("0" = never). */
  val FollowInterval: Entry[Long] = Entry("spark.sharedstate.follow.interval", "1 second",
    "how often a read-only State follows the owner's changelog; 0 = only when read")(interval(zeroMeansOff = true))

  /** How many executors a new State waits for (none set: spark.executor.instances, or N of local-cluster[N,..]). */
  val Executors: Entry[Option[Int]] = Entry[Option[Int]]("spark.sharedstate.executors", "",
    "executors a new State waits for")((k, t) => if (t.isEmpty) None else Some(atLeastOne("executors")(k, t)))

  /** How long a new State waits for them, in ms. */
  val HostWaitTimeout: Entry[Long] = Entry("spark.sharedstate.hostWaitTimeout", "60s",
    "how long a new State waits for executors to register")((key, text) =>
    try JavaUtils.timeStringAsMs(text)
    catch {
      case NonFatal(e) =>
        throw new SharedStateException(s"$key: '$text' is not a duration; use e.g. '60s' or '2min'.", e)
    })

  /**
   * Lets the State service serve on a cluster with `spark.authenticate` off (every executor's port then
   * accepts messages from any process that reaches it); off, it refuses to start there.
   */
  val AllowUnauthenticated: Entry[Boolean] = Entry("spark.sharedstate.rpc.allowUnauthenticated", "false",
    "serve States on a cluster without spark.authenticate")(boolean)

  /**
   * Publishes stateful operators' state (the shared state store's commits) into States: each query
   * named in `spark.sharedstate.statestore.publish.<query name>=<State>` publishes to that State.
   */
  val StateStorePublish: Entry[Boolean] = Entry("spark.sharedstate.statestore.publish", "false",
    "publish mapped queries' state store into States")(boolean)

  /**
   * An executor host joining a running application (dynamic allocation, a new worker, a replaced
   * executor) rebalances every State over the live executors, moving partitions live; off, a State's
   * partitions stay where they are until `State.rebalance()`.
   */
  val RebalanceOnExecutorAdded: Entry[Boolean] = Entry("spark.sharedstate.rebalanceOnExecutorAdded", "true",
    "rebalance States when an executor joins")(boolean)

  /**
   * A live move pre-copies its partitions to the new owner while the old one serves them, so the fence
   * (while the State's commits wait) sends only what changed since (docs/elasticity.md); off, the fence
   * copies the whole partitions, and its pause grows with them.
   */
  val ElasticityPreCopy: Entry[Boolean] = Entry("spark.sharedstate.elasticity.preCopy", "true",
    "pre-copy partitions before a live move's fence")(boolean)

  /** Session setting naming the State a query (by its name) publishes its state store to. */
  val StateStorePublishPrefix: String = "spark.sharedstate.statestore.publish."

  /**
   * How long `sharedstate_fetch` in a streaming task (a real-time query's above all) waits, in ms, for
   * U to pass a row's time before the row fails naming the State, the time and U ("0" = never wait).
   */
  val RealtimeFetchTimeout: Entry[Long] = Entry("spark.sharedstate.realtime.fetchTimeout", "30 seconds",
    "how long a streaming sharedstate_fetch waits for U; 0 = fail at once")(interval(zeroMeansOff = true))

  /** How often a real-time updater commits what its task staged, in ms: the longest an update waits to count. */
  val RealtimeFlushInterval: Entry[Long] = Entry("spark.sharedstate.realtime.flushInterval", "5 milliseconds",
    "how often a real-time updater task commits its staged updates")((key, text) => {
    val ms = interval(zeroMeansOff = false)(key, text)
    if (ms < 1) throw new SharedStateException(s"$key must be at least 1 ms, got '$text'.")
    ms
  })

  /**
   * Sends real-time updaters' flushes and waiting fetches through Nova's conflict-free delivery lanes
   * to one reader thread per State and JVM (fetches first), instead of committing on the task thread.
   */
  val RealtimeDeliveryLanes: Entry[Boolean] = Entry("spark.sharedstate.realtime.deliveryLanes", "false",
    "real-time flushes and fetches through the delivery lanes")(boolean)

  val All: Seq[Entry[_]] = Seq(
    Root,
    SnapshotInterval,
    SnapshotsRetained,
    SnapshotFullEvery,
    SnapshotAfterUpdates,
    VacuumInterval,
    VacuumRetention,
    OwnerLease,
    FollowInterval,
    Executors,
    HostWaitTimeout,
    AllowUnauthenticated,
    StateStorePublish,
    RebalanceOnExecutorAdded,
    ElasticityPreCopy,
    RealtimeFetchTimeout,
    RealtimeFlushInterval,
    RealtimeDeliveryLanes
  )
}
