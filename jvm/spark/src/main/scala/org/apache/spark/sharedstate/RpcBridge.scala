package org.apache.spark.sharedstate

import java.io.{
  ByteArrayInputStream,
  ByteArrayOutputStream,
  InvalidClassException,
  ObjectInputFilter,
  ObjectInputStream,
  ObjectOutputStream,
  ObjectStreamClass
}
import org.apache.spark.{SecurityManager, SparkConf, SparkContext, SparkEnv}
import org.apache.spark.internal.Logging
import org.apache.spark.rpc.{RpcCallContext, RpcEndpoint, RpcEndpointRef, RpcEnv}
import org.apache.spark.util.RpcUtils
import scala.concurrent.Future
import scala.util.control.NonFatal

/**
 * The one place sharedstate touches Spark's private[spark] RPC layer (RpcEnv, SecurityManager). It
 * is Spark's own Netty RPC, so a server started here applies the same authentication as the rest of
 * the application: with `spark.authenticate` on, a peer without the application's secret is refused
 * before any message reaches a handler.
 *
 * Requests travel as an [[Envelope]]: Spark's RPC deserialises only the envelope (a byte array), and
 * the endpoint decodes the message inside through the allow-list it was served with (a Java
 * `ObjectInputFilter`), so a handler never sees an object of a class outside it. Replies are Spark's
 * (the asking side chose whom it asked).
 */
object RpcBridge extends Logging {

  /**
   * Answers one message; a thrown exception is sent back to the caller as the failure. An answer
   * that is a CompletableFuture is sent when it completes (within the caller's ask timeout).
   */
  trait Handler { def handle(message: Any): Any }

  /** An RPC environment endpoints are served from and peers are reached through. */
  final class Server private[RpcBridge] (env: RpcEnv, owned: Boolean, conf: SparkConf) {
    def host: String = env.address.host
    def port: Int = env.address.port

    /** Serves `handler` at `endpoint`; requests are decoded through `allowed` (see [[decode]]). */
    def serve(endpoint: String, handler: Handler, allowed: ObjectInputFilter): Unit =
      env.setupEndpoint(endpoint, new HandlerEndpoint(env, endpoint, handler, allowed))

    def connect(host: String, port: Int, endpoint: String): Peer =
      new Peer(env.setupEndpointRef(org.apache.spark.rpc.RpcAddress(host, port), endpoint), conf)

    def shutdown(): Unit = if (owned) { env.shutdown(); env.awaitTermination() }
  }

  /** A remote endpoint. */
  final class Peer private[RpcBridge] (ref: RpcEndpointRef, conf: SparkConf) {
    private val timeout = RpcUtils.askRpcTimeout(conf)
    def ask(message: Any): Future[Any] = ref.ask[Any](Envelope(encode(message)), timeout)
    def askSync(message: Any): Any = ref.askSync[Any](Envelope(encode(message)), timeout)
  }

  /** A request as it travels: the Java-serialised message, decoded by the endpoint through its allow-list. */
  final case class Envelope(bytes: Array[Byte])

  def encode(message: Any): Array[Byte] = {
    val bytes = new ByteArrayOutputStream()
    val out = new ObjectOutputStream(bytes)
    out.writeObject(message)
    out.close()
    bytes.toByteArray
  }

  /**
   * Decodes a message encoded by [[encode]], admitting only the classes `allowed` accepts: another
   * class fails with an InvalidClassException naming it before any object of it is built.
   */
  def decode(bytes: Array[Byte], allowed: ObjectInputFilter): Any = {
    var refused: String = null
    val recording: ObjectInputFilter = info => {
      val status = allowed.checkInput(info)
      if (status == ObjectInputFilter.Status.REJECTED && info.serialClass() != null)
        refused = info.serialClass().getName
      status
    }
    val in = new AllowListInput(bytes, recording)
    try in.readObject()
    catch {
      case e: InvalidClassException if refused != null =>
        throw new InvalidClassException(
          refused,
          "refused by the sharedstate message allow-list (a sharedstate " +
            "request carries only its message classes, the engine's types, Scala/Java collections and primitives)"
        )
    } finally in.close()
  }

  // Resolves classes as the plugin's own loader sees them (then the thread's), without initialising them.
  private final class AllowListInput(bytes: Array[Byte], filter: ObjectInputFilter)
      extends ObjectInputStream(new ByteArrayInputStream(bytes)) {
    setObjectInputFilter(filter)
    override def resolveClass(desc: ObjectStreamClass): Class[_] = {
      val loaders = Seq(RpcBridge.getClass.getClassLoader, Thread.currentThread.getContextClassLoader).filter(_ != null)
      loaders.iterator.map(l => scala.util.Try(Class.forName(desc.getName, false, l))).collectFirst {
        case scala.util.Success(c) => c
      }.getOrElse(super.resolveClass(desc))
    }
  }

  private final class HandlerEndpoint(override val rpcEnv: RpcEnv, name: String, handler: Handler,
      allowed: ObjectInputFilter)
      extends RpcEndpoint {
    override def receiveAndReply(context: RpcCallContext): PartialFunction[Any, Unit] = {
      case Envelope(bytes) =>
        try handler.handle(decodeFrom(context, bytes)) match {
            case later: java.util.concurrent.CompletableFuture[_] =>
              later.whenComplete((v: Any, e: Throwable) => if (e == null) context.reply(v) else context.sendFailure(e))
            case now => context.reply(now)
          }
        catch { case NonFatal(e) => context.sendFailure(e) }
      case other =>
        logWarning(s"$name: refused a request from ${context.senderAddress} that is not an envelope " +
          s"(${other.getClass.getName})")
        context.sendFailure(new IllegalArgumentException(s"$name accepts only RpcBridge envelopes, got " +
            other.getClass.getName))
    }

    private def decodeFrom(context: RpcCallContext, bytes: Array[Byte]): Any =
      try decode(bytes, allowed)
      catch {
        case e: InvalidClassException =>
          logWarning(s"$name: refused a request from ${context.senderAddress}: ${e.getMessage}"); throw e
      }
  }

  /** This JVM's SparkEnv RPC environment (server mode on the driver, client mode on executors). */
  def sparkEnvServer(): Server = new Server(SparkEnv.get.rpcEnv, owned = false, SparkEnv.get.conf)

  /**
   * A server-mode RPC environment of its own, bound to `host` on a free port, with the security
   * manager of this JVM's SparkEnv: the application's secret guards it.
   */
  def newServer(name: String, host: String, conf: SparkConf): Server =
    new Server(RpcEnv.create(name, host, host, 0, conf, SparkEnv.get.securityManager, 0, clientMode = false),
      owned = true, conf)

  /** The same with a security manager built from `conf` alone (spark.authenticate, spark.authenticate.secret): for tests. */
  def newStandaloneServer(name: String, host: String, conf: SparkConf): Server = {
    val security = new SecurityManager(conf)
    security.initializeAuth()
    new Server(RpcEnv.create(name, host, host, 0, conf, security, 0, clientMode = false), owned = true, conf)
  }

  /** The driver's host and RPC port, as executors reach it. */
  def driverAddress(conf: SparkConf): (String, Int) =
    (conf.get("spark.driver.host"), conf.get("spark.driver.port").toInt)

  def env: Option[SparkEnv] = Option(SparkEnv.get)
  def isDriver: Boolean = { val e = SparkEnv.get; e == null || e.executorId == SparkContext.DRIVER_IDENTIFIER }
  def executorId: String = env.map(_.executorId).getOrElse(SparkContext.DRIVER_IDENTIFIER)

  /** The host this executor registered under (its block manager's), which task locality matches. */
  def executorHost: String =
    env.flatMap(e => Option(e.blockManager.blockManagerId)).map(_.host).getOrElse(
      org.apache.spark.util.Utils.localHostName())

  /**
   * Is executor `executorId` being decommissioned (Spark's graceful decommissioning, started by the
   * driver or by the executor itself)? Spark posts no listener event for it, so the scheduler is asked.
   */
  def decommissioning(sc: SparkContext, executorId: String): Boolean = {
    val scheduler = sc.taskScheduler
    scheduler != null && scheduler.getExecutorDecommissionState(executorId).isDefined
  }

  /** The running SparkContext of this (driver) JVM, if any. */
  def activeContext: Option[SparkContext] = SparkContext.getActive
}
