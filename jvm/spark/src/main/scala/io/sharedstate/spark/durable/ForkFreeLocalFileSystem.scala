package io.sharedstate.spark.durable

import java.net.URI
import java.nio.file.Files
import java.nio.file.attribute.PosixFilePermission
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{
  ChecksumFs,
  DelegateToFileSystem,
  FileStatus,
  FsConstants,
  FsServerDefaults,
  LocalFileSystem,
  Path,
  RawLocalFileSystem
}
import org.apache.hadoop.fs.local.LocalConfigKeys
import org.apache.hadoop.fs.permission.{FsAction, FsPermission}
import org.apache.hadoop.io.nativeio.NativeIO

/**
 * Hadoop's local file system without a child process per call. Without Hadoop's native library
 * (neither the pip pyspark package nor Maven ships one), `RawLocalFileSystem` runs `chmod` in a child
 * process for every file and directory it creates (and for each file's checksum file), and `readlink`
 * for both sides of every rename: a Delta commit of a durable table forked the JVM about ten times
 * (a test journaling 80 epochs forked 6,300 times in 44 s). Here permissions are set and symbolic links
 * recognised with java.nio, in the same process; everything else, and every call when the native
 * library is loaded, is Hadoop's own. A permission with the sticky bit (which java.nio cannot set),
 * or on a file store without POSIX permissions, still goes to Hadoop.
 */
class ForkFreeRawLocalFileSystem extends RawLocalFileSystem {

  override def setPermission(p: Path, permission: FsPermission): Unit =
    if (NativeIO.isAvailable || permission.getStickyBit) super.setPermission(p, permission)
    else
      try Files.setPosixFilePermissions(pathToFile(p).toPath, ForkFreeRawLocalFileSystem.posix(permission))
      catch { case _: UnsupportedOperationException => super.setPermission(p, permission) } // no POSIX view

  // A path that is not a symbolic link has its own status as its link status (what Hadoop returns
  // after `readlink` printed nothing); a link, or a missing path's FileNotFoundException, is Hadoop's.
  override def getFileLinkStatus(f: Path): FileStatus =
    if (NativeIO.isAvailable || Files.isSymbolicLink(pathToFile(f).toPath)) super.getFileLinkStatus(f)
    else getFileStatus(f)
}

object ForkFreeRawLocalFileSystem {
  private val Bits = Seq(
    (FsAction.READ, PosixFilePermission.OWNER_READ, PosixFilePermission.GROUP_READ, PosixFilePermission.OTHERS_READ),
    (FsAction.WRITE, PosixFilePermission.OWNER_WRITE, PosixFilePermission.GROUP_WRITE,
      PosixFilePermission.OTHERS_WRITE),
    (FsAction.EXECUTE, PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.GROUP_EXECUTE,
      PosixFilePermission.OTHERS_EXECUTE)
  )

  /** `permission`'s user, group and other bits as java.nio's set. */
  def posix(permission: FsPermission): java.util.Set[PosixFilePermission] = {
    val out = java.util.EnumSet.noneOf(classOf[PosixFilePermission])
    Bits.foreach { case (action, user, group, other) =>
      if (permission.getUserAction.implies(action)) out.add(user)
      if (permission.getGroupAction.implies(action)) out.add(group)
      if (permission.getOtherAction.implies(action)) out.add(other)
    }
    out
  }

  /**
   * `conf` with the `file:` scheme served by the fork-free file systems (both Hadoop's FileSystem and
   * FileContext's AbstractFileSystem, which Delta's log store renames with), unless it names other
   * implementations than Hadoop's defaults. FileSystem's cache is off for `file:` in it: the cache is
   * shared by the JVM and keyed by scheme alone, so an instance Spark made first would be reused.
   * The class loader is the one that loaded these classes, so the names resolve whatever thread
   * made `conf`.
   */
  def configure(conf: Configuration): Configuration = {
    val c = new Configuration(conf)
    val fs = Option(c.get(FileSystemKey))
    val afs = Option(c.get(AbstractFileSystemKey))
    if (fs.forall(_ == classOf[LocalFileSystem].getName) && afs.forall(_ == DefaultAbstractFileSystem)) {
      c.setClassLoader(classOf[ForkFreeRawLocalFileSystem].getClassLoader)
      c.set(FileSystemKey, classOf[ForkFreeLocalFileSystem].getName)
      c.setBoolean("fs.file.impl.disable.cache", true)
      c.set(AbstractFileSystemKey, classOf[ForkFreeLocalFs].getName)
    }
    c
  }

  val FileSystemKey = "fs.file.impl"
  val AbstractFileSystemKey = "fs.AbstractFileSystem.file.impl"
  private val DefaultAbstractFileSystem = "org.apache.hadoop.fs.local.LocalFs"
}

/** Hadoop's `LocalFileSystem` (checksummed) over [[ForkFreeRawLocalFileSystem]]. */
class ForkFreeLocalFileSystem extends LocalFileSystem(new ForkFreeRawLocalFileSystem)

/** FileContext's local file system (Hadoop's `LocalFs`: checksummed) over [[ForkFreeRawLocalFileSystem]]. */
class ForkFreeLocalFs(uri: URI, conf: Configuration) extends ChecksumFs(new ForkFreeRawLocalFs(uri, conf)) {
  def this(conf: Configuration) = this(FsConstants.LOCAL_FS_URI, conf)
}

/** Hadoop's `RawLocalFs` over [[ForkFreeRawLocalFileSystem]] (Hadoop's own constructors are not public). */
class ForkFreeRawLocalFs(uri: URI, conf: Configuration)
    extends DelegateToFileSystem(uri, new ForkFreeRawLocalFileSystem, conf, FsConstants.LOCAL_FS_URI.getScheme, false) {
  override def getUriDefaultPort: Int = -1
  override def getServerDefaults(f: Path): FsServerDefaults = LocalConfigKeys.getServerDefaults
  @deprecated("Hadoop's own", "")
  override def getServerDefaults(): FsServerDefaults = LocalConfigKeys.getServerDefaults
  override def isValidName(src: String): Boolean = true
}
