package io.sharedstate.spark.durable

import java.io.FileNotFoundException
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}
import org.apache.commons.io.IOUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileAlreadyExistsException, Path}

import org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._

/**
 * The fork-free checkpoint file manager keeps Spark's contract on a local file system: a file
 * created atomically appears only once closed and whole, a cancelled one never; overwrite or not
 * as asked; directories made as needed; and Spark's own manager reads what it wrote (no checksum file).
 */
class LocalCheckpointFileManagerSuite extends AnyFunSuite {
  private val conf = new Configuration()
  private def dir(): Path = new Path(Files.createTempDirectory("checkpoint-files").toUri.toString, "a/b")
  private def read(m: FileSystemBasedCheckpointFileManager, p: Path): String =
    new String(IOUtils.toByteArray(m.open(p)), UTF_8)

  test("atomic create: visible only when closed, never when cancelled, overwrite as asked; read back by Spark's") {
    val d = dir()
    val m = LocalCheckpointFileManager.create(d, conf).asInstanceOf[LocalCheckpointFileManager]
    m.mkdirs(d)
    val file = new Path(d, "0")
    val out = m.createAtomic(file, false)
    out.write("first".getBytes(UTF_8))
    assert(!m.exists(file))
    out.close()
    assert(m.exists(file))
    val spark = new FileSystemBasedCheckpointFileManager(d, conf)
    assert(read(spark, file) == "first")
    // nothing but the file itself: no temporary file left, no checksum file beside it
    def names = Files.list(Paths.get(d.toUri)).iterator().asScala.map(_.getFileName.toString).toSet
    assert(names == Set("0"))

    intercept[FileAlreadyExistsException](m.createAtomic(file, false).close())
    val replaced = m.createAtomic(file, true)
    replaced.write("second".getBytes(UTF_8))
    replaced.close()
    assert(read(spark, file) == "second")

    val dropped = m.createAtomic(new Path(d, "1"), false)
    dropped.write("never".getBytes(UTF_8))
    dropped.cancel()
    assert(!m.exists(new Path(d, "1")))
    intercept[FileNotFoundException](m.open(new Path(d, "1")))
    // (a refused rename leaves its hidden temporary file, as Spark's own manager does)
    assert(m.list(d).map(_.getPath.getName).filterNot(_.startsWith(".")).toSet == Set("0"))
  }

  test("a file in a directory not made yet, and a deep mkdirs") {
    val d = dir()
    val m = LocalCheckpointFileManager.create(d, conf)
    val deep = new Path(d, "x/y/z")
    m.mkdirs(deep)
    assert(Files.isDirectory(Paths.get(deep.toUri)))
    val out = m.createAtomic(new Path(d, "p/q/file"), false)
    out.write(1)
    out.close()
    assert(m.exists(new Path(d, "p/q/file")))
    m.delete(new Path(d, "p"))
    assert(!m.exists(new Path(d, "p/q/file")))
  }
}
