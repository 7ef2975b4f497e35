package io.sharedstate.spark

import com.tngtech.archunit.core.domain.JavaClasses
import com.tngtech.archunit.core.importer.{ClassFileImporter, Location}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._

/**
 * The package layering of `jvm/spark`, checked on the compiled classes (ArchUnit reads the
 * bytecode, so it sees what Scala really references, including inlined constants' owners):
 * {{{
 *   core <- {rows, rules} <- config <- durable <- cluster <- {write, read, changes, statestore} <- fetch.batch <- fetch <- root
 * }}}
 * A class may depend on its own package and on lower ranks only; packages of the same rank do not
 * depend on each other. Spark-private bridges (`org.apache.spark.sharedstate`,
 * `org.apache.spark.sql.sharedstate`) sit below everything and must not depend on the plugin.
 */
class ArchitectureSuite extends AnyFunSuite {
  private val Root = "io.sharedstate.spark"

  /** Rank of each package of the plugin (relative to the root); a new package must be placed here. */
  private val Ranks: Map[String, Int] = Map(
    "rows" -> 1,
    "rules" -> 1,
    "config" -> 2,
    "durable" -> 3,
    "cluster" -> 4,
    "write" -> 5,
    "read" -> 5,
    "changes" -> 5,
    "statestore" -> 5,
    "statestore.publish" -> 6,
    "fetch.batch" -> 6,
    "fetch" -> 7,
    "txn" -> 7,
    "" -> 8
  )

  // sbt's test classes sit in target/scala-2.13/test-classes, which ArchUnit's predefined option misses.
  private lazy val classes: JavaClasses = new ClassFileImporter()
    .withImportOption((location: Location) => !location.contains("/test-classes/"))
    .importPackages(Root, "org.apache.spark.sharedstate", "org.apache.spark.sql.sharedstate")

  private def packageOf(javaPackage: String): Option[String] =
    if (javaPackage == Root) Some("")
    else if (javaPackage.startsWith(Root + ".")) Some(javaPackage.substring(Root.length + 1))
    else None

  private def edges: Seq[(String, String, String)] = (for {
    c <- classes.asScala.toSeq
    from <- packageOf(c.getPackageName).toSeq
    d <- c.getDirectDependenciesFromSelf.asScala.toSeq
    to <- packageOf(d.getTargetClass.getPackageName).toSeq
    if from != to
  } yield (from, to, s"${c.getName} -> ${d.getTargetClass.getName}")).distinct

  test("the compiled classes are found (the check below is not vacuous)") {
    val packages = classes.asScala.flatMap(c => packageOf(c.getPackageName)).toSet
    assert(packages == Ranks.keySet,
      s"packages of the plugin: ${packages.toSeq.sorted}; ranked: ${Ranks.keySet.toSeq.sorted}")
    assert(edges.size > 50)
  }

  test("every package depends only on lower-ranked packages (no cycle, no upward or sideways edge)") {
    val bad = edges.filter { case (from, to, _) => Ranks(to) >= Ranks(from) }
    val byPair = bad.groupBy { case (from, to, _) =>
      s"${if (from.isEmpty) "(root)" else from} -> ${if (to.isEmpty) "(root)" else to}"
    }
    if (bad.nonEmpty) fail("dependencies against the layering:\n" + byPair.toSeq.sortBy(_._1).map { case (pair, es) =>
      s"  $pair (${es.size}): " + es.map(_._3).sorted.take(6).mkString("; ")
    }.mkString("\n"))
  }

  test("the Spark-private bridges do not depend on the plugin") {
    val bridges = classes.asScala.toSeq.filter(c => packageOf(c.getPackageName).isEmpty)
    assert(bridges.nonEmpty)
    val bad = for {
      c <- bridges
      d <- c.getDirectDependenciesFromSelf.asScala.toSeq
      if packageOf(d.getTargetClass.getPackageName).isDefined
    } yield s"${c.getName} -> ${d.getTargetClass.getName}"
    if (bad.nonEmpty) fail(bad.distinct.sorted.mkString("\n"))
  }

  test("the engine (jvm/core) imports neither Spark nor the plugin") {
    val core = new ClassFileImporter().withImportOption((location: Location) => !location.contains("/test-classes/"))
      .importPackages("io.sharedstate.core")
    assert(core.size > 50)
    val bad = for {
      c <- core.asScala.toSeq
      d <- c.getDirectDependenciesFromSelf.asScala.toSeq
      target = d.getTargetClass.getPackageName
      if target.startsWith("org.apache.spark") || target.startsWith(Root)
    } yield s"${c.getName} -> ${d.getTargetClass.getName}"
    if (bad.nonEmpty) fail(bad.distinct.sorted.take(20).mkString("\n"))
  }
}
