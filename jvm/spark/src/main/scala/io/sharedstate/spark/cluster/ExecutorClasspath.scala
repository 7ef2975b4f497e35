package io.sharedstate.spark.cluster

import java.io.File
import org.apache.spark.SparkFiles
import org.apache.spark.internal.Logging
import org.apache.spark.util.MutableURLClassLoader

/**
 * Makes the application's jars (Delta Kernel for durable States, from `spark.jars`, where
 * `ss.session` puts the jars it resolved, or `spark.jars.packages`) loadable by this executor's host.
 * They reach executors as files, added to the class loader only when a task runs, and a host rebuilds partitions from
 * Delta tables on an RPC thread, before any task could add them: so the fetched jars are added to
 * the class loader that loaded the host (the executor's user class loader) when they are missing.
 */
private[sharedstate] object ExecutorClasspath extends Logging {
  private val Probe = "io.delta.kernel.engine.Engine"

  def ensurePackages(): Unit = synchronized {
    val loader = getClass.getClassLoader
    if (!loadable(loader)) loader match {
      case mutable: MutableURLClassLoader =>
        val fetched = Option(new File(SparkFiles.getRootDirectory()).listFiles()).getOrElse(Array.empty[File])
          .filter(f => f.isFile && f.getName.endsWith(".jar"))
        val known = mutable.getURLs.toSet
        fetched.map(_.toURI.toURL).filterNot(known).foreach(mutable.addURL)
        logInfo(s"sharedstate host: added ${fetched.length} fetched package jar(s) to the executor's class loader")
      case other =>
        logWarning(s"sharedstate host: $Probe is not loadable and the class loader ($other) cannot take jars")
    }
  }

  private def loadable(loader: ClassLoader): Boolean =
    try { Class.forName(Probe, false, loader); true }
    catch { case _: ClassNotFoundException | _: NoClassDefFoundError => false }
}
