package io.sharedstate.spark.config

import io.sharedstate.spark.durable.MetadataTable
import io.sharedstate.spark.rows.StateSchemas
import io.sharedstate.spark.write.PartialInstance

import io.sharedstate.core.{SharedStateException, StateSpec}
import io.sharedstate.core.partial.PartialValues
import io.sharedstate.core.row.{BinaryRow, ValueType}
import java.io.{ByteArrayInputStream, ByteArrayOutputStream, ObjectInputStream, ObjectOutputStream}
import org.apache.spark.sql.types.StructType
import org.scalatest.funsuite.AnyFunSuite

/** The Spark side's handling of partial States: creation options, metadata, writer instances, row views. */
class PartialStateOptionsSuite extends AnyFunSuite {
  private def spec(o: StateOptions) = o.spec("p", "k STRING", "w ARRAY<DOUBLE>", 2, "sum")

  test("partial and instances become the spec; names are case-insensitive, class names are kept") {
    val s = spec(StateOptions(partial = " SUM ", instances = "Query"))
    assert(s.partial == "sum" && s.instances == StateSpec.QueryInstances && s.isPartial)
    assert(spec(StateOptions()).partial == "" && !spec(StateOptions()).isPartial)
    val e = intercept[SharedStateException](spec(StateOptions(instances = "task")))
    assert(e.getMessage.contains("option 'instances' applies to partial States only"))
    val k = intercept[SharedStateException](spec(StateOptions(partial = "sum", instances = "executor")))
    assert(k.getMessage.contains("option 'instances' is 'executor'") && k.getMessage.contains("task, query"))
  }

  test("durable metadata keeps partial and instances; metadata written before them reads as a plain State") {
    val s = spec(StateOptions(partial = "max", instances = "query"))
    assert(MetadataTable.fromJson(MetadataTable.toJson(s)) == s)
    val old =
      MetadataTable.toJson(spec(StateOptions())).replace(",\"partial\":\"\"", "").replace(",\"instances\":\"task\"", "")
    assert(!old.contains("partial") && MetadataTable.fromJson(old) == spec(StateOptions()))
  }

  test("a writer task's instance: its partition, a stable number of the query, or none") {
    val opts = UpdateOptions("p", Array(0), 1, Array(2), 0L, new StructType())
    assert(PartialInstance.of(opts, "q", 3) == -1)
    assert(PartialInstance.of(opts.copy(partialInstances = "task"), "q", 3) == 3)
    val byQuery = PartialInstance.of(opts.copy(partialInstances = "query"), "query-id", 3)
    assert(byQuery >= 0 && byQuery == PartialInstance.of(opts.copy(partialInstances = "query"), "query-id", 0))
    val task = opts.copy(partialInstances = "task")
    assert(PartialInstance.checkTasks(task, "q", None, 3) == 3 && PartialInstance.checkTasks(task, "q", Some(3),
      3) == 3)
    val e = intercept[SharedStateException](PartialInstance.checkTasks(task, "q", Some(3), 5))
    assert(e.getMessage.contains("without a known partitioning") && e.getMessage.contains("had 3 partitions, now 5"))
    assert(PartialInstance.checkTasks(opts.copy(partialInstances = "query"), "q", Some(3), 5) == 5)
  }

  test("rows show the merged value, rejected updates their own value, and the view survives serialization") {
    val s = spec(StateOptions(partial = "sum"))
    val schemas = roundTrip(StateSchemas.of(s))
    assert(schemas == StateSchemas.of(s) && schemas.hashCode == StateSchemas.of(s).hashCode)
    val t = ValueType.parse("w ARRAY<DOUBLE>")
    def v(xs: Double*) = BinaryRow.encode(t, Array[AnyRef](xs.map(Double.box).toArray[AnyRef]))
    val stored = PartialValues.encode(Array(0, 2), Array(v(1, 2), v(10, 20, 30)))
    val merged = BinaryRow.decode(t, schemas.shown(stored))(0).asInstanceOf[Array[AnyRef]].toSeq
    assert(merged == Seq(11.0, 22.0, 30.0))
    assert(schemas.updateValue(PartialValues.single(2, v(5))).toSeq == v(5).toSeq)
    assert(StateSchemas.of(spec(StateOptions())).shown(v(1)).toSeq == v(1).toSeq)
  }

  private def roundTrip[T](x: T): T = {
    val bytes = new ByteArrayOutputStream()
    val out = new ObjectOutputStream(bytes)
    out.writeObject(x)
    out.close()
    new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray)).readObject().asInstanceOf[T]
  }
}
