package io.sharedstate.core.embedded

/**
 * A fetch answer in plain JVM types, for callers outside Scala (Python through JPype): `status` is
 * not_yet, absent, found (time + row), pairs (times + rows) or aggregate (row). Rows are Object[] of
 * Long, Integer, Double, Float, Boolean, String or Object[] (arrays).
 */
final class EmbeddedAnswer(
    val status: String,
    val time: Long,
    val row: Array[AnyRef],
    val times: Array[Long],
    val rows: Array[Array[AnyRef]],
    val columns: Array[String])
