package io.sharedstate.spark.durable

import com.fasterxml.jackson.databind.ObjectMapper
import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.{Executors, ScheduledExecutorService, TimeUnit}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileAlreadyExistsException, Path}
import org.apache.spark.internal.Logging
import scala.util.Try

/** Who owns a State's root: the application, when it last renewed the lease, whether it let go. */
private[sharedstate] final case class LeaseOwner(generation: Long, app: String, appName: String, renewedMs: Long,
    leaseMs: Long,
    released: Boolean) {

  /** The owner's own lease length decides (applications may configure different ones). */
  def liveAt(nowMs: Long): Boolean = !released && nowMs - renewedMs <= leaseMs
  def describe: String = s"application $app ($appName), lease renewed at ${java.time.Instant.ofEpochMilli(renewedMs)}"
}

/**
 * The single-writer lease of a State's root, in `<root>/<state>/owner/`: one small JSON file per
 * ownership generation. Taking the State over creates the next generation's file, which the file
 * system does atomically and for one application only (create without overwrite); the owner renews
 * it every third of the lease. Another application may take over once the lease has not been renewed
 * for `leaseMs` (the owner died) or was released (it stopped). An owner that finds a newer generation
 * than its own has lost the State and writes nothing more.
 */
private[sharedstate] final class OwnerLease(dir: Path, conf: Configuration, app: String, appName: String, leaseMs: Long)
    extends Logging {
  import OwnerLease._
  private val fs = dir.getFileSystem(conf)
  @volatile private var generation = -1L
  @volatile private var renewer: Option[ScheduledExecutorService] = None

  /** True while this application holds the lease. */
  def held: Boolean = generation >= 0

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
      case Some(o) if o.app == app && !o.released => start(o.generation); None
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
    val every = math.max(100L, leaseMs / 3)
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

  private def write(g: Long, released: Boolean, overwrite: Boolean): Unit = {
    val text = json.writeValueAsString(java.util.Map.of(
        "app",
        app,
        "app_name",
        appName,
        "renewed_ms",
        java.lang.Long.valueOf(System.currentTimeMillis()),
        "lease_ms",
        java.lang.Long.valueOf(leaseMs),
        "released",
        java.lang.Boolean.valueOf(released)
      ))
    val out = fs.create(file(g), overwrite)
    try out.write(text.getBytes(UTF_8))
    finally out.close()
  }

  // A file being rewritten by its owner may be read empty: read again (it is a live owner meanwhile).
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
      if (parsed.isSuccess || attempt >= 20) {
        return parsed.getOrElse(LeaseOwner(g, "unknown", "unknown", System.currentTimeMillis(), leaseMs,
            released = false))
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
