package io.sharedstate.spark

import io.sharedstate.core.SharedStateException
import io.sharedstate.spark.cluster.Coordinator
import io.sharedstate.spark.config.{SharedStateConf, StateOptions}
import io.sharedstate.spark.durable.DurableStates
import io.sharedstate.spark.rows.StateSchemas
import io.sharedstate.spark.txn.{RowTransactionLogic, Transact, TransactionAccess}
import io.sharedstate.spark.write.RealtimeUpdater
import org.apache.spark.sql.{DataFrame, ForeachWriter, Row, SparkSession}

/**
 * The Scala face (Python's `sharedstate.State` mirrors it through py4j):
 * {{{
 *   val campaigns = SharedState.create(spark, "campaigns", key = "ad_id STRING", value = "campaign STRING")
 *   updates.writeStream.format("sharedstate").option("state", "campaigns")...
 *   val enriched = campaigns.fetchJoin(views, Seq("ad_id"), "ts")
 *   campaigns.asOf("2026-11-20 10:00:00")
 * }}}
 */
object SharedState {

  /**
   * Creates a State, or returns the existing one if it has exactly this definition. With a root
   * (`root`, else `spark.sharedstate.root`) the State is durable: its Delta tables live under
   * `<root>/<name>/`, and a State whose tables already exist there is reopened and recovered.
   */
  def create(spark: SparkSession, name: String, key: String, value: String, rule: String = "replace",
      partitions: Int = 8, root: String = null, options: StateOptions = StateOptions()): StateHandle = {
    val spec = options.spec(name, key, value, partitions, rule)
    StateSchemas.of(spec) // both schemas must parse before anything is registered
    DurableStates.root(spark, Option(root)) match {
      case Some(r) => Coordinator.get.createDurable(spark, spec, r)
      case None => Coordinator.get.create(spec)
    }
    new StateHandle(spark, name)
  }

  /**
   * [[create]] with the State's options by name: `fetchRules` (the fetch rules it answers; all
   * built-ins by default), `compaction` (`keep_latest`, `none`, "class:<name>"), `latePolicy`
   * (`reject` or `fail`), `memoryLimit` ("2g"; null = none), `sweepInterval` (the bounded
   * background compaction sweep, "10 seconds" by default; "0" = lazy compaction only).
   */
  def create(spark: SparkSession, name: String, key: String, value: String, rule: String, partitions: Int,
      root: String, fetchRules: Seq[String], compaction: String, latePolicy: String, memoryLimit: String,
      sweepInterval: String): StateHandle =
    create(spark, name, key, value, rule, partitions, root,
      StateOptions(fetchRules, compaction, latePolicy, memoryLimit, sweepInterval))

  /**
   * The existing State called `name`: one of this application, or a durable one found under
   * `spark.sharedstate.root` (recovered from its tables); an unknown name is an error listing the existing ones.
   */
  def get(spark: SparkSession, name: String): StateHandle = {
    Coordinator.get.state(name)
    new StateHandle(spark, name)
  }

  /**
   * Opens the durable State `name` under `root` (null: `spark.sharedstate.root`). A durable State
   * has one writing application at a time (the owner of its root's lease). `readOnly` Some(true):
   * read-only, following the owner's commits; Some(false): this application must own it (waits up
   * to the lease for a crashed owner's to run out); None: owns it unless another application does,
   * then read-only. A State already open here is returned as it is.
   */
  def open(spark: SparkSession, name: String, readOnly: Option[Boolean] = None, root: String = null): StateHandle = {
    DurableStates.root(spark, Option(root)) match {
      case Some(r) =>
        Coordinator.get.openDurable(spark, name, r, readOnly).getOrElse(
          throw new SharedStateException(s"No State '$name' under $r (no metadata table at $r/$name/metadata)."))
      case None if readOnly.isDefined =>
        throw new SharedStateException(
          s"State '$name': read_only applies to durable States; give a root (root=...) or set ${SharedStateConf.Root.key}.")
      case None => Coordinator.get.state(name)
    }
    new StateHandle(spark, name)
  }

  def names: Seq[String] = Coordinator.get.names

  /**
   * State transactions: one per event of the streaming DataFrame `events`, at its `time` (a TIMESTAMP
   * column), applied atomically in time order once update progress passes it (docs/transactions.md).
   * `reads`: (name, State, key expression) - the key a Spark SQL expression over the event's columns
   * (a struct of the key columns for a multi-column key). `condition`: a BOOLEAN expression over the
   * event's columns and the values read (each a struct of its State's value columns, null when
   * absent); null = always commit. `writes`: (State, key expression, new value expression) - the value
   * column for a one-column value, else named_struct of the value columns in order; a null key or a
   * null new value writes nothing. With `outcomes` the result is the stream of outcomes (the event,
   * `committed`, `reason`, the values read), each emitted once final; without, it has no rows (run it
   * with any sink for the effects). `lateness` (default 0) is subtracted from the latest event time
   * seen to give the query's watermark, at which it holds the States' U.
   * {{{
   *   SharedState.transact(transfers, "ts",
   *     reads = Seq(("src", "accounts", "from_id"), ("dst", "accounts", "to_id")),
   *     condition = "src.balance >= amount",
   *     writes = Seq(("accounts", "from_id", "src.balance - amount"),
   *       ("accounts", "to_id", "coalesce(dst.balance, 0) + amount")))
   * }}}
   */
  def transact(events: DataFrame, time: String, reads: Seq[(String, String, String)], condition: String,
      writes: Seq[(String, String, String)], outcomes: Boolean = true, lateness: String = null): DataFrame =
    Transact(
      events,
      time,
      reads.map { case (name, state, key) => TransactionAccess(name, state, key, null) },
      condition,
      writes.map { case (state, key, value) => TransactionAccess(null, state, key, value) },
      outcomes,
      lateness
    )

  /**
   * State transactions, the class form: as the declarative [[transact]], but a
   * [[io.sharedstate.spark.txn.RowTransactionLogic]] decides each transaction over Rows (the event,
   * the values read) instead of a condition and new value expressions. `reads`: (name, State, key
   * expression), as there; `writes`: (State, key expression), the keys the logic may write (it
   * aborts with `undeclared_write` on any other). One instance of `logic` per thread, made with its
   * no-argument constructor.
   * {{{
   *   SharedState.transact(reports, "ts", classOf[MyTollLogic],
   *     reads = Seq(("s", "speeds", "segment"), ("c", "counts", "segment")),
   *     writes = Seq(("speeds", "segment"), ("counts", "segment")), outcomes = true, lateness = "5 seconds")
   * }}}
   */
  def transact(events: DataFrame, time: String, logic: Class[_ <: RowTransactionLogic],
      reads: Seq[(String, String, String)], writes: Seq[(String, String)], outcomes: Boolean,
      lateness: String): DataFrame =
    transactClass(events, time, logic.getName, reads, writes, outcomes, lateness)

  /** [[transact]] with the logic class by name (it is loaded and checked when the query is defined). */
  def transactClass(events: DataFrame, time: String, logic: String, reads: Seq[(String, String, String)],
      writes: Seq[(String, String)], outcomes: Boolean, lateness: String): DataFrame = {
    if (logic == null || logic.trim.isEmpty) throw new SharedStateException(
      "Transaction: the logic class name is empty; give a class implementing " +
        s"${classOf[RowTransactionLogic].getName}.")
    Transact(
      events,
      time,
      reads.map { case (name, state, key) => TransactionAccess(name, state, key, null) },
      null,
      writes.map { case (state, key) => TransactionAccess(null, state, key, null) },
      outcomes,
      lateness,
      logic.trim
    )
  }

  /**
   * A `ForeachWriter` that updates State `name` from a query in real-time mode (`trigger(realTime=...)`
   * allows the foreach sink, not this data source): `events.writeStream.foreach(SharedState.updater(spark,
   * "campaigns", "ad_id", "ts")).trigger(RealTimeTrigger(...))`. The options are the sink's (`value`,
   * `lateness`, `maxAhead`); each input partition commits what it read every
   * `spark.sharedstate.realtime.flushInterval`, exactly once across replays (docs/realtime.md).
   */
  def updater(spark: SparkSession, name: String, key: String, time: String, value: String = null,
      lateness: String = null, options: Map[String, String] = Map.empty): ForeachWriter[Row] = {
    val all = options ++ Map("key" -> key, "time" -> time) ++ Option(value).map("value" -> _) ++
      Option(lateness).map("lateness" -> _)
    val state = Coordinator.get.state(name)
    RealtimeUpdater.checkOptions(name, all)
    QueryLifecycleListener.ensure(spark) // pauses the partition writers when the query stops
    new RealtimeUpdater(
      name,
      all,
      SharedStateConf.RealtimeFlushInterval.read(spark),
      state.incarnation,
      DurableStates.target(name),
      SharedStateConf.RealtimeDeliveryLanes.read(spark)
    )
  }

}
