package io.sharedstate.spark.durable

import com.fasterxml.jackson.databind.ObjectMapper
import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.{Executors, ScheduledExecutorService, TimeUnit}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{ChecksumFileSystem, FileAlreadyExistsException, FileContext, Options, Path}
import org.apache.spark.internal.Logging
import scala.util.Try

/** Who owns a State's root: the application, when it last renewed the lease, whether it let go. */
private[sharedstate] final case class LeaseOwner(generation: Long, app: String, appName: String, renewedMs: Long,
    leaseMs: Long,
    released: Boolean, corrupt: Boolean = false) {

  /** The owner's own lease length decides (applications may configure different ones); a corrupt file is no owner. */
  def liveAt(nowMs: Long): Boolean = !corrupt && !released && nowMs - renewedMs <= leaseMs
  def describe: String =
    if (corrupt) s"a corrupt lease file (generation $generation), treated as expired"
    else s"application $app ($appName), lease renewed at ${java.time.Instant.ofEpochMilli(renewedMs)}"
}

/**
 * The single-writer lease of a State's root, in `<root>/<state>/owner/`: one small JSON file per
 * ownership generation. Taking the State over creates the next generation's file, which the file
 * system does atomically and for one application only (create without overwrite); the owner renews
 * it every third of the lease. Another application may take over once the lease has not been renewed
 * for `leaseMs` (the owner died) or was released (it stopped). An owner that finds a newer generation
 * than its own has lost the State and writes nothing more.
 *
 * A reader never sees a half-written file: a renewal writes a temporary file and renames it over the
 * generation's file (an atomic replace on HDFS and local file systems); a new generation's file is
 * created exclusively with its whole content, and a reader retries a file it finds empty for a moment
 * (the creator is still writing it). A file that still cannot be parsed (a crash while creating it)
 * is logged and treated as expired: it never reads as a live owner.
 */
private[sharedstate] final class OwnerLease(dir: Path, conf: Configuration, app: String, appName: String, leaseMs: Long,
    renewEveryMs: Option[Long] = None)
    extends Logging {
  import OwnerLease._
  // Without checksum files (a local file system's .crc): a renamed lease file and its checksum would
  // be two renames, and a reader between them would see a mismatch.
  private val fs = dir.getFileSystem(conf) match {
    case checksummed: ChecksumFileSystem => checksummed.getRawFileSystem
    case other => other
  }
  @volatile private var generation = -1L
  @volatile private var renewer: Option[ScheduledExecutorService] = None

  // When this application last stamped its lease file (renewed_ms of its last successful write).
  @volatile private var renewedMs = 0L

  /** True while this application holds the lease. */
  def held: Boolean = generation >= 0

  /** The generation this application holds (None: it does not hold the lease). */
  def heldGeneration: Option[Long] = Some(generation).filter(_ >= 0)

  /**
   * Fails unless this application holds the lease with margin: its last renewal is at most two
   * thirds of the lease old (renewals come every third, so one may be missed). Past that, another
   * application may take the root over soon (once a whole lease passed), so an owner commits nothing
   * more until a renewal succeeds; the third left covers the commit itself and clock skew.
   */
  def checkHeldWithMargin(what: String): Unit = {
    val age = System.currentTimeMillis() - renewedMs
    if (held && age > leaseMs * 2 / 3)
      throw new io.sharedstate.core.SharedStateException(s"$what: this application's lease of ${dir.getParent} " +
        s"(generation $generation) was last renewed $age ms ago, more than two thirds of its lease ($leaseMs ms, " +
        "spark.sharedstate.owner.lease): another application may take the State over, so it commits nothing until " +
        "a renewal succeeds (a stalled renewal: see the lease warnings in the log).")
  }

  /** The owner now (None: nobody ever owned the root). */
  def owner: Option[LeaseOwner] = latestGeneration.map(read)

  /**
   * Takes the lease, waiting up to `waitMs` for a live owner's lease to run out. Returns the live
   * owner that keeps it, or None once this application holds it.
   */
  def acquire(waitMs: Long): Option[LeaseOwner] = synchronized {
    val deadline = System.currentTimeMillis() + waitMs
    var result: Option[LeaseOwner] = tryAcquire()
    while (result.nonEmpty && System.currentTimeMillis() < deadline) {
      Thread.sleep(math.min(500L, math.max(1L, deadline - System.currentTimeMillis())))
      result = tryAcquire()
    }
    result
  }

  /** Lets go of the lease (another application may take it at once). */
  def release(): Unit = synchronized {
    renewer.foreach(_.shutdownNow()); renewer = None
    if (held && latestGeneration.contains(generation)) Try(write(generation, released = true, overwrite = true))
    generation = -1L
  }

  private def tryAcquire(): Option[LeaseOwner] = {
    if (held) return None
    val now = System.currentTimeMillis()
    latestGeneration.map(read) match {
      case Some(o) if o.app != app && o.liveAt(now) => Some(o)
      case Some(o) if o.app == app && !o.released =>
        write(o.generation, released = false, overwrite = true); start(o.generation); None
      case latest =>
        val next = latest.fold(1L)(_.generation + 1)
        try { write(next, released = false, overwrite = false); start(next); None }
        catch { case _: FileAlreadyExistsException => tryAcquire() } // another application got it first
    }
  }

  private def start(g: Long): Unit = {
    generation = g
    val executor = Executors.newSingleThreadScheduledExecutor { (r: Runnable) =>
      val t = new Thread(r, s"sharedstate-lease-${dir.getParent.getName}"); t.setDaemon(true); t
    }
    val every = renewEveryMs.getOrElse(math.max(100L, leaseMs / 3))
    executor.scheduleWithFixedDelay(() => renew(), every, every, TimeUnit.MILLISECONDS)
    renewer = Some(executor)
  }

  private def renew(): Unit = synchronized {
    if (held)
      try {
        if (latestGeneration.exists(_ > generation)) {
          logWarning(
            s"Lost the lease of ${dir.getParent}: ${owner.map(_.describe).getOrElse("another application")} took it over.")
          generation = -1L
          renewer.foreach(_.shutdown())
        } else write(generation, released = false, overwrite = true)
      } catch { case e: Exception => logWarning(s"Could not renew the lease of ${dir.getParent}", e) }
  }

  private def latestGeneration: Option[Long] =
    if (!fs.exists(dir)) None
    else fs.listStatus(dir).map(_.getPath.getName).collect { case FileName(g) => g.toLong }.maxOption

  private def file(g: Long): Path = new Path(dir, f"$g%020d.json")

  // A new generation (`overwrite` false): created exclusively, whole content in one write. A renewal or
  // release: a temporary file renamed over the generation's file, so no reader sees it half-written.
  private def write(g: Long, released: Boolean, overwrite: Boolean): Unit = {
    val stamp = System.currentTimeMillis()
    val text = json.writeValueAsString(java.util.Map.of(
        "app",
        app,
        "app_name",
        appName,
        "renewed_ms",
        java.lang.Long.valueOf(stamp),
        "lease_ms",
        java.lang.Long.valueOf(leaseMs),
        "released",
        java.lang.Boolean.valueOf(released)
      ))
    def writeTo(path: Path, overwrite: Boolean): Unit = {
      val out = fs.create(path, overwrite)
      try out.write(text.getBytes(UTF_8))
      finally out.close()
    }
    if (!overwrite) writeTo(file(g), overwrite = false)
    else {
      val temp = new Path(dir, s".${file(g).getName}.${java.util.UUID.randomUUID()}.tmp")
      try {
        writeTo(temp, overwrite = false)
        // A local file system's rename replaces the target atomically (rename(2)); HDFS's refuses an
        // existing target, and its rename with OVERWRITE is the atomic replace there.
        if (!fs.rename(temp, file(g)))
          FileContext.getFileContext(fs.makeQualified(dir).toUri, conf).rename(temp, file(g), Options.Rename.OVERWRITE)
      } catch { case e: Exception => Try(fs.delete(temp, false)); throw e }
    }
    if (!released) renewedMs = stamp
  }

  // A file being created by its owner may be read empty for a moment: read again, then give up on it
  // as corrupt (a crash while creating it), which is no live owner.
  private def read(g: Long): LeaseOwner = {
    var attempt = 0
    while (true) {
      val parsed = Try {
        val in = fs.open(file(g))
        val n =
          try json.readTree(in)
          finally in.close()
        LeaseOwner(g, n.get("app").asText, n.get("app_name").asText, n.get("renewed_ms").asLong,
          n.get("lease_ms").asLong,
          n.get("released").asBoolean)
      }
      if (parsed.isSuccess) return parsed.get
      if (attempt >= 20) {
        logWarning(s"The lease file ${file(g)} cannot be parsed (${parsed.failed.get.getMessage}): treated as an " +
          "expired lease (its owner crashed while creating it); the next owner takes the next generation.")
        return LeaseOwner(g, "unknown", "unknown", 0L, leaseMs, released = false, corrupt = true)
      }
      attempt += 1
      Thread.sleep(25)
    }
    throw new IllegalStateException("unreachable")
  }
}

private[sharedstate] object OwnerLease {
  private val json = new ObjectMapper()
  private val FileName = """(\d{20})\.json""".r
}
