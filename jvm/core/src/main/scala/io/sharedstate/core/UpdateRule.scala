package io.sharedstate.core

/**
 * How an update (k, t, v) computes the value stored at (k, t). `previous` is the value of the pair
 * with the largest timestamp <= t (null when there is none). Rules are applied in timestamp order
 * per key, so a non-commutative rule gives the same answer whatever order updates arrived in.
 */
trait UpdateRule extends Serializable {
  def name: String
  def apply(previous: Array[Byte], incoming: Array[Byte]): Array[Byte]
}

object UpdateRule {
  /** The new value replaces whatever was there. */
  object Replace extends UpdateRule {
    val name = "replace"
    def apply(previous: Array[Byte], incoming: Array[Byte]): Array[Byte] = incoming
  }

  private val builtIn: Map[String, UpdateRule] = Seq(Replace).map(r => r.name -> r).toMap

  def names: Seq[String] = builtIn.keys.toSeq.sorted

  def byName(name: String): UpdateRule = builtIn.getOrElse(name.trim.toLowerCase,
    throw new SharedStateException(
      s"Unknown update rule '$name'. Supported rules: ${names.mkString(", ")}."))
}
