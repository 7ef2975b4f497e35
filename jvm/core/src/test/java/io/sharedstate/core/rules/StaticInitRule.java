package io.sharedstate.core.rules;

/** A rule whose static initialiser leaves a trace: it runs only once the class is checked to be a rule. */
public class StaticInitRule implements UpdateRule {
  public static final String Trace = "sharedstate.test.StaticInitRule.initialised";

  static {
    System.setProperty(Trace, "true");
  }

  @Override
  public String name() {
    return "static_init";
  }

  @Override
  public byte[] apply(byte[] previous, byte[] incoming) {
    return incoming;
  }

  @Override
  public boolean readsPrevious() {
    return false;
  }
}
