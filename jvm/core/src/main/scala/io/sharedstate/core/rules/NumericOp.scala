package io.sharedstate.core.rules

/** A binary operation of the numeric rules and aggregates, on longs and on doubles. */
sealed trait NumericOp {
  def name: String
  def longs(a: Long, b: Long): Long
  def doubles(a: Double, b: Double): Double

  /** Whether min/max-style comparison also makes sense for strings and timestamps. */
  def orders: Boolean
}

object NumericOp {

  /** Integer sums wrap on overflow, as Java and Spark's non-ANSI arithmetic do. */
  case object Sum extends NumericOp {
    val name = "sum"
    def longs(a: Long, b: Long): Long = a + b
    def doubles(a: Double, b: Double): Double = a + b
    val orders = false
  }

  /**
   * `min` and `max` order floating-point values as Spark SQL does: NaN is greater than every other
   * value (including +Infinity), so `min` ignores NaN unless every value is NaN and `max` is NaN as
   * soon as one value is. `math.min`/`math.max` would let one NaN poison the result. The order is
   * `java.lang.Double.compare`'s total order, which also puts -0.0 below 0.0 (Spark SQL counts them
   * equal and keeps whichever it saw first); a total order keeps the answer independent of the order
   * in which equal values are combined. On equal values the previous one is kept.
   */
  case object Min extends NumericOp {
    val name = "min"
    def longs(a: Long, b: Long): Long = math.min(a, b)
    def doubles(a: Double, b: Double): Double = if (java.lang.Double.compare(a, b) <= 0) a else b
    val orders = true
  }
  case object Max extends NumericOp {
    val name = "max"
    def longs(a: Long, b: Long): Long = math.max(a, b)
    def doubles(a: Double, b: Double): Double = if (java.lang.Double.compare(a, b) >= 0) a else b
    val orders = true
  }
}
