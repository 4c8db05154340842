"""Export of the internal annotations to COCO, YOLO and Pascal VOC directory layouts.

Pure over plain data: the caller gives the images' directory, the items with their
annotations and the label list, and a destination directory. What each format carries:

* COCO: all four kinds — boxes and polygons (``bbox``, ``segmentation``, ``area``), points as
  one-keypoint annotations, image classes as annotations with a category only.
* YOLO: boxes (``c cx cy w h``) and polygons (``c x1 y1 …``, the segment format), normalised.
* Pascal VOC: boxes, polygons by their bounding box, and image classes as
  ``ImageSets/Main/<label>_default.txt`` (``1`` / ``-1``), as VOC's classification task has it.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET  # only writes our own data
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any


class Format(StrEnum):
    COCO = "coco"
    YOLO = "yolo"
    VOC = "voc"


@dataclass(frozen=True)
class Shape:
    kind: str
    label: str
    points: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Item:
    path: str
    width: int
    height: int
    shapes: tuple[Shape, ...]


def bounds(points: Sequence[tuple[float, float]]) -> tuple[float, float, float, float]:
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return min(xs), min(ys), max(xs), max(ys)


def polygon_area(points: Sequence[tuple[float, float]]) -> float:
    n = len(points)
    twice = sum(
        points[i][0] * points[(i + 1) % n][1] - points[(i + 1) % n][0] * points[i][1]
        for i in range(n)
    )
    return abs(twice) / 2


def export(
    fmt: Format, items: Sequence[Item], labels: Sequence[str], src: Path, dest: Path
) -> None:
    {Format.COCO: _coco, Format.YOLO: _yolo, Format.VOC: _voc}[fmt](items, list(labels), src, dest)


def _copy_image(src: Path, dest: Path, rel: str) -> None:
    target = dest / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src / rel, target)


def _coco(items: Sequence[Item], labels: list[str], src: Path, dest: Path) -> None:
    cats = {name: i + 1 for i, name in enumerate(labels)}
    images: list[dict[str, Any]] = []
    anns: list[dict[str, Any]] = []
    for image_id, item in enumerate(items, start=1):
        _copy_image(src, dest / "images", item.path)
        images.append(
            {"id": image_id, "file_name": item.path, "width": item.width, "height": item.height}
        )
        for s in item.shapes:
            ann: dict[str, Any] = {
                "id": len(anns) + 1, "image_id": image_id, "category_id": cats[s.label],
                "iscrowd": 0, "attributes": {"kind": s.kind},
            }  # fmt: skip
            if s.kind in ("bbox", "polygon"):
                x0, y0, x1, y1 = bounds(s.points)
                corners = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)] if s.kind == "bbox" else s.points
                ann["bbox"] = [x0, y0, x1 - x0, y1 - y0]
                ann["segmentation"] = [[c for p in corners for c in p]]
                ann["area"] = polygon_area(list(corners))
            elif s.kind == "point":
                x, y = s.points[0]
                ann.update(keypoints=[x, y, 2], num_keypoints=1, bbox=[x, y, 0, 0], area=0)
            else:
                ann["area"] = 0
            anns.append(ann)
    categories = [
        {"id": i, "name": n, "supercategory": "", "keypoints": ["point"], "skeleton": []}
        for n, i in cats.items()
    ]
    doc = {
        "info": {"description": "exported by AIPool"},
        "licenses": [],
        "images": images,
        "annotations": anns,
        "categories": categories,
    }
    (dest / "annotations.json").write_text(json.dumps(doc, indent=1))


def _yolo(items: Sequence[Item], labels: list[str], src: Path, dest: Path) -> None:
    index = {name: i for i, name in enumerate(labels)}
    for item in items:
        _copy_image(src, dest / "images", item.path)
        lines = []
        for s in item.shapes:
            if s.kind == "bbox":
                x0, y0, x1, y1 = bounds(s.points)
                cx, cy = (x0 + x1) / 2 / item.width, (y0 + y1) / 2 / item.height
                w, h = (x1 - x0) / item.width, (y1 - y0) / item.height
                lines.append(f"{index[s.label]} {cx:.6f} {cy:.6f} {w:.6f} {h:.6f}")
            elif s.kind == "polygon":
                coords = " ".join(
                    f"{x / item.width:.6f} {y / item.height:.6f}" for x, y in s.points
                )
                lines.append(f"{index[s.label]} {coords}")
        label_file = dest / "labels" / PurePosixPath(item.path).with_suffix(".txt")
        label_file.parent.mkdir(parents=True, exist_ok=True)
        label_file.write_text("".join(line + "\n" for line in lines))
    names = "".join(f"  {i}: {json.dumps(n)}\n" for i, n in enumerate(labels))
    (dest / "data.yaml").write_text(f"path: .\ntrain: images\nval: images\nnames:\n{names}")


def _voc(items: Sequence[Item], labels: list[str], src: Path, dest: Path) -> None:
    stems = []
    classes: dict[str, set[str]] = {name: set() for name in labels}
    for item in items:
        _copy_image(src, dest / "JPEGImages", item.path)
        stem = str(PurePosixPath(item.path).with_suffix(""))
        stems.append(stem)
        root = ET.Element("annotation")
        ET.SubElement(root, "folder").text = "JPEGImages"
        ET.SubElement(root, "filename").text = item.path
        size = ET.SubElement(root, "size")
        for tag, value in (("width", item.width), ("height", item.height), ("depth", 3)):
            ET.SubElement(size, tag).text = str(value)
        ET.SubElement(root, "segmented").text = "0"
        for s in item.shapes:
            if s.kind == "class":
                classes[s.label].add(stem)
                continue
            if s.kind == "point":
                continue
            x0, y0, x1, y1 = bounds(s.points)
            obj = ET.SubElement(root, "object")
            ET.SubElement(obj, "name").text = s.label
            ET.SubElement(obj, "pose").text = "Unspecified"
            ET.SubElement(obj, "truncated").text = "0"
            ET.SubElement(obj, "difficult").text = "0"
            box = ET.SubElement(obj, "bndbox")
            for tag, coord in (("xmin", x0), ("ymin", y0), ("xmax", x1), ("ymax", y1)):
                ET.SubElement(box, tag).text = str(round(coord))
        xml_file = dest / "Annotations" / f"{stem}.xml"
        xml_file.parent.mkdir(parents=True, exist_ok=True)
        ET.ElementTree(root).write(xml_file, encoding="utf-8", xml_declaration=True)
    main = dest / "ImageSets" / "Main"
    main.mkdir(parents=True, exist_ok=True)
    (main / "default.txt").write_text("".join(f"{s}\n" for s in stems))
    for name, positive in classes.items():
        lines = "".join(f"{s} {1 if s in positive else -1}\n" for s in stems)
        (main / f"{name}_default.txt").write_text(lines)
    (dest / "labelmap.txt").write_text("".join(f"{n}\n" for n in labels))
