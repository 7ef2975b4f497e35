// The one version number of the project lives in VERSION; sbt reads it here and the Python
// packaging reads it through pyproject.toml ([tool.setuptools.dynamic]).
ThisBuild / version := IO.read(file("VERSION")).trim
