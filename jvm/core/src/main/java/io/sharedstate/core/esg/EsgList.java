package io.sharedstate.core.esg;

/**
 * The two lock-free steps of the ESG: a source's sorted insertion (a finger search from its own
 * previous insertion, then one CAS per level, bottom-up) and a reader's step to its next ready node
 * (wait-free: it never retries).
 */
final class EsgList {
  private EsgList() {}

  /**
   * Links {@code node} after every node whose key is at most its key. The fingers must all precede
   * that position; the caller owns them (it is the node's source, or the membership winner acting for
   * a source that is not running).
   */
  static void insert(EsgNode[] fingers, EsgNode node) {
    long ts = node.ts;
    int source = node.source;
    int top = fingers.length - 1;
    EsgNode cur = fingers[top];
    for (int level = top; level >= 0; level--) {
      EsgNode finger = fingers[level];
      // Both precede the insertion point; start from the later one.
      if (finger.laterThan(cur)) cur = finger;
      EsgNode nx;
      while ((nx = cur.next(level)) != null && nx.precedes(ts, source)) cur = nx;
      fingers[level] = cur;
    }
    int levels = node.levels();
    for (int level = 0; level < levels; level++) {
      EsgNode pred = fingers[level];
      while (true) {
        EsgNode succ = pred.next(level);
        if (succ != null && succ.precedes(ts, source)) {
          pred = succ; // another source linked a node before ours: move on
          continue;
        }
        node.presetNext(level, succ);
        if (pred.casNext(level, succ, node)) break;
      }
      fingers[level] = node;
    }
  }

  /**
   * Moves the reader past nodes that are ready but not delivered (dummies whose source has added,
   * flushes) and returns the next ready tuple or watermark, or null if the next node is still some
   * source's last node (or there is none).
   */
  static EsgNode nextReady(ReaderHandle reader) {
    EsgNode pos = reader.position;
    EsgNode found = null;
    while (true) {
      EsgNode nx = pos.next(0);
      if (nx == null) break;
      // A source's next node may land right after its last one, so passing the last node could let
      // that next node land behind this reader. A flush may be passed: its source has left.
      if (nx.kind != EsgNode.FLUSH && isLastOfItsSource(reader, nx)) break;
      if (reader.seenWritten[nx.source] == nx) reader.seenWritten[nx.source] = null;
      pos = nx;
      reader.countPassed(nx.source);
      if (nx.isDelivered()) {
        found = nx;
        break;
      }
    }
    reader.position = pos;
    return found;
  }

  private static boolean isLastOfItsSource(ReaderHandle reader, EsgNode node) {
    EsgNode seen = reader.seenWritten[node.source];
    if (seen != null && seen.owner == node.owner && seen.laterThan(node)) return false;
    EsgNode written = node.owner.written;
    reader.seenWritten[node.source] = written;
    return written == node;
  }
}
