package io.sharedstate.core.esg

/**
 * What an ESG reader receives: a source's tuple, or a source's watermark (from `heartbeat`). Every
 * reader receives the same objects in the same order. It holds no reference into the ESG, so keeping
 * it does not keep consumed nodes alive.
 *
 * @param payload the tuple's payload; null for a watermark
 */
final class EsgTuple[+T](val timestamp: Long, val payload: T, val source: Int, val isWatermark: Boolean) {
  override def toString: String =
    if (isWatermark) s"Watermark($timestamp from $source)" else s"Tuple($timestamp from $source: $payload)"
}
