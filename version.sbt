// The one version number of the project: sbt reads it here, and the Python packaging reads it too
// (python/sharedstate/_version.py is generated from it by `make`; see pyproject.toml).
ThisBuild / version := "0.1.0"
