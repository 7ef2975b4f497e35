package io.sharedstate.spark.cluster

import io.sharedstate.spark.durable.PartitionSource

import HostFeedMessages._
import Messages._
import io.sharedstate.core.{FetchAnswer, Key, RejectedUpdate, StateSpec, ValueSet}
import io.sharedstate.core.fetch.{FetchRequest, FetchRule, RangeAggregate, ReadMode}
import io.sharedstate.core.row.ValueType
import java.io.InvalidClassException
import java.lang.reflect.Modifier
import java.util.concurrent.atomic.{AtomicInteger, AtomicLong}
import org.apache.hadoop.conf.Configuration
import org.apache.spark.SparkConf
import org.apache.spark.sharedstate.RpcBridge
import org.apache.spark.util.SerializableConfiguration
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Try

/** A higher layer's driver request (as fetch.batch's), carrying whatever `payload` is. */
private final case class EchoRequest(text: String, payload: AnyRef) extends DriverRequest[String] {
  override def onDriver(): String = text
}

/** A user's fetch rule ("class:..."), which travels inside a FetchRequest. */
final class UserFetchRule(val from: Long) extends FetchRule {
  override def name: String = "user"
  override def lowerBound(t: Long): Long = from
  override def answer(set: ValueSet, t: Long): FetchAnswer = FetchAnswer.Absent
  override def equals(o: Any): Boolean = o match { case u: UserFetchRule => u.from == from; case _ => false }
  override def hashCode(): Int = from.hashCode
}

/** Requests are decoded through [[MessageAllowList]]: every message passes it; any other class is refused. */
class MessageAllowListSuite extends AnyFunSuite {
  private val spec = StateSpec("allow_state", "k STRING", "v BIGINT", 2, "replace")
  private val host = HostId("1", "127.0.0.1", 7077)
  private val source = {
    val hadoop = new Configuration(false); hadoop.set("fs.sharedstate.test", "kept")
    PartitionSource("/tmp/changelog", "/tmp/snapshots", new SerializableConfiguration(hadoop))
  }
  private val rejected =
    RejectedUpdate(Array[Byte](1, 2), java.lang.Long.valueOf(3L), Array[Byte](4), "late", "w", 1L, 2L)
  private val nullTime = RejectedUpdate(Array[Byte](1), null, null, RejectedUpdate.NullTime, "w", 1L, 2L)
  private val requests = Array(
    FetchRequest(new Key(Array[Byte](1, 2, 3)), 5L),
    FetchRequest(new Key(Array[Byte](4)), 9L, FetchRule.Range(2L), ReadMode.Uncommitted(3L)),
    FetchRequest(new Key(Array[Byte](5)), 9L, RangeAggregate("sum", 0L, ValueType.parse("v BIGINT"))),
    // every built-in aggregate: their result types are built differently (count's over an Object[])
    FetchRequest(new Key(Array[Byte](5)), 9L, RangeAggregate("count", 0L, ValueType.parse("v BIGINT"))),
    FetchRequest(new Key(Array[Byte](5)), 9L, RangeAggregate("avg", 0L, ValueType.parse("v BIGINT, w DOUBLE"))),
    FetchRequest(new Key(Array[Byte](5)), 9L, RangeAggregate("collect", 0L, ValueType.parse("v STRING"))),
    FetchRequest(new Key(Array[Byte](5)), 9L, RangeAggregate("max", 0L, ValueType.parse("v ARRAY<DOUBLE>"))),
    FetchRequest(new Key(Array[Byte](6)), 9L, new UserFetchRule(4L))
  )

  /** One instance of every message class of Messages and HostFeedMessages. */
  private val samples: Seq[Any] = Seq(
    RegisterHost(host),
    GetRoute("s"),
    GetUpdateProgress("s"),
    EnsureReader("s", "r"),
    GetReaderProgress("s", "r"),
    HostUnreachable("s", host),
    AskDriver(EchoRequest("bound", List(1L, 2L))),
    Host(spec, 3L, Array(0, 1)),
    Host(spec, 3L, Array(1), Some(source), rejectedAfter = 7L),
    Adopt(spec, 3L, Array(0), source, 5L),
    Rebuilt(Array((4L, rejected), (5L, nullTime))),
    Ping,
    Drop("s"),
    HandOver("s", 1L, Array(0, 2), 3L),
    HandOver("s", 1L, Array(0, 2), 3L, precopied = true),
    PreCopy("s", 1L, Array(0)),
    Preload(spec, 1L, Array(Array[Byte](1, 2))),
    EndPreCopy("s", 1L, Array(0), moved = true),
    TakeOver(
      spec,
      3L,
      io.sharedstate.core.PartitionHandOver(Array(1), Array(Array[Byte](1, 2)),
        Array(io.sharedstate.core.StagedShare("w", 2L, 0, Array(Array[Byte](1)), Array(10L), Array(Array[Byte](9))))),
      io.sharedstate.core.ProgressImage(
        5L,
        4L,
        5L,
        Long.MinValue,
        List(io.sharedstate.core.ProgressImage.Reporter("w", 5L, paused = false, finished = false)),
        Map("w" -> 2L),
        List(io.sharedstate.core.ProgressImage.Reporter("r", 4L, paused = false, finished = true))
      ),
      Some(source),
      2L
    ),
    KeepCounts("s", 1L, 10L, 2L, Map("w" -> (8L, 2L)), Array(rejected)),
    RegisterWriter("s", 1L, "w"),
    CheckNotLate("s", 1L, "w", 2L),
    CommitEpoch("s", 1L, "w", 2L, 3L),
    AbortEpoch("s", 1L, "w", 2L),
    FinishWriter("s", 1L, "w"),
    PauseWriter("s", 1L, "w"),
    DeregisterWriter("s", 1L, "w"),
    RegisterReader("s", 1L, "r"),
    ReportFetchProgress("s", 1L, "r", 4L),
    FinishReader("s", 1L, "r"),
    DeregisterReader("s", 1L, "r"),
    Committed(3, 1, Array(rejected)),
    StepRejected(Array(rejected, nullTime)),
    Stage("s", 1L, "w", 2L, 0, Array(Array[Byte](1), Array[Byte](2, 3)), Array(10L, 11L),
      Array(Array[Byte](9), Array.emptyByteArray), Array(nullTime), 4L),
    Fetch("s", 1L, requests),
    FetchAsync("s", 1L, requests(1)),
    GetChanges("s", 1L, 0, 1L, 2L),
    GetHostProgress("s", 1L),
    ScanAsOf("s", 1L, 1, 5L),
    GetRejected("s", 1L),
    GetMetrics("s", 1L),
    EncodePartition("s", 1L, 0),
    CaptureForSnapshot("s", 1L, 0),
    EncodeCapture("s", 1L, 0, 3L, -1L),
    EncodedCapture(Array[Byte](1, 2), delta = true, 1),
    CaptureStored("s", 1L, 0, 3L, 7L),
    OpenHostFeed("s", 1L, 0L),
    HostFeedOpened(2L, Array(0, 1)),
    ReadHostFeed("s", 1L, 2L, 0L, 9L),
    AwaitHostFeed("s", 1L, 2L, 5L, 0L),
    CommitHostFeed("s", 1L, 2L, 9L),
    CloseHostFeed("s", 1L, 2L)
  )

  private def same(a: Any, b: Any): Boolean = (a, b) match {
    case (x: Array[_], y: Array[_]) => x.length == y.length && x.indices.forall(i => same(x(i), y(i)))
    case (x: SerializableConfiguration, y: SerializableConfiguration) =>
      x.value.get("fs.sharedstate.test") == y.value.get("fs.sharedstate.test")
    case (x: Product, y: Product) =>
      x.getClass == y.getClass && x.productArity == y.productArity &&
      x.productIterator.zip(y.productIterator).forall { case (p, q) => same(p, q) }
    case _ => a == b
  }

  test("every message class of Messages and HostFeedMessages has a sample here") {
    val declared = (MessageAllowList.declaredIn(Messages) ++ MessageAllowList.declaredIn(HostFeedMessages)).toSet
    val names = declared.map(_.getName)
    // companions of case classes are not messages; case objects (Ping) are
    val messages = declared.filterNot(c =>
      c.isInterface || Modifier.isAbstract(c.getModifiers) || (c.getName.endsWith("$") && names(c.getName.init)))
    assert(messages.contains(classOf[Messages.Host]) && messages.contains(Messages.Ping.getClass), messages)
    val missing = messages -- samples.map(_.getClass).toSet
    assert(missing.isEmpty, s"message classes without a sample in this suite (add one): ${missing.map(_.getName)}")
  }

  test("every message round-trips through the allow-list") {
    for (m <- samples) {
      val back = RpcBridge.decode(RpcBridge.encode(m), MessageAllowList)
      assert(same(back, m), s"$m came back as $back")
    }
    assert(RpcBridge.decode(RpcBridge.encode(Ping), MessageAllowList).asInstanceOf[AnyRef] eq Ping)
  }

  test("a class outside the allow-list is refused, named, before any object of it is built") {
    for ((m, cls) <- Seq[(Any, String)](
        (new AtomicLong(1), "java.util.concurrent.atomic.AtomicLong"),
        (AskDriver(EchoRequest("x", new java.util.Date(0))), "java.util.Date"),
        (Host(spec, 1L, Array(0), Some(source)).copy(source = Some(new java.net.URI("file:/x"))
            .asInstanceOf[Option[PartitionSource]]), "java.net.URI"),
        (AskDriver(EchoRequest("x", (() => 1): () => Int)), "java.lang.invoke.SerializedLambda")
      )) {
      val e = intercept[InvalidClassException](RpcBridge.decode(RpcBridge.encode(m), MessageAllowList))
      assert(e.getMessage.contains(cls) && e.getMessage.contains("allow-list"), e.getMessage)
    }
  }

  test("a real server refuses such a request before its handler, and answers an allowed one") {
    val conf = new SparkConf(false).set("spark.authenticate", "true").set("spark.authenticate.secret", "s3cret")
      .set("spark.rpc.askTimeout", "5s").set("spark.app.id", "allow-list-suite")
    val server = RpcBridge.newStandaloneServer("allow-server", "127.0.0.1", conf)
    val handled = new AtomicInteger()
    server.serve(
      HostService.Endpoint,
      new RpcBridge.Handler {
        override def handle(message: Any): Any = { handled.incrementAndGet(); message.getClass.getName }
      },
      MessageAllowList
    )
    val client = RpcBridge.newStandaloneServer("allow-client", "127.0.0.1", conf)
    try {
      val peer = client.connect("127.0.0.1", server.port, HostService.Endpoint)
      val refused = Try(peer.askSync(AskDriver(EchoRequest("x", new java.util.Date(0)))))
      val messages =
        Iterator.iterate(refused.failed.get)(_.getCause).takeWhile(_ != null).map(_.getMessage).mkString(" | ")
      assert(messages.contains("java.util.Date") && messages.contains("allow-list"), messages)
      assert(handled.get == 0)
      assert(peer.askSync(GetRoute("s")) == classOf[GetRoute].getName)
      assert(handled.get == 1)
    } finally { client.shutdown(); server.shutdown() }
  }
}
