package io.sharedstate.spark.rows

/** Applied pairs of one partition as of a time: per key, the newest pair at or before it. */
private[sharedstate] final case class StoredPairs(keys: Array[Array[Byte]], times: Array[Long],
    values: Array[Array[Byte]]) {
  def size: Int = keys.length
}
