package io.sharedstate.spark.durable

import java.io.FileNotFoundException
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}
import jdk.jfr.Recording
import jdk.jfr.consumer.RecordingFile
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileAlreadyExistsException, FileContext, FileSystem, Options, Path}
import org.apache.hadoop.fs.permission.FsPermission
import org.apache.hadoop.io.nativeio.NativeIO
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._

/**
 * The fork-free local file systems do what Hadoop's do (the same permissions on files and
 * directories, the same link statuses, FileContext's atomic rename that refuses an existing target)
 * without starting a process, counted by the JVM's own flight recorder (`jdk.ProcessStart`); and a
 * configuration that names its own `file:` implementation keeps it.
 */
class ForkFreeLocalFileSystemSuite extends AnyFunSuite {
  private val hadoop = new Configuration()
  private val forkFree = ForkFreeRawLocalFileSystem.configure(hadoop)

  private def dir(): Path = new Path(Files.createTempDirectory("fork-free").toUri.toString)

  /** `body`'s result and how many processes this JVM started while it ran. */
  private def processesStartedBy[A](body: => A): (A, Int) = {
    val recording = new Recording()
    recording.enable("jdk.ProcessStart")
    recording.start()
    val result =
      try body
      finally recording.stop()
    val file = Files.createTempFile("process-starts", ".jfr")
    recording.dump(file)
    recording.close()
    val starts = RecordingFile.readAllEvents(file).asScala.count(_.getEventType.getName == "jdk.ProcessStart")
    Files.delete(file)
    (result, starts)
  }

  private def permissions(p: Path): String =
    java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(Paths.get(p.toUri)))

  private def write(fs: FileSystem, p: Path, text: String, permission: Option[FsPermission]): Unit = {
    val out = permission match {
      case Some(perm) => fs.create(p, perm, true, 4096, 1.toShort, 1L << 26, null)
      case None => fs.create(p, true)
    }
    try out.write(text.getBytes(UTF_8))
    finally out.close()
  }

  test("the conf serves file: with the fork-free systems; one naming its own implementation keeps it") {
    assert(FileSystem.get(new java.net.URI("file:///"), forkFree).isInstanceOf[ForkFreeLocalFileSystem])
    assert(FileContext.getFileContext(new java.net.URI("file:///"), forkFree).getDefaultFileSystem
        .isInstanceOf[ForkFreeLocalFs])
    val own = new Configuration(hadoop)
    own.set(ForkFreeRawLocalFileSystem.FileSystemKey, "org.apache.hadoop.fs.RawLocalFileSystem")
    assert(ForkFreeRawLocalFileSystem.configure(own).get(ForkFreeRawLocalFileSystem.FileSystemKey) ==
      "org.apache.hadoop.fs.RawLocalFileSystem")
    assert(ForkFreeRawLocalFileSystem.configure(own).get(ForkFreeRawLocalFileSystem.AbstractFileSystemKey) ==
      "org.apache.hadoop.fs.local.LocalFs") // Hadoop's default
  }

  test("files and directories get Hadoop's permissions, with no process started") {
    val d = dir()
    val theirs = FileSystem.newInstance(d.toUri, hadoop)
    val ours = FileSystem.newInstance(d.toUri, forkFree)
    assert(ours.isInstanceOf[ForkFreeLocalFileSystem])
    val asked = Seq(None, Some(new FsPermission("644")), Some(new FsPermission("600")), Some(new FsPermission("750")),
      Some(new FsPermission("777")), Some(new FsPermission("421")))
    asked.zipWithIndex.foreach { case (perm, i) =>
      write(theirs, new Path(d, s"theirs/a/$i"), "x", perm)
      val (_, starts) = processesStartedBy(write(ours, new Path(d, s"ours/a/$i"), "x", perm))
      if (!NativeIO.isAvailable) assert(starts == 0, s"permission $perm: $starts process(es) started")
      assert(permissions(new Path(d, s"ours/a/$i")) == permissions(new Path(d, s"theirs/a/$i")), s"permission $perm")
      assert(permissions(new Path(d, s"ours/a/.$i.crc")) == permissions(new Path(d, s"theirs/a/.$i.crc")))
    }
    assert(permissions(new Path(d, "ours/a")) == permissions(new Path(d, "theirs/a")))
    val (_, starts) = processesStartedBy {
      ours.mkdirs(new Path(d, "ours/b/c"), new FsPermission("700"))
      ours.setPermission(new Path(d, "ours/a/0"), new FsPermission("640"))
    }
    theirs.mkdirs(new Path(d, "theirs/b/c"), new FsPermission("700"))
    theirs.setPermission(new Path(d, "theirs/a/0"), new FsPermission("640"))
    if (!NativeIO.isAvailable) assert(starts == 0)
    Seq("b", "b/c", "a/0").foreach { p =>
      assert(permissions(new Path(d, s"ours/$p")) == permissions(new Path(d, s"theirs/$p")), p)
    }
    // the sticky bit, which java.nio cannot set, still goes to Hadoop
    ours.mkdirs(new Path(d, "ours/sticky"))
    ours.setPermission(new Path(d, "ours/sticky"), new FsPermission("1777"))
    assert(ours.getFileStatus(new Path(d, "ours/sticky")).getPermission.getStickyBit)
  }

  test("link statuses: a file is its own, a symbolic link Hadoop's, a missing path FileNotFoundException") {
    val d = dir()
    val ours = FileSystem.newInstance(d.toUri, forkFree)
    val theirs = FileSystem.newInstance(d.toUri, hadoop)
    val file = new Path(d, "file")
    write(ours, file, "x", None)
    val (status, starts) = processesStartedBy(ours.getFileLinkStatus(file))
    if (!NativeIO.isAvailable) assert(starts == 0)
    assert(!status.isSymlink && status.isFile && status.getLen == 1 && status.getPath == ours.makeQualified(file))
    val link = new Path(d, "link")
    Files.createSymbolicLink(Paths.get(link.toUri), Paths.get(file.toUri))
    def seen(fs: FileSystem, p: Path) = {
      val s = fs.getFileLinkStatus(p)
      (s.isSymlink, s.isFile, s.getLen, s.getPath, if (s.isSymlink) s.getSymlink else null)
    }
    assert(seen(ours, link) == seen(theirs, link))
    assert(seen(ours, file) == seen(theirs, file))
    intercept[FileNotFoundException](ours.getFileLinkStatus(new Path(d, "missing")))
  }

  test("FileContext's rename: atomic, refuses an existing target unless told to overwrite, no process started") {
    val d = dir()
    val ours = FileSystem.newInstance(d.toUri, forkFree)
    val files = FileContext.getFileContext(d.toUri, forkFree)
    val (a, b) = (new Path(d, "a"), new Path(d, "b"))
    write(ours, a, "first", None)
    val (_, starts) = processesStartedBy(files.rename(a, b, Options.Rename.NONE))
    if (!NativeIO.isAvailable) assert(starts == 0)
    assert(!ours.exists(a) && ours.exists(b))
    write(ours, a, "second", None)
    intercept[FileAlreadyExistsException](files.rename(a, b, Options.Rename.NONE))
    files.rename(a, b, Options.Rename.OVERWRITE)
    val in = ours.open(b)
    try assert(new String(in.readAllBytes(), UTF_8) == "second")
    finally in.close()
    // the checksum file moved with it: a read checks it
    assert(ours.exists(new Path(d, ".b.crc")) && !ours.exists(new Path(d, ".a.crc")))
  }
}
