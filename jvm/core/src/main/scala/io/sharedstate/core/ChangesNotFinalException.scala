package io.sharedstate.core

/**
 * A change range asked of a State whose U has not passed its end yet. On a cluster each host applies
 * U's steps a moment apart (and a partition's new owner starts from the driver's U), so a range final
 * at one host may not be final yet where it is read: a reader that knows it is final elsewhere asks
 * again shortly.
 */
final class ChangesNotFinalException(message: String) extends SharedStateException(message)
