package org.apache.spark.sql.sharedstate

import org.apache.spark.sql.errors.QueryExecutionErrors

/**
 * Spark's own errors for a state store, which are `private[sql]`: SharedStateStoreProvider raises
 * the same error classes as Spark's providers for the same failures.
 */
object StateStoreErrorsBridge {
  def failedToCommit(store: String, cause: Throwable): Throwable =
    QueryExecutionErrors.failedToCommitStateFileError(store, cause)

  def missingStateFile(path: org.apache.hadoop.fs.Path, cause: Throwable): Throwable =
    QueryExecutionErrors.failedToReadStreamingStateFileError(path, cause)

  def unexpectedVersion(version: Long): Throwable = QueryExecutionErrors.unexpectedStateStoreVersion(version)

  def notEnoughMemoryToLoad(store: String, provider: String, cause: OutOfMemoryError): Throwable =
    QueryExecutionErrors.notEnoughMemoryToLoadStore(store, provider, cause)
}
