"""The package version: the one in the repository's VERSION file, which sbt reads too."""

from importlib import metadata
from pathlib import Path


def _read_version() -> str:
    source_tree = Path(__file__).resolve().parents[2] / "VERSION"
    if source_tree.is_file():  # a checkout (editable install): VERSION is the source of truth
        return source_tree.read_text().strip()
    return metadata.version("sharedstate")


__version__ = _read_version()
