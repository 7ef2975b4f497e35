package io.sharedstate.core.rules

import io.sharedstate.core.SharedStateException
import io.sharedstate.core.row.ValueType
import scala.reflect.ClassTag

/**
 * Loads a user-supplied rule class: a constructor taking the value type is preferred, else a no-arg
 * one. The class is loaded without being initialised and checked against the expected interface
 * first, so naming a class that is not a rule never runs its static initialiser; it is initialised
 * only by the construction of a checked rule.
 */
private[core] object UserRules {
  def instantiate[T <: AnyRef](className: String, valueType: ValueType, what: String)(implicit tag: ClassTag[T]): T = {
    val expected = tag.runtimeClass
    val loader = Option(Thread.currentThread.getContextClassLoader).getOrElse(getClass.getClassLoader)
    val cls =
      try Class.forName(className, false, loader)
      catch {
        case _: ClassNotFoundException =>
          throw new SharedStateException(s"The $what class '$className' is not on the classpath.")
        case e: LinkageError =>
          throw new SharedStateException(s"The $what class '$className' cannot be loaded: $e", e)
      }
    if (!expected.isAssignableFrom(cls)) {
      throw new SharedStateException(
        s"The $what class '$className' does not implement ${expected.getName}; it was not initialised.")
    }
    val instance =
      try {
        cls.getConstructors.find(c =>
          c.getParameterCount == 1 && c.getParameterTypes()(0) == classOf[ValueType]) match {
          case Some(c) => c.newInstance(valueType)
          case None => cls.getConstructor().newInstance()
        }
      } catch {
        case e: NoSuchMethodException => throw new SharedStateException(
            s"The $what class '$className' needs a public constructor taking a ValueType, or a public no-arg one.", e)
        case e: java.lang.reflect.InvocationTargetException => throw new SharedStateException(
            s"The $what class '$className' failed to construct: ${e.getCause}", e.getCause)
        case e: ExceptionInInitializerError => throw new SharedStateException(
            s"The $what class '$className' failed to initialise: ${e.getCause}", e.getCause)
      }
    expected.cast(instance).asInstanceOf[T]
  }
}
