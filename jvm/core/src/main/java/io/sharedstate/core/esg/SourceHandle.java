package io.sharedstate.core.esg;

/**
 * The book-keeping of one ESG source. Only the source's own thread touches it, except the
 * membership winner that sets it up (before publishing it) or retires it (after the source stopped).
 */
final class SourceHandle {
  final int slot;
  /** The source's last node; it is not ready until the source adds a later one. */
  volatile EsgNode written;
  /** Per level, the node after which the source's next insertion search starts. */
  final EsgNode[] fingers;
  /** Timestamp of {@code written}: the lower bound of the next add. */
  long lastTs;
  /** Nodes of this slot ever inserted, compared with the readers' counts for back-pressure. */
  long inserted;
  /** {@code inserted} may grow up to this before the readers' counts are read again. */
  long limit;
  private int rng;
  volatile boolean active;

  SourceHandle(int slot, EsgNode[] fingers, long lastTs, long inserted, int seed) {
    this.slot = slot;
    this.fingers = fingers;
    this.lastTs = lastTs;
    this.inserted = inserted;
    this.rng = seed == 0 ? 0x9E3779B9 : seed;
  }

  /** A random level in [1, max] with P(level > k) = 2^-k (xorshift: deterministic per seed). */
  int randomLevel(int max) {
    int x = rng;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    rng = x;
    return 1 + Integer.numberOfTrailingZeros(x | (1 << (max - 1)));
  }
}
