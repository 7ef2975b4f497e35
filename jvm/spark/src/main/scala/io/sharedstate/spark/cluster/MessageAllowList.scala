package io.sharedstate.spark.cluster

import io.sharedstate.spark.durable.PartitionSource

import io.sharedstate.core.fetch.FetchRule
import java.io.ObjectInputFilter
import org.apache.spark.util.SerializableConfiguration

/**
 * The classes a request to a host or the coordinator may be made of, checked by Java's
 * `ObjectInputFilter` as the endpoint decodes it (see RpcBridge.decode): our messages
 * ([[Messages]], [[HostFeedMessages]]) and what they carry (routes, partition sources with their
 * Hadoop configuration, the engine's types, a higher layer's [[DriverRequest]] and a user's
 * [[FetchRule]], recognised by type before their class is initialised), Scala's and Java's
 * collections, boxed primitives, strings and arrays of these. Anything else is refused.
 */
private[sharedstate] object MessageAllowList extends ObjectInputFilter {

  /** The message classes (and their companions): every class declared in Messages and HostFeedMessages. */
  val MessageClasses: Set[Class[_]] = (declaredIn(Messages) ++ declaredIn(HostFeedMessages)).toSet

  // scalac records an object's member classes as declared in its mirror class (`Messages`, not `Messages$`).
  private[cluster] def declaredIn(module: AnyRef): Seq[Class[_]] = {
    val mirror = Class.forName(module.getClass.getName.stripSuffix("$"), false, module.getClass.getClassLoader)
    mirror.getDeclaredClasses.toSeq
  }

  private val Carried: Set[Class[_]] = Set(classOf[HostId], classOf[StateRoute], classOf[PartitionSource],
    classOf[SerializableConfiguration])

  private val Plain: Set[Class[_]] = Set(
    classOf[String],
    classOf[java.lang.Number],
    classOf[java.lang.Boolean],
    classOf[java.lang.Byte],
    classOf[java.lang.Short],
    classOf[java.lang.Character],
    classOf[java.lang.Integer],
    classOf[java.lang.Long],
    classOf[java.lang.Float],
    classOf[java.lang.Double],
    classOf[java.util.ArrayList[_]],
    classOf[java.util.HashMap[_, _]],
    classOf[java.util.LinkedHashMap[_, _]],
    classOf[java.util.HashSet[_]],
    classOf[java.util.LinkedHashSet[_]],
    classOf[Option[_]],
    classOf[Some[_]],
    None.getClass,
    classOf[scala.runtime.ModuleSerializationProxy]
  )

  private val Tuple = """scala\.Tuple\d+(\$mc.*\$sp)?""".r

  def allows(c: Class[_]): Boolean =
    // An Object[] (Scala's ArraySeq after a map, as in an aggregate's result type) is allowed: the
    // filter checks each of its elements' classes on its own.
    if (c.isArray) c.getComponentType == classOf[Object] || allows(c.getComponentType)
    else c.isPrimitive || Plain(c) || MessageClasses(c) || Carried(c) ||
    c.getName.startsWith("io.sharedstate.core.") || c.getName.startsWith("scala.collection.") ||
    Tuple.matches(c.getName) || classOf[DriverRequest[_]].isAssignableFrom(c) ||
    classOf[FetchRule].isAssignableFrom(c)

  override def checkInput(info: ObjectInputFilter.FilterInfo): ObjectInputFilter.Status = {
    val c = info.serialClass()
    if (c == null) ObjectInputFilter.Status.UNDECIDED // a size or depth check: no limit of ours
    else if (allows(c)) ObjectInputFilter.Status.ALLOWED
    else ObjectInputFilter.Status.REJECTED
  }
}
