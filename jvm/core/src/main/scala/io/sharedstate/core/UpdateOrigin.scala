package io.sharedstate.core

/** Which commit staged an update, kept so an update that fails to apply is reported with its origin. */
final class UpdateOrigin(val writer: String, val epoch: Long, val updateProgress: Long)
