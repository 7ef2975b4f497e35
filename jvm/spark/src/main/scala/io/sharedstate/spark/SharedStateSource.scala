package io.sharedstate.spark

import java.util
import org.apache.spark.sql.connector.catalog.{Table, TableProvider}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.sources.DataSourceRegister
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/** The `sharedstate` data source: `format("sharedstate").option("state", name)`. */
final class SharedStateSource extends TableProvider with DataSourceRegister {
  override def shortName(): String = "sharedstate"

  // Resolving the State here makes an unknown name fail when the query is defined or started.
  override def inferSchema(options: CaseInsensitiveStringMap): StructType = SharedStateTable(options).schema()

  override def getTable(schema: StructType, partitioning: Array[Transform],
      properties: util.Map[String, String]): Table = SharedStateTable(new CaseInsensitiveStringMap(properties))
}
