package io.sharedstate.spark.durable

import io.delta.kernel.types.{BinaryType, IntegerType, LongType, StructType}
import io.delta.kernel.utils.DataFileStatus
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.hadoop.ParquetFileWriter
import org.apache.parquet.hadoop.example.ExampleParquetWriter
import org.apache.parquet.hadoop.metadata.CompressionCodecName
import org.apache.parquet.hadoop.util.HadoopOutputFile
import org.apache.parquet.io.api.Binary
import org.apache.parquet.schema.{MessageType, PrimitiveType, Type, Types}
import org.apache.parquet.example.data.simple.SimpleGroupFactory
import scala.jdk.CollectionConverters._

/**
 * Writes the snapshots table's Parquet files with Parquet's own writer rather than Delta Kernel's:
 * Kernel's default writer hands Parquet only a few named settings (the codec, block and page sizes,
 * the dictionary) and never the Hadoop conf, so Parquet's zstd runs at its default level 3 whatever
 * `parquet.compression.codec.zstd.level` says. Here the writer gets the table's conf, level and all.
 * The file is what Kernel's writer would write (the same columns, by name, required or optional as
 * the schema says, no statistics); Kernel adds it to the table as it adds its own ([[KernelTables.appendActions]]).
 */
private[durable] object SnapshotParquetWriter {

  /** One Parquet file in `directory` holding `rows` rows of `columns` (one array per field of `schema`). */
  def write(conf: Configuration, directory: String, schema: StructType, columns: IndexedSeq[Array[_ <: AnyRef]],
      rows: Int): DataFileStatus = {
    require(columns.length == schema.length(), s"${columns.length} columns for a schema of ${schema.length()}")
    val message = messageType(schema)
    val file = new Path(directory, s"${java.util.UUID.randomUUID()}-000.parquet")
    val writer = ExampleParquetWriter.builder(HadoopOutputFile.fromPath(file, conf))
      .withConf(conf)
      .withType(message)
      .withCompressionCodec(CompressionCodecName.fromConf(conf.get(KernelTables.CompressionKey)))
      .withDictionaryEncoding(conf.getBoolean(SnapshotTable.DictionaryKey, true))
      .withWriteMode(ParquetFileWriter.Mode.CREATE)
      .build()
    val groups = new SimpleGroupFactory(message)
    try {
      var r = 0
      while (r < rows) {
        val g = groups.newGroup()
        var c = 0
        while (c < columns.length) {
          columns(c)(r) match {
            case null => () // an optional field left out is null
            case v: java.lang.Long => g.add(c, v.longValue)
            case v: java.lang.Integer => g.add(c, v.intValue)
            case v: Array[Byte] => g.add(c, Binary.fromConstantByteArray(v)) // not copied
            case v => throw new IllegalArgumentException(
                s"column '${schema.at(c).getName}': a ${v.getClass.getName} where a long, an int or bytes go")
          }
          c += 1
        }
        writer.write(g)
        r += 1
      }
    } finally writer.close()
    val status = file.getFileSystem(conf).getFileStatus(file)
    new DataFileStatus(status.getPath.toString, status.getLen, status.getModificationTime, java.util.Optional.empty())
  }

  // The columns as Kernel's writer declares them: by name, INT64/INT32/BINARY, required unless nullable.
  private def messageType(schema: StructType): MessageType = {
    val fields = schema.fields().asScala.map { f =>
      val repetition = if (f.isNullable) Type.Repetition.OPTIONAL else Type.Repetition.REQUIRED
      val primitive = f.getDataType match {
        case _: LongType => PrimitiveType.PrimitiveTypeName.INT64
        case _: IntegerType => PrimitiveType.PrimitiveTypeName.INT32
        case _: BinaryType => PrimitiveType.PrimitiveTypeName.BINARY
        case other => throw new IllegalArgumentException(
            s"column '${f.getName}': type $other is not one the snapshots table has (bigint, int, binary)")
      }
      Types.primitive(primitive, repetition).named(f.getName): Type
    }
    new MessageType("spark_schema", fields.asJava)
  }
}
