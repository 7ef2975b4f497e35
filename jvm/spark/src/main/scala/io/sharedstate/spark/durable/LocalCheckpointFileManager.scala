package io.sharedstate.spark.durable

import java.io.FileOutputStream
import java.nio.file.{Files, Paths}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FSDataOutputStream, Path}
import org.apache.spark.sql.execution.streaming.checkpointing.{
  CheckpointFileManager,
  FileSystemBasedCheckpointFileManager
}

/**
 * Spark's file-system checkpoint file manager, except that on a local file system it creates files
 * and directories with java.nio. Without Hadoop's native library, Hadoop's local file system runs
 * `chmod` in a child process for every file it creates (and for the checksum file beside it) and
 * every directory: two forks of the JVM per offset, commit, batch-bound or waiting-events file, which
 * cost a micro-batch's driver thread (and each fetch join task) milliseconds apiece on a loaded
 * machine. Files are still written to a temporary name and renamed into place (atomic), without
 * checksum files (Hadoop reads a file without one as is). Other file systems: unchanged.
 *
 * Usable as Spark's `spark.sql.streaming.checkpointFileManagerClass`; the plugin's own checkpoint
 * files (fetch joins' batch bounds and waiting events) use it through [[LocalCheckpointFileManager.create]].
 */
class LocalCheckpointFileManager(path: Path, hadoopConf: Configuration)
    extends FileSystemBasedCheckpointFileManager(path, hadoopConf) {

  private val local = fs.getScheme == "file"

  override def createTempFile(path: Path): FSDataOutputStream =
    if (!local) super.createTempFile(path)
    else {
      val file = Paths.get(fs.makeQualified(path).toUri)
      Files.createDirectories(file.getParent)
      // overwrite, as Spark's temp files are: the name is random, a left-over is an aborted attempt's
      new FSDataOutputStream(new FileOutputStream(file.toFile, false), null)
    }

  override def mkdirs(path: Path): Unit =
    if (!local) super.mkdirs(path) else Files.createDirectories(Paths.get(fs.makeQualified(path).toUri))
}

object LocalCheckpointFileManager {

  /** The checkpoint file manager for `dir`: this one on a local file system, else Spark's configured one. */
  def create(dir: Path, conf: Configuration): CheckpointFileManager =
    if (dir.getFileSystem(conf).getScheme == "file") new LocalCheckpointFileManager(dir, conf)
    else CheckpointFileManager.create(dir, conf)
}
