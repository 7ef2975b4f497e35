"""The four ways to enrich views with the campaign valid at their time, one module each."""
