package io.sharedstate.spark.cluster

import io.sharedstate.core.StateSpec
import io.sharedstate.spark.cluster.Messages.Host
import java.util.concurrent.atomic.AtomicInteger
import org.apache.spark.SparkConf
import org.apache.spark.sharedstate.RpcBridge
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Try

/** The host endpoint under spark.authenticate: only a peer with the application's secret gets through. */
class RpcAuthSuite extends AnyFunSuite {
  private def conf(auth: Boolean, secret: String = null): SparkConf = {
    val c = new SparkConf(false).set("spark.authenticate", auth.toString).set("spark.rpc.askTimeout", "5s")
      .set("spark.rpc.lookupTimeout", "5s").set("spark.network.timeout", "5s").set("spark.app.id", "rpc-auth-suite")
    if (secret != null) c.set("spark.authenticate.secret", secret) else c
  }

  /** Counts the messages that reached the host's handler. */
  private final class Counting(service: HostService) extends RpcBridge.Handler {
    val handled = new AtomicInteger()
    override def handle(message: Any): Any = { handled.incrementAndGet(); service.handle(message) }
  }

  private val hostMessage = Host(StateSpec("auth_state", "k STRING", "v STRING", 2, "replace"), 1L, Array(0, 1))

  private def withServer(body: (RpcBridge.Server, Counting) => Unit): Unit = {
    val server = RpcBridge.newStandaloneServer("auth-server", "127.0.0.1", conf(auth = true, secret = "right-secret"))
    val counting = new Counting(new HostService(HostId("1", "127.0.0.1", server.port)))
    server.serve(HostService.Endpoint, counting, MessageAllowList)
    try body(server, counting)
    finally server.shutdown()
  }

  private def ask(client: SparkConf, server: RpcBridge.Server): Try[Any] = {
    val env = RpcBridge.newStandaloneServer("auth-client", "127.0.0.1", client)
    try Try(env.connect("127.0.0.1", server.port, HostService.Endpoint).askSync(hostMessage))
    finally env.shutdown()
  }

  test("a client with the application's secret is served") {
    withServer { (server, counting) =>
      assert(ask(conf(auth = true, secret = "right-secret"), server).get == true)
      assert(counting.handled.get == 1)
    }
  }

  test("a client without the secret is refused before any message reaches the host") {
    withServer { (server, counting) =>
      assert(ask(conf(auth = false), server).isFailure)
      assert(counting.handled.get == 0)
    }
  }

  test("a client with a different secret is refused") {
    withServer { (server, counting) =>
      assert(ask(conf(auth = true, secret = "wrong-secret"), server).isFailure)
      assert(counting.handled.get == 0)
    }
  }
}
