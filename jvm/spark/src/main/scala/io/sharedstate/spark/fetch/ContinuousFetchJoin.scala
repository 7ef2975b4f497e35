package io.sharedstate.spark.fetch

import org.apache.spark.sql.{DataFrame, Encoders}

/**
 * The fetch join for continuous-mode queries, where Spark runs no stateful operators: each event
 * becomes an asynchronous fetch in the State's pending queue, answered on the thread that advances
 * U. Within an epoch, answers that are ready are emitted before the next event is read (replies
 * first); an epoch ends only once every fetch it issued is answered, so an acknowledged epoch has
 * emitted all its events and a restart from the last epoch loses none.
 */
private[sharedstate] object ContinuousFetchJoin {
  def apply(events: DataFrame, spec: FetchJoinSpec): DataFrame =
    events.mapPartitions(new ContinuousFetchFunction(spec))(Encoders.row(spec.outputSchema))
}
