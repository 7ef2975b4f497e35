package io.sharedstate.core

/** Every error the engine raises for bad input or misuse; the message says what is allowed. */
class SharedStateException(message: String, cause: Throwable = null) extends IllegalArgumentException(message, cause)
