package io.sharedstate.spark.durable

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession

/**
 * Deletes from disk the files that retention removed from a durable State's table (the changelog files
 * a trim covered, the older snapshots' files) once they were removed `retentionMs` ago: Delta's VACUUM
 * in LITE mode, which finds them from the log's remove actions rather than by listing the table. A
 * retention trim writes only the log, so without it a long-running State's directory would keep every
 * file it ever wrote. Runs in a session of its own that allows a retention below Delta's default
 * check (`spark.sharedstate.vacuum.retention` decides) and logs no VACUUM commits: the State's owner
 * stays the table's only committer.
 */
private[durable] object TableVacuum extends Logging {

  /**
   * VACUUM LITE of the Delta table at `path`, keeping removed files younger than `retentionMs` (in whole
   * hours, rounded up: Delta rounds RETAIN to hours; 0 deletes every removed file at once).
   */
  def run(spark: SparkSession, path: String, retentionMs: Long): Unit = {
    val session = spark.newSession()
    // The owner's session settings (a file system's credentials set at run time) hold here too.
    spark.conf.getAll.foreach { case (k, v) =>
      if (spark.conf.isModifiable(k)) session.conf.set(k, v)
    }
    session.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    // Else Delta replaces any RETAIN but 0 by the table's delta.deletedFileRetentionDuration (7 days).
    session.conf.set("spark.databricks.delta.vacuum.retentionWindowIgnore.enabled", "false")
    session.conf.set("spark.databricks.delta.vacuum.logging.enabled", "false")
    val hours = (retentionMs + 3600000L - 1) / 3600000L
    val table = s"'${path.replace("\\", "\\\\").replace("'", "\\'")}'"
    try session.sql(s"VACUUM $table LITE RETAIN $hours HOURS").collect()
    catch {
      // LITE refuses when the log no longer names every removable file (its commits were cleaned up):
      // FULL lists the table instead. It also deletes files no commit added, by age, so only with a
      // retention far longer than any write takes (a task's file is on disk before its commit).
      case e: Exception
          if Option(e.getMessage).exists(_.contains("DELTA_CANNOT_VACUUM_LITE")) &&
            retentionMs >= FullAfterMs =>
        logInfo(s"VACUUM LITE of $path refused (${e.getMessage}); VACUUM FULL instead")
        session.sql(s"VACUUM $table RETAIN $hours HOURS").collect()
    }
  }

  /** The least retention VACUUM FULL runs with (see [[run]]). */
  val FullAfterMs: Long = 3600000L
}
