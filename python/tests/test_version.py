"""One version number for the project: the Python package and the sbt build agree."""

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def test_python_and_sbt_report_the_same_version():
    printed = subprocess.run(
        [sys.executable, "-c", "import sharedstate; print(sharedstate.__version__)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", printed)
    # sbt wrote this pom beside the jar that is bundled in the package and published for --packages
    poms = list((ROOT / "jvm/spark/target/scala-2.13").glob("sharedstate-spark_2.13-*.pom"))
    assert poms, "run the build first (make test builds the jar)"
    pom = ET.parse(max(poms, key=lambda p: p.stat().st_mtime)).getroot()
    assert pom.findtext("m:artifactId", namespaces=POM_NS) == "sharedstate-spark_2.13"
    assert pom.findtext("m:version", namespaces=POM_NS) == printed
    jars = list((ROOT / "python/sharedstate/jars").glob("*.jar"))
    assert [j.name for j in jars] == [f"sharedstate-spark_2.13-{printed}.jar"]
