package io.sharedstate.core

import io.sharedstate.core.fetch.{FetchAnswers, FetchRequest, ReadMode}
import io.sharedstate.core.row.{BinaryRow, ValueType}
import io.sharedstate.core.rules.{ConcatRule, UpdateRule}
import java.util.concurrent.CompletableFuture
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks
import scala.collection.mutable
import scala.util.Random

/**
 * The whole engine against a naive reference model (full history in a list, answers by folding and
 * scanning it, no compaction, no indexes) on random interleavings of staging (with task retries),
 * commits (with replays), update and fetch progress, compaction sweeps, synchronous and pending
 * fetches of every built-in fetch rule in both read modes, for replace, sum, append and a
 * non-commutative user rule. Every answer must be identical, and so must every failure.
 */
class EngineModelPropertySuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  import EngineModelPropertySuite._

  private val runs =
    sys.props.get("sharedstate.model.runs").orElse(sys.env.get("SHAREDSTATE_MODEL_RUNS")).map(_.toInt).getOrElse(200)
  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = org.scalactic.anyvals.PosInt.from(runs).get)

  UpdateRule.register("concat_model", t => new ConcatRule(t))

  /** A rule as the model sees it: values are plain Scala values, combined without binary rows. */
  sealed abstract class ModelRule(val name: String, val ddl: String) {
    def combine(prev: Option[Any], in: Any): Any
    def encode(v: Any): Array[Byte]
    def decode(b: Array[Byte]): Any
    def gen(rnd: Random): Any
    def scalar: Boolean = true
  }
  object Replace extends ModelRule("replace", "v STRING") {
    def combine(prev: Option[Any], in: Any) = in
    def encode(v: Any) = BinaryRow.encode(ValueType.parse(ddl), Array(v.asInstanceOf[AnyRef]))
    def decode(b: Array[Byte]) = BinaryRow.decode(ValueType.parse(ddl), b)(0)
    def gen(rnd: Random) = s"v${rnd.nextInt(50)}"
  }
  object Concat extends ModelRule("concat_model", "v STRING") {
    def combine(prev: Option[Any], in: Any) = prev.fold(in)(p => s"$p|$in")
    def encode(v: Any) = Replace.encode(v)
    def decode(b: Array[Byte]) = Replace.decode(b)
    def gen(rnd: Random) = s"${rnd.nextInt(10)}"
  }
  object Sum extends ModelRule("sum", "n BIGINT") {
    def combine(prev: Option[Any], in: Any) = prev.fold(in)(p => p.asInstanceOf[Long] + in.asInstanceOf[Long])
    def encode(v: Any) = BinaryRow.encode(ValueType.parse(ddl), Array(Long.box(v.asInstanceOf[Long])))
    def decode(b: Array[Byte]) = BinaryRow.decode(ValueType.parse(ddl), b)(0).asInstanceOf[java.lang.Long].longValue
    def gen(rnd: Random) = (rnd.nextInt(21) - 10).toLong
  }
  object Append extends ModelRule("append", "xs ARRAY<STRING>") {
    override def scalar = false
    def combine(prev: Option[Any], in: Any) = {
      val set = mutable.LinkedHashSet.empty[String] ++ prev.map(_.asInstanceOf[Seq[String]]).getOrElse(Nil)
      in.asInstanceOf[Seq[String]].foreach { op =>
        if (op.startsWith("-")) set -= op.drop(1) else set += op.stripPrefix("+")
      }
      set.toSeq
    }
    def encode(v: Any) = BinaryRow.encode(ValueType.parse(ddl), Array(v.asInstanceOf[Seq[String]].toArray[AnyRef]))
    def decode(b: Array[Byte]) =
      BinaryRow.decode(ValueType.parse(ddl), b)(0).asInstanceOf[Array[AnyRef]].toSeq.map(_.toString)
    def gen(rnd: Random) = Seq.fill(1 + rnd.nextInt(2))((if (rnd.nextInt(3) == 0) "-" else "+") + s"e${rnd.nextInt(4)}")
  }

  /** The reference: the contract of DESIGN.md section 2, computed the slow, obvious way. */
  final class Model(rule: ModelRule) {
    val writers = mutable.LinkedHashMap.empty[String, Long]
    val readers = mutable.LinkedHashMap.empty[String, Long]
    var u: Long = EventTime.MinusInfinity
    var f: Long = EventTime.MinusInfinity
    val history = mutable.ArrayBuffer.empty[(String, Long, Any, Long)] // key, time, incoming, arrival
    var arrivals = 0L
    var late = 0
    private def joinAt(p: Long) = if (EventTime.isFinite(p)) p else EventTime.MinusInfinity
    def registerWriter(w: String): Unit = { if (!writers.contains(w)) writers(w) = joinAt(u); publish() }
    def registerReader(r: String): Unit = {
      if (!readers.contains(r)) readers(r) = joinAt(f); f = math.max(f, readers.values.min)
    }
    def reportF(r: String, p: Long): Unit = { readers(r) = p; f = math.max(f, readers.values.min) }
    def publish(): Unit = if (writers.nonEmpty) u = math.max(u, writers.values.min)
    def commit(w: String, rows: Seq[(String, Long, Any)], p: Long): Unit = {
      val now = u
      rows.foreach { case (k, t, v) => if (t < now) late += 1 else { arrivals += 1; history += ((k, t, v, arrivals)) } }
      writers(w) = math.max(writers(w), p)
      publish()
    }

    /** Pairs of `key` as applied now: updates below U folded in (time, arrival) order. */
    def pairs(key: String): Seq[(Long, Any)] = {
      val out = mutable.TreeMap.empty[Long, Any]
      history.filter(h => h._1 == key && h._2 < u).sortBy(h => (h._2, h._4)).foreach { case (_, t, v, _) =>
        val prev = out.rangeTo(t).lastOption.map(_._2)
        out(t) = rule.combine(prev, v)
      }
      out.toSeq
    }
  }

  private def modelAnswer(m: Model, rule: ModelRule, key: String, t: Long, ask: Ask): Any = {
    val ps = m.pairs(key)
    ask match {
      case Latest => ps.filter(_._1 <= t).lastOption.getOrElse("absent")
      case Range(from) => ps.filter(p => p._1 >= from && p._1 <= t)
      case Agg(fn, from) =>
        val in = ps.filter(p => p._1 >= from && p._1 <= t).map(_._2)
        fn match {
          case "count" => Seq(in.size.toLong)
          case "collect" => Seq(in)
          case "sum" => if (in.isEmpty) "absent" else Seq(in.map(_.asInstanceOf[Long]).sum)
        }
    }
  }

  private def engineAnswer(rule: ModelRule, a: FetchAnswer): Any = a match {
    case FetchAnswer.NotYet => "not yet"
    case FetchAnswer.Absent => "absent"
    case FetchAnswer.Found(t, v) => (t, rule.decode(v))
    case p: FetchAnswer.Pairs => p.times.toSeq.zip(p.values.toSeq.map(rule.decode))
    case FetchAnswer.Aggregate(row, rt, _) => BinaryRow.decode(rt, row).toSeq.map {
        case arr: Array[AnyRef] => arr.toSeq.map { case l: java.lang.Long => l.longValue; case o => o }
        case l: java.lang.Long => l.longValue
        case o => o
      }
  }

  test("engine answers equal the reference model on random interleavings of every operation") {
    var compactedTotal = 0L
    // Fixed seeds: a failure is reproducible from its `seed=` and the generator-strength check below
    // cannot flake (a random draw of 200 seeds once compacted fewer than 100 pairs).
    val seeds = { val r = new Random(20261124L); Seq.fill(runs)(r.nextLong()) }
    seeds.foreach { seed =>
      val rnd = new Random(seed)
      val rule = Seq(Replace, Concat, Sum, Append)(rnd.nextInt(4))
      val compaction = if (rnd.nextInt(4) == 0) "none" else "keep_latest"
      val state =
        new State(StateSpec("s", "k STRING", rule.ddl, 1 + rnd.nextInt(4), rule.name, compaction = compaction))
      val model = new Model(rule)
      val writers = Seq("w0", "w1", "w2").take(1 + rnd.nextInt(3))
      val readers = Seq("r0", "r1")
      val nextEpoch = mutable.Map.empty[String, Long].withDefaultValue(0L)
      val open = mutable.Map.empty[String, mutable.SortedMap[Int, Seq[(String, Long, Any)]]]
      val maxSeen = mutable.Map.empty[String, Long].withDefaultValue(0L)
      val keys = Seq("a", "b", "c")
      val pending = mutable.ArrayBuffer.empty[(FetchRequest, Ask, CompletableFuture[FetchAnswer], String)]
      val pendingModel = mutable.Map.empty[CompletableFuture[FetchAnswer], Any]
      val answers = new FetchAnswers(4) // reused by every batched fetch of the run, growing as needed
      def ctx =
        s"seed=$seed rule=${rule.name} compaction=$compaction U=${state.updateProgress} F=${state.fetchProgress}"

      def randomAsk(t: Long): Ask = rnd.nextInt(6) match {
        case 0 | 1 | 2 => Latest
        case 3 => Range(t - rnd.nextInt(40))
        case 4 => Agg("count", t - rnd.nextInt(40))
        case _ =>
          if (rule == Sum) Agg("sum", t - rnd.nextInt(40))
          else if (rule.scalar) Agg("collect", t - rnd.nextInt(40))
          else Range(t - rnd.nextInt(40))
      }
      def request(key: String, t: Long, ask: Ask, mode: ReadMode): FetchRequest = {
        val r = ask match {
          case Latest => state.fetchRule("latest")
          case Range(from) => state.fetchRule("range", from)
          case Agg(fn, from) => state.fetchRule(fn, from)
        }
        FetchRequest(new Key(key.getBytes), t, r, mode)
      }
      // Pending fetches answered by the last progress change, in the model.
      def settlePending(): Unit = pending.foreach { case (req, ask, fut, key) =>
        if (!pendingModel.contains(fut) && req.replyTime < model.u) {
          pendingModel(fut) =
            if (ask.lower(req.time) < model.f) "below F" else modelAnswer(model, rule, key, req.time, ask)
        }
      }

      writers.take(1).foreach { w => state.registerWriter(w); model.registerWriter(w) }
      if (rnd.nextBoolean()) { state.registerReader("r0"); model.registerReader("r0") }
      for (_ <- 0 until 100) {
        rnd.nextInt(15) match {
          case 0 =>
            val w = writers(rnd.nextInt(writers.size))
            state.registerWriter(w); model.registerWriter(w); settlePending()
          case 1 | 2 | 3 =>
            val w = writers(rnd.nextInt(writers.size))
            if (model.writers.contains(w)) {
              val task = rnd.nextInt(3)
              val rows = Seq.fill(rnd.nextInt(4))((keys(rnd.nextInt(keys.size)),
                  maxSeen(w) - 20 + rnd.nextInt(40).toLong, rule.gen(rnd)))
              val b = new UpdateBatch
              rows.foreach { case (k, t, v) => b.add(k.getBytes, t, rule.encode(v)) }
              state.stage(w, nextEpoch(w), task, b) // a retried task replaces its rows
              open.getOrElseUpdate(w, mutable.SortedMap.empty)(task) = rows
            }
          case 4 | 5 =>
            val w = writers(rnd.nextInt(writers.size))
            if (model.writers.contains(w)) {
              val rows = open.remove(w).map(_.values.flatten.toSeq).getOrElse(Nil)
              maxSeen(w) = (rows.map(_._2) :+ maxSeen(w)).max + rnd.nextInt(5)
              val p = maxSeen(w) - rnd.nextInt(10)
              val epoch = nextEpoch(w)
              // pending fetches are answered inside commitEpoch: the model must see the same U first
              model.commit(w, rows, p)
              settlePending()
              state.commitEpoch(w, epoch, p)
              nextEpoch(w) = epoch + 1
              if (rnd.nextBoolean()) assert(state.commitEpoch(w, epoch, p + 1000).alreadyCommitted, ctx)
            }
          case 6 =>
            val r = readers(rnd.nextInt(readers.size))
            state.registerReader(r); model.registerReader(r)
          case 7 =>
            val r = readers(rnd.nextInt(readers.size))
            if (model.readers.contains(r)) {
              // F follows U closely (as a fetch query's watermark does), so compaction has work to do
              val near = if (EventTime.isFinite(model.u)) model.u - rnd.nextInt(25)
              else maxSeen.values.maxOption.getOrElse(0L) - 40
              val to = math.max(model.readers(r), near)
              state.reportFetchProgress(r, to); model.reportF(r, to)
            }
          case 8 =>
            state.compactionStep(1 + rnd.nextInt(3))
          case 9 | 10 =>
            val key = keys(rnd.nextInt(keys.size))
            val t = maxSeen.values.maxOption.getOrElse(0L) - rnd.nextInt(50)
            val ask = randomAsk(t)
            val mode = if (rnd.nextInt(3) == 0) ReadMode.Uncommitted(rnd.nextInt(30).toLong) else ReadMode.Committed
            val fut = state.fetchAsync(request(key, t, ask, mode))
            pending += ((request(key, t, ask, mode), ask, fut, key))
            if (ask.lower(t) < model.f) pendingModel(fut) = "below F" // refused at once
            settlePending()
          case _ if rnd.nextInt(4) == 0 =>
            // A batched fetch (State.fetchInto, the fetch join's path) of several random requests: each
            // answer is the model's; one request below F fails the whole batch.
            val asks = Seq.fill(1 + rnd.nextInt(2 * State.FetchGroup + 3)) {
              val key = keys(rnd.nextInt(keys.size))
              val t = maxSeen.values.maxOption.getOrElse(0L) - rnd.nextInt(50)
              val ask = randomAsk(t)
              val mode = if (rnd.nextInt(3) == 0) ReadMode.Uncommitted(rnd.nextInt(30).toLong) else ReadMode.Committed
              (key, t, ask, request(key, t, ask, mode))
            }
            val expected = asks.map { case (key, t, ask, req) =>
              if (ask.lower(t) < model.f) "below F"
              else if (req.replyTime >= model.u) "not yet"
              else modelAnswer(model, rule, key, t, ask)
            }
            try {
              state.fetchInto(asks.map(_._4).toArray, asks.size, answers)
              assert(!expected.contains("below F"), s"a batch with a fetch below F was answered $ctx")
              asks.indices.foreach { i =>
                assert(engineAnswer(rule, answers.answer(i)) == expected(i), s"batched fetch ${asks(i)} $ctx")
              }
            } catch {
              case e: SharedStateException if e.getMessage.contains("below its fetch progress") =>
                assert(expected.contains("below F"), s"batch refused: ${e.getMessage} $ctx")
            }
          case _ =>
            val key = keys(rnd.nextInt(keys.size))
            val t = maxSeen.values.maxOption.getOrElse(0L) - rnd.nextInt(50)
            val ask = randomAsk(t)
            val mode = if (rnd.nextInt(3) == 0) ReadMode.Uncommitted(rnd.nextInt(30).toLong) else ReadMode.Committed
            val req = request(key, t, ask, mode)
            val expected =
              if (ask.lower(t) < model.f) "below F"
              else if (req.replyTime >= model.u) "not yet"
              else modelAnswer(model, rule, key, t, ask)
            val got =
              try engineAnswer(rule, state.fetch(req))
              catch {
                case e: SharedStateException if e.getMessage.contains("below its fetch progress") => "below F"
              }
            assert(got == expected, s"fetch $ask of $key at $t ($mode) $ctx")
        }
        assert(state.updateProgress == model.u, ctx)
        assert(state.fetchProgress == model.f, ctx)
      }
      pending.foreach { case (req, ask, fut, key) =>
        pendingModel.get(fut) match {
          case None => assert(!fut.isDone, s"pending $ask at ${req.time} answered before U passed it; $ctx")
          case Some(want) =>
            assert(fut.isDone, s"pending $ask at ${req.time} not answered; $ctx")
            val got =
              try engineAnswer(rule, fut.get())
              catch {
                case e: java.util.concurrent.ExecutionException
                    if e.getCause.getMessage.contains("below its fetch progress") => "below F"
              }
            assert(got == want, s"pending $ask of $key at ${req.time} (${req.mode}) $ctx")
        }
      }
      assert(state.rejectedUpdates.size == model.late, ctx)
      compactedTotal += state.metrics.pairsCompacted
      // The accounting matches a full scan of what is held.
      var raw = 0L
      var pairCount = 0L
      (0 until state.partitionCount).foreach(i =>
        state.partition(i).foreachEntry { (k, set) =>
          raw += k.bytes.length + set.payloadBytes; pairCount += set.size
        })
      assert(state.metrics.rawBytes == raw && state.metrics.pairs == pairCount, ctx)
    }
    assert(compactedTotal >= runs / 2,
      s"compaction dropped only $compactedTotal pairs over $runs runs: the generator is too tame")
  }
}

object EngineModelPropertySuite {

  /** Which fetch rule a random fetch uses. */
  sealed trait Ask { def lower(t: Long): Long }
  case object Latest extends Ask { def lower(t: Long) = t }
  final case class Range(from: Long) extends Ask { def lower(t: Long) = from }
  final case class Agg(fn: String, from: Long) extends Ask { def lower(t: Long) = from }
}
