package io.sharedstate.spark.cluster

import io.sharedstate.spark.config.SharedStateConf

import io.sharedstate.core.SharedStateException
import org.apache.spark.SparkConf
import org.scalatest.funsuite.AnyFunSuite

/** When the State service may serve on a cluster (the executors' and driver's paths are in it/test_cluster_security.py). */
class RpcSecuritySuite extends AnyFunSuite {
  private def conf(settings: (String, String)*): SparkConf = new SparkConf(false).setAll(settings)

  test("spark.authenticate on: the service serves, without the opt-in") {
    assert(RpcSecurity.allowed(conf("spark.authenticate" -> "true")))
    RpcSecurity.requireAllowed(conf("spark.authenticate" -> "true"), "test")
  }

  test("spark.authenticate off (or unset): refused with an error naming both fixes") {
    for (c <- Seq(conf(), conf("spark.authenticate" -> "false"))) {
      assert(!RpcSecurity.allowed(c))
      val e = intercept[SharedStateException](RpcSecurity.requireAllowed(c, "executor 1's host"))
      assert(e.getMessage.contains("executor 1's host"), e.getMessage)
      assert(e.getMessage.contains("spark.authenticate=true"), e.getMessage)
      assert(e.getMessage.contains(s"${SharedStateConf.AllowUnauthenticated.key}=true"), e.getMessage)
    }
  }

  test("spark.authenticate off with the opt-in: served") {
    val c = conf(SharedStateConf.AllowUnauthenticated.key -> "TRUE")
    assert(RpcSecurity.allowed(c))
    RpcSecurity.requireAllowed(c, "test")
  }

  test("the opt-in takes only true or false") {
    assert(!SharedStateConf.AllowUnauthenticated.read(conf()))
    val e = intercept[SharedStateException](SharedStateConf.AllowUnauthenticated.fromText("yes"))
    assert(e.getMessage.contains(SharedStateConf.AllowUnauthenticated.key) && e.getMessage.contains("true or false"))
  }
}
