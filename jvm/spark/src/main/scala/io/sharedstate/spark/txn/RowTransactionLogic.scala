package io.sharedstate.spark.txn

/**
 * The class form of a State transaction: logic that does not fit Spark SQL expressions, over the
 * event and the values read as `Row`s (docs/transactions.md, "The class form"). The reads and writes
 * are declared with the query, as for the declarative form (key expressions over the event's
 * columns), so the engine knows every transaction's key sets before it runs; `decide` may write only
 * keys of that declared write set.
 *
 * One instance per executor thread, made with the public no-argument constructor; `decide` is called
 * once per transaction, once every read is resolved, and must be a pure function of what the
 * [[RowTransaction]] shows (the schedule is deterministic only if the logic is). A logic that throws
 * aborts its transaction with reason `logic_failed: <message>`.
 */
trait RowTransactionLogic extends Serializable {
  def decide(txn: RowTransaction): Unit
}
