// sharedstate: sbt multi-project build. `core` is the Spark-free engine, `spark` the Spark plugin.
// Versions are fixed by the design brief (Spark 4.2.0, Scala 2.13 as Spark ships it, Delta 4.4.1).

val sparkVersion = "4.2.0"
// delta-spark 4.4.1 is the Python package; Maven Central has 4.4.0 as the newest JVM artifact
// built for Spark 4.2 (io.delta:delta-spark_4.2_2.13), so the JVM side pins that.
val deltaVersion = "4.4.0"
val scalaTestVersion = "3.2.19"

ThisBuild / organization := "io.sharedstate"
ThisBuild / scalaVersion := "2.13.18" // the scala-library that Spark 4.2.0 ships
ThisBuild / javacOptions ++= Seq("--release", "17")
ThisBuild / scalacOptions ++= Seq("-release", "17", "-deprecation", "-feature", "-Wunused:imports", "-Werror")
ThisBuild / licenses := Seq("Apache-2.0" -> url("https://www.apache.org/licenses/LICENSE-2.0"))
ThisBuild / homepage := None
ThisBuild / publishMavenStyle := true

// The flags Spark's own launcher adds on Java 17 (JavaModuleOptions), for forked test JVMs.
val sparkJava17Options = Seq(
  "-XX:+IgnoreUnrecognizedVMOptions",
  "--add-opens=java.base/java.lang=ALL-UNNAMED",
  "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
  "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
  "--add-opens=java.base/java.io=ALL-UNNAMED",
  "--add-opens=java.base/java.net=ALL-UNNAMED",
  "--add-opens=java.base/java.nio=ALL-UNNAMED",
  "--add-opens=java.base/java.util=ALL-UNNAMED",
  "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
  "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
  "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
  "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
  "--add-opens=java.base/sun.nio.cs=ALL-UNNAMED",
  "--add-opens=java.base/sun.security.action=ALL-UNNAMED",
  "--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
  "-Djdk.reflect.useDirectMethodHandle=false",
  "-Dio.netty.tryReflectionSetAccessible=true"
)

lazy val root = (project in file("."))
  .aggregate(core, delivery, spark)
  .settings(
    name := "sharedstate",
    publish / skip := true
  )

lazy val core = (project in file("jvm/core"))
  .settings(
    name := "sharedstate-core",
    libraryDependencies ++= Seq(
      "org.scalatest" %% "scalatest" % scalaTestVersion % Test,
      "org.scalatestplus" %% "scalacheck-1-18" % "3.2.19.0" % Test,
      "org.jetbrains.lincheck" % "lincheck" % "3.7" % Test
    ),
    Test / fork := true,
    Test / javaOptions ++= Seq("-Xmx2g", "-XX:+EnableDynamicAgentLoading", "-Djdk.attach.allowAttachSelf=true"),
    Test / parallelExecution := false
  )

// The conflict-free delivery lanes (Nova 4.2) and prioritised replies: Spark-free like core, in a module
// of their own; the plugin's real-time path uses them (bundled into its assembly like core).
lazy val delivery = (project in file("jvm/delivery"))
  .dependsOn(core % "compile->compile;test->test")
  .settings(
    name := "sharedstate-delivery",
    publish / skip := true,
    libraryDependencies ++= Seq(
      "org.scalatest" %% "scalatest" % scalaTestVersion % Test,
      "org.jetbrains.lincheck" % "lincheck" % "3.7" % Test
    ),
    Test / fork := true,
    Test / javaOptions ++= Seq("-Xmx2g", "-XX:+EnableDynamicAgentLoading", "-Djdk.attach.allowAttachSelf=true"),
    Test / parallelExecution := false
  )

// Jars that go inside the assembly (shaded where they could clash with Spark's own jars).
// Everything else is either provided by Spark or declared in the published pom (Delta).
val bundledJarPrefixes = Seq("sharedstate-core", "sharedstate-delivery")

lazy val spark = (project in file("jvm/spark"))
  .dependsOn(core % "compile->compile;test->test", delivery)
  .settings(
    name := "sharedstate-spark",
    libraryDependencies ++= Seq(
      "org.apache.spark" %% "spark-sql" % sparkVersion % Provided,
      "io.delta" % "delta-spark_4.2_2.13" % deltaVersion,
      "org.scalatest" %% "scalatest" % scalaTestVersion % Test,
      // Spark's own state store and streaming operator suites, run against SharedStateStoreProvider
      "org.apache.spark" %% "spark-sql" % sparkVersion % Test classifier "tests",
      "org.apache.spark" %% "spark-core" % sparkVersion % Test classifier "tests",
      "org.apache.spark" %% "spark-catalyst" % sparkVersion % Test classifier "tests",
      // reads the compiled classes to keep the package dependencies one way (ArchitectureSuite)
      "com.tngtech.archunit" % "archunit" % "1.4.1" % Test
    ),
    Test / fork := true,
    Test / javaOptions ++= sparkJava17Options ++ Seq("-Xmx3g",
      s"-Dlog4j2.configurationFile=file:${(ThisBuild / baseDirectory).value}/conf/log4j2.properties"),
    Test / parallelExecution := false,
    // The assembly holds our classes and the bundled libraries only; Scala and Spark are provided
    // at run time and Delta is pulled in by `--packages` / `spark.jars.packages` through the pom.
    assembly / assemblyOption ~= (_.withIncludeScala(false)),
    assembly / assemblyExcludedJars := {
      (assembly / fullClasspath).value.filter { jar =>
        jar.data.isFile && !bundledJarPrefixes.exists(p => jar.data.getName.startsWith(p))
      }
    },
    assembly / assemblyJarName := s"sharedstate-spark_2.13-${version.value}.jar",
    assembly / assemblyMergeStrategy := {
      case PathList("META-INF", "services", _*) => MergeStrategy.concat
      case PathList("META-INF", _*) => MergeStrategy.discard
      case _ => MergeStrategy.first
    },
    assembly / test := {},
    // Publish the assembly as the main artifact, so `--packages` gets one jar plus Delta.
    Compile / packageBin := assembly.value,
    Compile / packageDoc / publishArtifact := false,
    Compile / packageSrc / publishArtifact := false,
    // `spark/publish` writes the pom and the jar, Maven layout, into a file repository the build owns
    // (target/repo at the root, never ~/.m2): `spark-submit --repositories file://<root>/target/repo
    // --packages io.sharedstate:sharedstate-spark_2.13:<version>` resolves it, Delta from Maven Central.
    // Re-running `make` republishes the same version.
    publishTo := Some(
      Resolver.file("sharedstate-file-repository", (ThisBuild / baseDirectory).value / "target" / "repo")(
        Resolver.mavenStylePatterns
      )
    ),
    publishConfiguration := publishConfiguration.value.withOverwrite(true),
    // 0.x: any minor release may break binary compatibility (recorded in the pom for eviction checks).
    versionScheme := Some("early-semver"),
    pomPostProcess := { node =>
      import scala.xml._
      import scala.xml.transform._
      new RuleTransformer(new RewriteRule {
        override def transform(n: Node): Seq[Node] = n match {
          case d: Elem
              if d.label == "dependency" &&
                bundledJarPrefixes.exists((d \ "artifactId").text.startsWith) => NodeSeq.Empty
          case other => other
        }
      }).transform(node).head
    }
  )

// JMH micro-benchmarks of the engine and its queues, each beside its peers in the same run.
// Not aggregated by `root`: `bin/sbt "bench/Jmh/run ..."` runs them (see benchmarks/README.md).
lazy val bench = (project in file("benchmarks/jmh"))
  // core's test sources hold the transaction workloads (GS, SL, OB, TP) the model tests check
  .dependsOn(core % "compile->compile;compile->test", delivery)
  .enablePlugins(JmhPlugin)
  .settings(
    name := "sharedstate-benchmarks",
    publish / skip := true,
    libraryDependencies ++= Seq(
      "org.jctools" % "jctools-core" % "4.0.5",
      "com.lmax" % "disruptor" % "4.0.0"
    )
  )
