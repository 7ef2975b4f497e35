package io.sharedstate.spark.statestore

import io.sharedstate.spark.durable.ForkFreeRawLocalFileSystem
import java.io.{DataInputStream, DataOutputStream, EOFException, IOException}
import java.nio.charset.StandardCharsets.US_ASCII
import java.util.UUID
import java.util.zip.{CRC32, CheckedInputStream, CheckedOutputStream}

import net.jpountz.lz4.{LZ4BlockInputStream, LZ4BlockOutputStream, LZ4Factory}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.sql.catalyst.expressions.UnsafeRow

/**
 * The files of one store under `stateStoreId.storeCheckpointLocation()`:
 *  - `<version>.changelog`: the keys a version wrote, each with its value or a removal;
 *  - `<version>.snapshot`: every key and value of a version.
 * One file per (store, version) and kind, written to a temporary name and renamed over any earlier
 * attempt, so re-committing a version replaces it. Both are LZ4 blocks around a framed record
 * stream: 4-byte magic, format version, records, an end mark, then the CRC-32 of all before it
 * (the framing of the engine's own codec). A record is `keyLength, key bytes, valueLength (-1 for a
 * removal), value bytes`.
 */
private[sharedstate] final class StoreFiles(val dir: Path, hadoopConf: Configuration) {
  import StoreFiles._

  private lazy val fs: FileSystem = dir.getFileSystem(ForkFreeRawLocalFileSystem.configure(hadoopConf))

  def mkdirs(): Unit = { fs.mkdirs(dir); () }

  def changelog(version: Long): Path = new Path(dir, s"$version.$ChangelogSuffix")
  def snapshot(version: Long): Path = new Path(dir, s"$version.$SnapshotSuffix")

  /** Writes `path` atomically (temp file, then rename over an existing one); returns its size. */
  def write(path: Path, magic: Array[Byte])(records: RecordWriter => Unit): Long = {
    val temp = new Path(dir, s".${path.getName}.${UUID.randomUUID()}.tmp")
    val raw = fs.create(temp, true)
    try {
      val crc = new CRC32
      val data = new DataOutputStream(new CheckedOutputStream(new LZ4BlockOutputStream(raw, 1 << 16), crc))
      data.write(magic)
      data.writeByte(FormatVersion)
      records(new RecordWriter(data))
      data.writeInt(-1)
      data.flush()
      val checksum = crc.getValue.toInt
      data.writeInt(checksum)
      data.close()
    } catch {
      case e: Throwable =>
        try raw.close()
        catch { case _: Throwable => }
        fs.delete(temp, false)
        throw e
    }
    if (!fs.rename(temp, path)) {
      // HDFS and the local FS refuse to rename over a file: this is a re-commit of the version.
      if (fs.exists(path)) fs.delete(path, false)
      if (!fs.rename(temp, path)) {
        fs.delete(temp, false)
        throw new IOException(s"Failed to rename $temp to $path")
      }
    }
    fs.getFileStatus(path).getLen
  }

  /** Reads every record of `path` (value null for a removal), checking magic, format and CRC. */
  def read(path: Path, magic: Array[Byte], keyFields: Int, valueFields: Int)(record: (
          UnsafeRow, UnsafeRow) => Unit): Unit = {
    val crc = new CRC32
    val in = new DataInputStream(
      LZ4BlockInputStream.newBuilder().withDecompressor(LZ4Factory.fastestInstance().safeDecompressor()).build(
        fs.open(path)))
    try {
      val data = new DataInputStream(new CheckedInputStream(in, crc))
      val m = new Array[Byte](4)
      data.readFully(m)
      if (!java.util.Arrays.equals(m, magic))
        throw new IOException(s"$path is not a sharedstate store ${new String(magic, US_ASCII)} file")
      val format = data.readUnsignedByte()
      if (format != FormatVersion)
        throw new IOException(s"$path: unsupported format version $format (this reads $FormatVersion)")
      var keySize = data.readInt()
      while (keySize >= 0) {
        val key = new UnsafeRow(keyFields)
        key.pointTo(readBytes(data, keySize), keySize)
        val valueSize = data.readInt()
        val value = if (valueSize < 0) null
        else {
          val v = new UnsafeRow(valueFields)
          v.pointTo(readBytes(data, valueSize), valueSize)
          v
        }
        record(key, value)
        keySize = data.readInt()
      }
      val expected = crc.getValue.toInt
      val stored = in.readInt()
      if (stored != expected) throw new IOException(
        s"$path is corrupt: CRC-32 ${Integer.toHexString(stored)} stored, ${Integer.toHexString(expected)} computed")
    } catch {
      case _: EOFException => throw new IOException(s"$path is truncated")
    } finally in.close()
  }

  /** The versions that have a changelog and those that have a snapshot. */
  def versions(): (Set[Long], Set[Long]) = {
    if (!fs.exists(dir)) return (Set.empty, Set.empty)
    val names = fs.listStatus(dir).iterator.map(_.getPath.getName).filterNot(_.startsWith(".")).toSeq
    def of(suffix: String) = names.flatMap { n =>
      val dot = n.lastIndexOf('.')
      if (dot > 0 && n.substring(dot + 1) == suffix) n.substring(0, dot).toLongOption else None
    }.toSet
    (of(ChangelogSuffix), of(SnapshotSuffix))
  }

  def delete(path: Path): Unit = { fs.delete(path, false); () }

  private def readBytes(in: DataInputStream, n: Int): Array[Byte] = {
    if (n > (1 << 30)) throw new IOException(s"corrupt record: a row claims $n bytes")
    val b = new Array[Byte](n)
    in.readFully(b)
    b
  }
}

private[sharedstate] object StoreFiles {
  val ChangelogSuffix = "changelog"
  val SnapshotSuffix = "snapshot"
  val ChangelogMagic: Array[Byte] = "SSCL".getBytes(US_ASCII)
  val SnapshotMagic: Array[Byte] = "SSSN".getBytes(US_ASCII)
  val FormatVersion = 1

  final class RecordWriter(out: DataOutputStream) {
    private val buffer = new Array[Byte](4096)

    /** `value` null writes a removal. */
    def write(key: UnsafeRow, value: UnsafeRow): Unit = {
      out.writeInt(key.getSizeInBytes)
      key.writeToStream(out, buffer)
      if (value == null) out.writeInt(-1)
      else {
        out.writeInt(value.getSizeInBytes)
        value.writeToStream(out, buffer)
      }
    }
  }
}
