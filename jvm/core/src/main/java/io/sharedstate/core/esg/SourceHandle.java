package io.sharedstate.core.esg;

/** Padding: keeps {@code written}, read by every reader, off the lines the source writes. */
abstract class SourceHandlePadBefore {
  long p00, p01, p02, p03, p04, p05, p06, p07, p08, p09, p0a, p0b, p0c, p0d, p0e, p0f;
}

abstract class SourceHandleWritten extends SourceHandlePadBefore {
  /** The source's last node; it is not ready until the source adds a later one. */
  volatile EsgNode written;
}

abstract class SourceHandlePadAfter extends SourceHandleWritten {
  long p10, p11, p12, p13, p14, p15, p16, p17, p18, p19, p1a, p1b, p1c, p1d, p1e, p1f;
}

/**
 * The book-keeping of one ESG source. Only the source's own thread touches it, except the
 * membership winner that sets it up (before publishing it) or retires it (after the source stopped).
 */
final class SourceHandle extends SourceHandlePadAfter {
  final int slot;
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
