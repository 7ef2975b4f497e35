package io.sharedstate.spark.durable

import io.delta.kernel.types.{BinaryType, IntegerType, LongType, StringType, StructType}
import io.delta.kernel.utils.DataFileStatus
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.hadoop.{ParquetFileWriter, ParquetWriter}
import org.apache.parquet.hadoop.api.WriteSupport
import org.apache.parquet.hadoop.metadata.CompressionCodecName
import org.apache.parquet.hadoop.util.HadoopOutputFile
import org.apache.parquet.io.OutputFile
import org.apache.parquet.io.api.{Binary, RecordConsumer}
import org.apache.parquet.schema.{LogicalTypeAnnotation, MessageType, PrimitiveType, Type, Types}
import scala.jdk.CollectionConverters._

/**
 * Writes the durable tables' Parquet files with Parquet's own writer rather than Delta Kernel's:
 * Kernel's default writer hands Parquet only a few named settings (the codec, block and page sizes,
 * the dictionary) and never the Hadoop conf, so Parquet's zstd runs at its default level 3 whatever
 * `parquet.compression.codec.zstd.level` says. Here the writer gets the table's conf, level and all.
 * The file is what Kernel's writer would write (the same columns, by name, required or optional as
 * the schema says, Parquet's own column statistics, no Delta statistics); Kernel adds it to the table
 * as it adds its own ([[KernelTables.appendActions]]).
 */
private[durable] object ColumnsParquetWriter {

  /** One Parquet file in `directory` holding `rows` rows of `columns` (one array per field of `schema`). */
  def write(conf: Configuration, directory: String, schema: StructType, columns: IndexedSeq[Array[_ <: AnyRef]],
      rows: Int): DataFileStatus = {
    require(columns.length == schema.length(), s"${columns.length} columns for a schema of ${schema.length()}")
    val message = messageType(schema)
    val file = new Path(directory, s"${java.util.UUID.randomUUID()}-000.parquet")
    val writer = new Builder(HadoopOutputFile.fromPath(file, conf), new Rows(message, schema, columns))
      .withConf(conf)
      .withCompressionCodec(CompressionCodecName.fromConf(conf.get(KernelTables.CompressionKey)))
      .withDictionaryEncoding(conf.getBoolean(KernelTables.DictionaryKey, true))
      .withWriteMode(ParquetFileWriter.Mode.CREATE)
      .build()
    try {
      var r = 0
      while (r < rows) { writer.write(Integer.valueOf(r)); r += 1 }
    } finally writer.close()
    val status = file.getFileSystem(conf).getFileStatus(file)
    new DataFileStatus(status.getPath.toString, status.getLen, status.getModificationTime, java.util.Optional.empty())
  }

  // The columns as Kernel's writer declares them: by name, INT64/INT32/BINARY (strings annotated as
  // such), required unless nullable.
  private def messageType(schema: StructType): MessageType = {
    val fields = schema.fields().asScala.map { f =>
      val repetition = if (f.isNullable) Type.Repetition.OPTIONAL else Type.Repetition.REQUIRED
      (f.getDataType match {
        case _: LongType => Types.primitive(PrimitiveType.PrimitiveTypeName.INT64, repetition)
        case _: IntegerType => Types.primitive(PrimitiveType.PrimitiveTypeName.INT32, repetition)
        case _: BinaryType => Types.primitive(PrimitiveType.PrimitiveTypeName.BINARY, repetition)
        case _: StringType =>
          Types.primitive(PrimitiveType.PrimitiveTypeName.BINARY, repetition).as(LogicalTypeAnnotation.stringType())
        case other => throw new IllegalArgumentException(
            s"column '${f.getName}': type $other is not one the durable tables have (bigint, int, binary, string)")
      }).named(f.getName): Type
    }
    new MessageType("spark_schema", fields.asJava)
  }

  // Row r of the columns, straight to Parquet's record consumer (no record object per row).
  private final class Rows(message: MessageType, schema: StructType, values: IndexedSeq[Array[_ <: AnyRef]])
      extends WriteSupport[Integer] {
    private var out: RecordConsumer = _
    // Read once: this runs per value of every row a writer task logs.
    private val columns: Array[Array[_ <: AnyRef]] = values.toArray
    private val names: Array[String] = Array.tabulate(schema.length())(schema.at(_).getName)

    override def init(configuration: Configuration): WriteSupport.WriteContext =
      new WriteSupport.WriteContext(message, java.util.Map.of())

    override def prepareForWrite(recordConsumer: RecordConsumer): Unit = out = recordConsumer

    override def write(row: Integer): Unit = {
      val r = row.intValue
      out.startMessage()
      var c = 0
      while (c < columns.length) {
        columns(c)(r) match {
          case null => () // an optional field left out is null
          case v =>
            val name = names(c)
            out.startField(name, c)
            v match {
              case x: java.lang.Long => out.addLong(x.longValue)
              case x: java.lang.Integer => out.addInteger(x.intValue)
              case x: Array[Byte] => out.addBinary(Binary.fromConstantByteArray(x)) // not copied
              case x: String => out.addBinary(Binary.fromString(x))
              case x => throw new IllegalArgumentException(
                  s"column '$name': a ${x.getClass.getName} where a long, an int, bytes or a string go")
            }
            out.endField(name, c)
        }
        c += 1
      }
      out.endMessage()
    }
  }

  private final class Builder(file: OutputFile, rows: Rows) extends ParquetWriter.Builder[Integer, Builder](file) {
    override def self(): Builder = this
    override def getWriteSupport(conf: Configuration): WriteSupport[Integer] = rows
  }
}
