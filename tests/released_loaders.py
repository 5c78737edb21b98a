"""How the benchmarks' released code reads the files Benchwright exports, restated here in our
own words from reading that code (nothing of it is copied or vendored), so tests can check
that an export loads there without the network, a GPU or the released repositories.

* Agentic-MME (``ChoS3nE11ven/Agentic-MME``, ``dataset_utils.resolve_image_path`` and the
  ``--task_dir`` loop of the runners in ``general/`` and ``atomic/``): the runners take every
  ``*.json`` in the task folder, sorted by name. A task's images are not read from its JSON:
  the first run of digits in the file's stem is taken as a number, padded to four digits
  (``int`` then ``zfill(4)``), and the image is looked for by that number, in the folder given
  with ``--images_dir`` (if any), then ``<dataset root>/image`` and ``<dataset root>/images``,
  with the extensions ``.png``, ``.jpg`` and ``.jpeg`` in that order: first the multi-image
  names ``image_<NNNN>_1``, ``_2``, ... (stopping at the first missing index, taking the first
  folder that has any), then the single name ``image_<NNNN>``. No number or no image is an
  error that stops that task. A run goes to ``<out_dir>/<task file stem>/``.
* m&m's (``RAIVNLab/mnms``, ``mnms/evaluation/evaluator.py``): a task row's ``plan_str`` is
  passed to ``eval``; in best-match mode so is ``alt_plans_str``, and the gold plans are the
  first plus the list the second gives, each turned into code lines by ``nodes_to_code``
  (``benchmark.plans.parse.plan_to_code`` reproduces that conversion).

Plain module: no Django, so pure format tests can use it too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

AGENTIC_MME_IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg")


class NotLoadable(LookupError):
    """What the released code would fail on, and where."""


def agentic_mme_task_files(task_dir: Path) -> list[Path]:
    """The task files a runner given ``--task_dir task_dir`` works through, in its order."""
    return sorted(task_dir.glob("*.json"))


def agentic_mme_number(task_json: Path) -> str:
    """The four-digit number a runner reads from a task file's name."""
    digits = re.search(r"\d+", task_json.stem)
    if digits is None:
        raise NotLoadable(f"{task_json.name}: no number in the file name")
    return str(int(digits.group())).zfill(4)


def agentic_mme_images(
    task_json: Path, dataset_root: Path | None = None, images_dir: Path | None = None
) -> list[Path]:
    """The input images a runner opens for ``task_json`` (``dataset_root`` defaults to the
    task folder's parent, as the runners infer it)."""
    root = dataset_root if dataset_root is not None else task_json.parent.parent
    number = agentic_mme_number(task_json)
    folders = [f for f in (images_dir, root / "image", root / "images") if f and f.exists()]

    def first(folder: Path, stem: str) -> Path | None:
        for extension in AGENTIC_MME_IMAGE_EXTENSIONS:
            if (folder / f"{stem}{extension}").exists():
                return folder / f"{stem}{extension}"
        return None

    for folder in folders:
        several: list[Path] = []
        while (found := first(folder, f"image_{number}_{len(several) + 1}")) is not None:
            several.append(found)
        if several:
            return several
    for folder in folders:
        if (found := first(folder, f"image_{number}")) is not None:
            return [found]
    raise NotLoadable(f"{task_json.name}: no image_{number}.png (or _1, _2, ...) in {folders}")


def agentic_mme_load(dataset_root: Path) -> list[tuple[Path, list[Path]]]:
    """Every task of a dataset folder with its images, as the runners find them with
    ``--task_dir <root>/json --dataset_root <root> --images_dir <root>/images``."""
    images_dir = dataset_root / "images"
    return [
        (task, agentic_mme_images(task, dataset_root, images_dir))
        for task in agentic_mme_task_files(dataset_root / "json")
    ]


def mms_gold_plans(row: dict[str, Any], *, best_match: bool = True) -> list[Any]:
    """The gold plans m&m's evaluator compares a prediction with: ``plan_str`` evaluated, plus
    (best-match mode) every plan in ``alt_plans_str`` evaluated. Evaluated here as Python
    literals: the released code calls ``eval``, which fails the same way on a value that is
    not a string (``TypeError: eval() arg 1 must be a string, bytes or code object``)."""
    plans = [_evaluate(row["plan_str"])]
    if best_match:
        alternatives = _evaluate(row["alt_plans_str"])
        if not isinstance(alternatives, list):
            raise NotLoadable(f"alt_plans_str is {type(alternatives).__name__}, not a list")
        plans += alternatives
    return plans


def _evaluate(value: Any) -> Any:
    if not isinstance(value, str | bytes):
        raise TypeError("eval() arg 1 must be a string, bytes or code object")
    return ast.literal_eval(value if isinstance(value, str) else value.decode())
