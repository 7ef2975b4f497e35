package io.sharedstate.spark.cluster

import io.sharedstate.core.SharedStateException

/**
 * The answer of a host to a request for a partition it handed to another host (a live move): the
 * request did nothing here, and the client asks the coordinator for the new route and sends it again
 * (see [[RecoveringStateClient]]). `partition` -1: a stage split by a route older than a move.
 */
private[sharedstate] final class PartitionMovedException(state: String, val partition: Int, from: String)
    extends SharedStateException(
      (if (partition >= 0) s"State '$state' partition $partition moved away from $from"
       else s"State '$state': partitions moved between hosts since this request was split (at $from)") +
        "; the request is sent again on the new route.")
