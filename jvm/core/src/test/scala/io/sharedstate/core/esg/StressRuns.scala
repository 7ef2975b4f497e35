package io.sharedstate.core.esg

/**
 * Size of the concurrency stress runs. The default is small, bounded and deterministic in its inputs
 * (fixed seeds), for CI; `SHAREDSTATE_LONG_STRESS=1` (or `-Dsharedstate.longStress=true` in the test
 * JVM) runs many more seeds with far more tuples.
 */
object StressRuns {
  val long: Boolean =
    sys.env.get("SHAREDSTATE_LONG_STRESS").exists(v => v == "1" || v.equalsIgnoreCase("true")) ||
      sys.props.get("sharedstate.longStress").exists(_.equalsIgnoreCase("true"))

  def seeds: Seq[Long] = if (long) 1L to 20L else Seq(11L, 42L)

  /** Scales a per-thread work count: `base` by default, `base * factor` in the long run. */
  def scaled(base: Int, factor: Int = 25): Int = if (long) base * factor else base
}
