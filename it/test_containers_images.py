"""The image tags of it/images/build_images.py: a hash of each image's inputs, its parent's tag among them,
so the same inputs give the same tags (a second run reuses the cache) and a changed input changes
the tag of that image and of every image on top of it (they rebuild). No Docker needed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "images"))

import build_images as build  # noqa: E402


def chain() -> dict[str, str]:
    base, _ = build.base_image()
    jre, _ = build.jre_image(base.tag)
    spark, _ = build.spark_image(jre.tag)
    return {"base": base.tag, "jre": jre.tag, "spark": spark.tag}


def test_same_inputs_give_the_same_tags_and_tars(monkeypatch, tmp_path):
    monkeypatch.setenv("SHAREDSTATE_CACHE", str(tmp_path))
    first, second = chain(), chain()
    assert first == second
    assert all(tag.startswith(f"sharedstate-it/{name}:") for name, tag in first.items())
    base, _ = build.base_image()
    assert base.tar == tmp_path / "images" / f"base-{base.tag.rsplit(':', 1)[1]}.tar"


def test_a_changed_mirror_changes_every_tag_on_top_of_the_base(monkeypatch):
    before = chain()
    monkeypatch.setattr(build, "debian_mirror", lambda: ("http://mirror.invalid/debian", None))
    after = chain()
    assert all(before[name] != after[name] for name in before), (before, after)


def test_a_changed_recipe_changes_its_image_and_not_its_parents(monkeypatch):
    before = chain()
    monkeypatch.setattr(build, "PYSPARK", "pyspark==4.2.1")
    after = chain()
    assert before["base"] == after["base"] and before["jre"] == after["jre"]
    assert before["spark"] != after["spark"]


def test_the_mirror_is_the_hosts_debian_mirror():
    if not Path("/etc/apt").is_dir():
        pytest.fail("no /etc/apt: the images are built from the host's Debian mirror")
    mirror, _ = build.debian_mirror()
    assert mirror.startswith(("http://", "https://")) and mirror.endswith("/debian"), mirror
