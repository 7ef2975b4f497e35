package io.sharedstate.spark.cluster

import io.sharedstate.core.SharedStateException
import org.apache.spark.sharedstate.RpcBridge
import scala.concurrent.{Await, Future}
import scala.concurrent.duration.Duration
import scala.util.Try
import scala.util.control.NonFatal

/** How this JVM reaches one host: a direct call when it is this JVM, else Spark RPC. */
private[sharedstate] sealed trait HostLink {
  def id: HostId
  def ask(message: Any): Future[Any]
}

private[sharedstate] object HostLink {
  final class InProcess(service: HostService) extends HostLink {
    override def id: HostId = service.id
    override def ask(message: Any): Future[Any] = Future.fromTry(Try(service.handle(message)))
  }

  /** Connects at the first ask (and again after a failed connect), so a refused connection fails that ask. */
  final class Remote(val id: HostId, connect: () => RpcBridge.Peer) extends HostLink {
    @volatile private var peer: RpcBridge.Peer = _
    override def ask(message: Any): Future[Any] =
      try {
        if (peer == null) peer = connect()
        peer.ask(message)
      } catch { case NonFatal(e) => Future.failed(e) }
  }

  /**
   * Waits for a host's answer. A SharedStateException raised by the host is rethrown as it is; any
   * other failure (the executor is gone, the connection was refused) is a [[HostUnreachableException]]
   * naming the State and the partitions that host owns (a durable State's are rebuilt elsewhere, see
   * [[RecoveringStateClient]]).
   */
  def await[T](future: Future[Any], host: HostId, state: String, partitions: => Seq[Int]): T =
    try Await.result(future, Duration.Inf).asInstanceOf[T]
    catch {
      case e: InterruptedException => throw e // this thread was stopped (a query stopping), the host is fine
      case e: Throwable =>
        sharedStateCause(e) match {
          case Some(s) => throw s
          case None => throw new HostUnreachableException(host, state, partitions, e)
        }
    }

  /** Asks the coordinator and waits; its SharedStateException (an unknown State, say) is rethrown as it is. */
  def call[T](peer: RpcBridge.Peer, message: Any): T =
    try Await.result(peer.ask(message), Duration.Inf).asInstanceOf[T]
    catch { case e: Throwable => throw sharedStateCause(e).getOrElse(e) }

  /** Does `host` answer a ping within `seconds`? */
  def answers(link: HostLink, seconds: Int = 10): Boolean =
    scala.util.Try(Await.result(link.ask(Messages.Ping), Duration(seconds.toLong, "s"))).isSuccess

  private def sharedStateCause(e: Throwable): Option[SharedStateException] =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(10).collectFirst { case s: SharedStateException => s }
}

/** A host did not answer (its executor is gone, or the connection failed). */
private[sharedstate] final class HostUnreachableException(val host: HostId, state: String, partitions: Seq[Int],
    cause: Throwable)
    extends SharedStateException(
      s"State '$state' partition(s) ${partitions.mkString(", ")} are hosted by $host, which did not answer " +
        s"(${cause.getClass.getSimpleName}: ${cause.getMessage}). If the executor was lost, a durable State's partitions " +
        "are rebuilt on a live executor; an in-memory State's are lost with it: re-create the State or restart the application.",
      cause
    )
