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
  case object Min extends NumericOp {
    val name = "min"
    def longs(a: Long, b: Long): Long = math.min(a, b)
    def doubles(a: Double, b: Double): Double = math.min(a, b)
    val orders = true
  }
  case object Max extends NumericOp {
    val name = "max"
    def longs(a: Long, b: Long): Long = math.max(a, b)
    def doubles(a: Double, b: Double): Double = math.max(a, b)
    val orders = true
  }
}
