package io.sharedstate.core.rules;

/**
 * Not a rule, with a static initialiser that leaves a trace (a system property, so that reading the
 * trace does not initialise this class): naming it as a rule must fail without initialising it.
 */
public class StaticInitNotARule {
  public static final String Trace = "sharedstate.test.StaticInitNotARule.initialised";

  static {
    System.setProperty(Trace, "true");
  }
}
