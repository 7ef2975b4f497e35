package io.sharedstate.core.esg;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * One skip-list node of the ESG. Nodes are never unlinked: a reader passes them and the garbage
 * collector takes them once no reader position or source finger reaches them.
 *
 * <p>The list is ordered by the key (timestamp, source slot); nodes with an equal key (one source
 * adding the same timestamp twice) keep their insertion order. Breaking timestamp ties by source
 * slot, not by arrival, makes the merged sequence a function of the sources' inputs alone.
 */
final class EsgNode {
  static final byte TUPLE = 0;
  static final byte WATERMARK = 1;
  /** Blocks readers at a new source's start position until that source adds; never delivered. */
  static final byte DUMMY = 2;
  /** Releases a removed source's last node; readers always pass it; never delivered. */
  static final byte FLUSH = 3;
  static final byte HEAD = 4;

  private static final VarHandle NEXT = MethodHandles.arrayElementVarHandle(EsgNode[].class);

  final long ts;
  final int source;
  final byte kind;
  /** What readers receive (an {@code EsgTuple}); null for dummy, flush and head nodes. */
  final Object item;
  /** The handle of the source that owns this node; readers compare its {@code written}. */
  final SourceHandle owner;
  private final EsgNode[] next;

  EsgNode(long ts, int source, byte kind, Object item, SourceHandle owner, int levels) {
    this.ts = ts;
    this.source = source;
    this.kind = kind;
    this.item = item;
    this.owner = owner;
    this.next = new EsgNode[levels];
  }

  static EsgNode head(int levels) {
    return new EsgNode(Long.MIN_VALUE, -1, HEAD, null, null, levels);
  }

  int levels() {
    return next.length;
  }

  EsgNode next(int level) {
    return (EsgNode) NEXT.getAcquire(next, level);
  }

  /** Plain write before this node is published at {@code level} by the CAS that links it. */
  void presetNext(int level, EsgNode succ) {
    NEXT.set(next, level, succ);
  }

  boolean casNext(int level, EsgNode expected, EsgNode update) {
    return NEXT.compareAndSet(next, level, expected, update);
  }

  /** True if a node with key (ts, source) inserted now belongs after this node. */
  boolean precedes(long ts, int source) {
    return this.ts < ts || (this.ts == ts && this.source <= source);
  }

  /** True if this node's key is larger than the other's: it lies later in the list. */
  boolean laterThan(EsgNode other) {
    return ts > other.ts || (ts == other.ts && source > other.source);
  }

  boolean isDelivered() {
    return kind == TUPLE || kind == WATERMARK;
  }
}
