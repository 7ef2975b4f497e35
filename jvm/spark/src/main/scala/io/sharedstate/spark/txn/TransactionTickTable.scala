package io.sharedstate.spark.txn

import io.sharedstate.spark.changes.ProgressTickTable
import io.sharedstate.spark.cluster.StateController

/**
 * A transactional operator's own source of progress ticks: a member State's progress stream (the
 * group's U is every member's). A tick each time U moves makes Spark run a micro-batch, which emits
 * the outcomes U made final, with no new events.
 */
private[sharedstate] final class TransactionTickTable(state: StateController, node: String)
    extends ProgressTickTable(state, "txn-ticks", node)
