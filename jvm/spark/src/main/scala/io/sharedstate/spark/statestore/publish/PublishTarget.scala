package io.sharedstate.spark.statestore.publish

import io.sharedstate.spark.durable.ChangelogTarget

import io.sharedstate.core.StateSpec

/**
 * Where a query's state store publishes, as its tasks learn it from the driver: the State, the
 * writer the query publishes as, the State's creation (incarnation) and, for a durable State, where
 * tasks write the changelog files of their partition.
 */
private[sharedstate] final case class PublishTarget(
    state: String,
    writer: String,
    incarnation: Long,
    spec: StateSpec,
    changelog: Option[ChangelogTarget])
