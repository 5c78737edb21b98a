"""docs/architecture.md's package map names exactly the packages of the tree: every package of
``benchmark/``, ``annotation/`` and ``review/`` (Django's ``migrations``, ``management`` and
``templatetags`` aside) has its row, and every row names a package that exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APPS = ("benchmark", "annotation", "review")
DJANGO_CONVENTIONS = {"migrations", "management", "templatetags"}
_ROW = re.compile(r"^\| `(?P<app>[a-z_]+)/(?P<package>[a-z_]+)/` \|", re.MULTILINE)


def packages_in_tree(root: Path = ROOT) -> set[str]:
    return {
        f"{app}/{init.parent.name}"
        for app in APPS
        for init in (root / app).glob("*/__init__.py")
        if init.parent.name not in DJANGO_CONVENTIONS
    }


def packages_on_map(text: str) -> list[str]:
    """The packages the "Package map" section lists, one table row each."""
    section = text.split("## Package map", 1)[1].split("\n## ", 1)[0]
    return [f"{m['app']}/{m['package']}" for m in _ROW.finditer(section)]


def test_every_package_of_the_tree_is_on_the_map_and_no_other() -> None:
    on_map = packages_on_map((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))
    in_tree = packages_in_tree()
    assert len(in_tree) >= 40  # the three apps' packages, not an empty glob
    assert sorted(in_tree - set(on_map)) == [], "packages missing from docs/architecture.md"
    assert sorted(set(on_map) - in_tree) == [], "docs/architecture.md names packages that are gone"
    assert len(on_map) == len(set(on_map)), "a package has two rows"


def test_the_check_sees_a_new_package_and_a_removed_one(tmp_path: Path) -> None:
    for name in ("benchmark/projects", "benchmark/migrations", "review/widgets"):
        (tmp_path / name).mkdir(parents=True)
        (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / "annotation").mkdir()
    (tmp_path / "benchmark" / "notes").mkdir()  # a folder without __init__.py is no package
    text = (
        "## Package map\n\n| package | what |\n| --- | --- |\n"
        "| `benchmark/projects/` | projects |\n| `review/gone/` | removed |\n\n## Next\n"
        "| `review/widgets/` | after the section: not on the map |\n"
    )
    assert packages_in_tree(tmp_path) == {"benchmark/projects", "review/widgets"}
    assert packages_on_map(text) == ["benchmark/projects", "review/gone"]
