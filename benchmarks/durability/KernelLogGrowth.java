import io.delta.kernel.Operation;
import io.delta.kernel.Table;
import io.delta.kernel.Transaction;
import io.delta.kernel.TransactionCommitResult;
import io.delta.kernel.defaults.engine.DefaultEngine;
import io.delta.kernel.engine.Engine;
import io.delta.kernel.hook.PostCommitHook;
import io.delta.kernel.types.IntegerType;
import io.delta.kernel.types.StructType;
import io.delta.kernel.utils.CloseableIterable;

/**
 * What a Delta Kernel commit costs as a table ages, with and without the checkpoints Kernel leaves to
 * its caller (sharedstate's DeltaCheckpoints writes them): a new table, then VERSIONS commits of one
 * writer's epochs (each a transaction id, as the changelog's epoch commits are), timing each block of
 * 250. Run (single-file source; Kernel and Hadoop jars from the project's caches):
 *
 *   java -cp "$SHAREDSTATE_CACHE/ivy/jars/*:.venv/lib/python3.11/site-packages/pyspark/jars/*" \
 *     benchmarks/durability/KernelLogGrowth.java DIR VERSIONS checkpoints|none
 *
 * Prints one line per block: versions so far, mean ms per commit in the block.
 */
public class KernelLogGrowth {
  public static void main(String[] args) throws Exception {
    String path = args[0];
    int versions = Integer.parseInt(args[1]);
    boolean checkpoints = args[2].equals("checkpoints");
    Engine engine = DefaultEngine.create(new org.apache.hadoop.conf.Configuration());
    Table table = Table.forPath(engine, path);
    table.createTransactionBuilder(engine, "growth", Operation.CREATE_TABLE)
        .withSchema(engine, new StructType().add("x", IntegerType.INTEGER))
        .build(engine)
        .commit(engine, CloseableIterable.emptyIterable());
    long t = System.nanoTime();
    for (int v = 1; v <= versions; v++) {
      Transaction txn = table.createTransactionBuilder(engine, "growth", Operation.WRITE)
          .withTransactionId(engine, "w", v)
          .build(engine);
      TransactionCommitResult result = txn.commit(engine, CloseableIterable.emptyIterable());
      if (checkpoints)
        for (PostCommitHook hook : result.getPostCommitHooks())
          if (hook.getType() == PostCommitHook.PostCommitHookType.CHECKPOINT) hook.threadSafeInvoke(engine);
      if (v % 250 == 0) {
        long now = System.nanoTime();
        System.out.printf("%s %d %.1f%n", args[2], v, (now - t) / 250 / 1e6);
        t = now;
      }
    }
  }
}
