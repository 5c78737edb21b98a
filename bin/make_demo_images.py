"""Draw the demo datasets' images with Pillow, replay the demo agent run, and check the result.

    python bin/make_demo_images.py          # (re)draw every PNG, then check
    python bin/make_demo_images.py --check  # only check the committed files

It writes into the demo datasets' folder, ``review/demo/`` (what ``manage.py load_demo``
reads). The PNGs are committed, so loading the demo never needs this script, and it is not
part of the shipped apps. Re-run it after changing a drawing or a logged tool call. Pure
Pillow: no Django.

The check makes sure that every image a record names exists, that each Agentic-MME crop box
(0-1000 scale) really contains the detail its checkpoint asks about, that every image in the
run folder is what the logged operation produces from its source image, and that the size
budget holds.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageEnhance, ImageFilter, ImageFont, ImageOps

ROOT = Path(__file__).resolve().parents[1] / "review" / "demo"
MAX_IMAGE_BYTES = 30 * 1024
MAX_TOTAL_BYTES = int(1.5 * 1024 * 1024)

Box = tuple[int, int, int, int]
Painter = Callable[[ImageDraw.ImageDraw], None]

_fonts: dict[int, ImageFont.FreeTypeFont | ImageFont.ImageFont] = {}


def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    if size not in _fonts:
        _fonts[size] = ImageFont.load_default(size=size)
    return _fonts[size]


def text_box(
    draw: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, size: int, **kw: Any
) -> Box:
    """Draw text and return its bounding box in pixels."""
    draw.text(xy, text, font=font(size), **kw)
    x1, y1, x2, y2 = draw.textbbox(xy, text, font=font(size), anchor=kw.get("anchor"))
    return int(x1), int(y1), int(math.ceil(x2)), int(math.ceil(y2))


def centered(
    draw: ImageDraw.ImageDraw, cx: float, cy: float, text: str, size: int, **kw: Any
) -> Box:
    return text_box(draw, (cx, cy), text, size, anchor="mm", **kw)


def save(img: Image.Image, path: Path, *, colors: int = 64) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    img.convert("RGB").quantize(colors=colors, dither=Image.Dither.NONE).save(path, optimize=True)


# --------------------------------------------------------------------------- cards (ATP, LLM-I)

CARD = (360, 270)
CAPTION_H = 26


def card(
    caption: str, painter: Painter, *, bg: str = "#f4f1ea", size: tuple[int, int] = CARD
) -> Image.Image:
    """A pictogram with a caption strip, like a figure cut out of a document."""
    img = Image.new("RGB", size, bg)
    draw = ImageDraw.Draw(img)
    painter(draw)
    if not caption:  # a user's own photo (a VQA query image) has no caption
        return img
    w, h = size
    draw.rectangle((0, h - CAPTION_H, w, h), fill="white")
    draw.line((0, h - CAPTION_H, w, h - CAPTION_H), fill="#b8b8b8")
    draw.text((8, h - CAPTION_H / 2), caption, font=font(12), fill="#222222", anchor="lm")
    return img


def plain(size: tuple[int, int], painter: Painter, *, bg: str = "#ffffff") -> Image.Image:
    img = Image.new("RGB", size, bg)
    painter(ImageDraw.Draw(img))
    return img


def table(
    d: ImageDraw.ImageDraw, rows: list[list[str]], *, top: int = 34, widths: list[int]
) -> None:
    x0, row_h = 20, 34
    d.text((x0, 10), "", font=font(12))
    for r, row in enumerate(rows):
        y = top + r * row_h
        fill = "#dfe7f1" if r == 0 else ("#ffffff" if r % 2 else "#f3f6fa")
        d.rectangle((x0, y, x0 + sum(widths), y + row_h), fill=fill, outline="#9aa7b5")
        x = x0
        for c, cell in enumerate(row):
            d.text((x + 8, y + row_h / 2), cell, font=font(13), fill="#1b2733", anchor="lm")
            x += widths[c]
            if c < len(row) - 1:
                d.line((x, y, x, y + row_h), fill="#9aa7b5")


def bars(
    d: ImageDraw.ImageDraw,
    labels: list[str],
    values: list[float],
    *,
    box: Box = (40, 30, 340, 214),
    vmax: float,
    colors: Iterable[str] = ("#3b6ea5",),
    fmt: str = "{:g}",
) -> None:
    x1, y1, x2, y2 = box
    d.line((x1, y1, x1, y2), fill="#555555")
    d.line((x1, y2, x2, y2), fill="#555555")
    palette = list(colors)
    step = (x2 - x1) / len(values)
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        bx = x1 + step * i + step * 0.2
        top = y2 - (y2 - y1 - 14) * value / vmax
        d.rectangle((bx, top, bx + step * 0.6, y2), fill=palette[i % len(palette)])
        d.text(
            (bx + step * 0.3, top - 3),
            fmt.format(value),
            font=font(11),
            fill="#222222",
            anchor="md",
        )
        d.text((bx + step * 0.3, y2 + 4), label, font=font(11), fill="#222222", anchor="ma")


def lines(
    d: ImageDraw.ImageDraw,
    xs: list[str],
    series: dict[str, tuple[list[float], str]],
    *,
    vmin: float,
    vmax: float,
    box: Box = (44, 24, 330, 210),
) -> None:
    x1, y1, x2, y2 = box
    d.line((x1, y1, x1, y2), fill="#555555")
    d.line((x1, y2, x2, y2), fill="#555555")
    step = (x2 - x1 - 30) / (len(xs) - 1)
    for i, x in enumerate(xs):
        d.text((x1 + 15 + step * i, y2 + 4), x, font=font(11), fill="#222222", anchor="ma")
    for n, (name, (values, color)) in enumerate(series.items()):
        pts = [
            (x1 + 15 + step * i, y2 - (y2 - y1) * (v - vmin) / (vmax - vmin))
            for i, v in enumerate(values)
        ]
        d.line(pts, fill=color, width=3)
        for (px, py), v in zip(pts, values, strict=True):
            d.ellipse((px - 4, py - 4, px + 4, py + 4), fill=color)
            d.text((px + 6, py - 4), f"{v:g}", font=font(10), fill=color, anchor="ld")
        d.text((x2 - 4, y1 + 4 + 16 * n), name, font=font(11), fill=color, anchor="ra")


def flow(d: ImageDraw.ImageDraw, boxes: list[str], *, y: int = 110, fill: str = "#e4ecd9") -> None:
    w = 300 / len(boxes)
    for i, label in enumerate(boxes):
        x = 30 + i * w
        d.rounded_rectangle((x, y - 34, x + w - 14, y + 34), radius=8, fill=fill, outline="#5b6b4a")
        for k, part in enumerate(label.split("\n")):
            d.text(
                (x + (w - 14) / 2, y - 8 + 16 * k), part, font=font(11), fill="#1f2a17", anchor="mm"
            )
        if i < len(boxes) - 1:
            ax = x + w - 14
            d.line((ax, y, ax + 14, y), fill="#5b6b4a", width=2)
            d.polygon([(ax + 14, y), (ax + 9, y - 4), (ax + 9, y + 4)], fill="#5b6b4a")


def eye(d: ImageDraw.ImageDraw, cx: int, cy: int, *, liner: str = "") -> None:
    """A hooded eye: a fold of skin covers the upper lid, so most liner disappears under it."""
    d.ellipse((cx - 70, cy - 28, cx + 70, cy + 28), fill="white", outline="#6b4a3a", width=2)
    d.ellipse((cx - 22, cy - 22, cx + 22, cy + 22), fill="#5a7d4f")
    d.ellipse((cx - 9, cy - 9, cx + 9, cy + 9), fill="#111111")
    if liner == "tight":
        d.arc((cx - 70, cy - 28, cx + 70, cy + 28), 195, 345, fill="#111111", width=4)
    elif liner == "thick":
        d.arc((cx - 72, cy - 34, cx + 72, cy + 28), 195, 345, fill="#111111", width=16)
    # The hood: skin folding down over the crease, almost to the lash line.
    d.chord((cx - 86, cy - 70, cx + 86, cy - 14), 0, 180, fill="#e2b497", outline="#b88a6e")
    d.arc((cx - 100, cy - 110, cx + 100, cy - 40), 200, 340, fill="#8a5a3c", width=6)  # brow
    if liner == "wing":
        d.line((cx - 50, cy - 20, cx + 68, cy - 14), fill="#111111", width=3)
        d.line((cx + 68, cy - 14, cx + 100, cy - 36), fill="#111111", width=3)


# ruff counts the nested drawing functions into this list of images (radon counts 1 here).
def _atp_images() -> dict[str, Image.Image]:  # noqa: C901, PLR0915
    img: dict[str, Image.Image] = {}

    img["atp_demo_01_0"] = card(
        "Table 1: keyword-spotting accuracy",
        lambda d: table(
            d,
            [
                ["Model", "Params", "Accuracy"],
                ["FernNet (ours)", "48k", "96.1%"],
                ["CNN baseline", "210k", "94.3%"],
                ["Tiny transformer", "390k", "95.4%"],
            ],
            widths=[150, 80, 90],
        ),
    )
    img["atp_demo_01_1"] = card(
        "Figure 2: accuracy (%) vs. noise level",
        lambda d: lines(
            d,
            ["20 dB", "10 dB", "0 dB"],
            {
                "FernNet": ([95.8, 93.0, 85.2], "#2b6cb0"),
                "CNN": ([92.1, 86.4, 71.9], "#c05621"),
            },
            vmin=65,
            vmax=100,
        ),
    )
    img["atp_demo_01_2"] = card(
        "Figure 1: FernNet architecture",
        lambda d: flow(
            d,
            ["Log-mel\nfeatures", "Depthwise\nconv x4", "Attention\npooling", "12-way\nclassifier"],
        ),
    )

    def panel(d: ImageDraw.ImageDraw) -> None:
        d.rounded_rectangle((30, 40, 330, 200), radius=14, fill="#3a3f44")
        for i, label in enumerate(["Power", "1 cup", "2 cups", "Steam"]):
            cx = 70 + i * 62
            d.ellipse((cx - 20, 100, cx + 20, 140), fill="#d9d9d9", outline="#111111")
            d.text((cx, 155), label, font=font(12), fill="white", anchor="ma")
        d.ellipse((290, 110, 310, 130), fill="#f08a24")
        d.text((300, 155), "Descale", font=font(11), fill="#f6c08a", anchor="ma")
        d.text((180, 62), "BRIO 2", font=font(16), fill="white", anchor="mm")

    img["atp_demo_02_0"] = card("Brio 2 front panel", panel)

    def wand(d: ImageDraw.ImageDraw) -> None:
        d.rectangle((60, 30, 140, 70), fill="#5b6168")
        d.line((120, 70, 190, 170), fill="#a9b0b7", width=10)
        d.polygon(
            [(210, 140), (300, 140), (290, 225), (220, 225)], fill="#c9ced3", outline="#6d747b"
        )
        d.rectangle((225, 150, 285, 170), fill="#fbf7ef")
        d.text(
            (250, 110),
            "tip just below\nthe milk surface",
            font=font(11),
            fill="#333333",
            anchor="mm",
        )

    img["atp_demo_02_1"] = card("Steam wand with frothing jug", wand)

    def descale(d: ImageDraw.ImageDraw) -> None:
        d.rectangle((0, 0, 360, 244), fill="#3a3f44")
        d.ellipse((140, 70, 220, 150), fill="#f08a24")
        for k in range(8):
            a = k * math.pi / 4
            d.line(
                (
                    180 + 55 * math.cos(a),
                    110 + 55 * math.sin(a),
                    180 + 75 * math.cos(a),
                    110 + 75 * math.sin(a),
                ),
                fill="#f6c08a",
                width=3,
            )
        d.text((180, 205), "DESCALE", font=font(16), fill="#f6c08a", anchor="mm")

    img["atp_demo_02_2"] = card("Descale light blinking orange", descale)

    def ingredients(d: ImageDraw.ImageDraw) -> None:
        items = [
            ("#fff4d6", "4 eggs"),
            ("#d64534", "400 g tin\ntomatoes"),
            ("#c9a15a", "1 onion"),
            ("#c8302b", "1 red\npepper"),
            ("#efe9dc", "2 garlic\ncloves"),
        ]
        for i, (color, label) in enumerate(items):
            cx, cy = 40 + i * 70, 100
            d.ellipse((cx - 26, cy - 26, cx + 26, cy + 26), fill=color, outline="#6b5a45")
            d.multiline_text(
                (cx, cy + 40), label, font=font(11), fill="#333333", anchor="ma", align="center"
            )

    img["atp_demo_03_0"] = card("Shakshuka ingredients for two", ingredients)

    def spices(d: ImageDraw.ImageDraw) -> None:
        for i, (color, label) in enumerate(
            [("#8a5a2b", "cumin"), ("#c8442b", "sweet paprika"), ("#a4161a", "chili flakes")]
        ):
            cx = 70 + i * 110
            d.chord((cx - 45, 70, cx + 45, 170), 0, 180, fill="#e9e4da", outline="#7a6f60")
            d.ellipse((cx - 40, 100, cx + 40, 130), fill=color)
            d.text((cx, 185), label, font=font(12), fill="#333333", anchor="ma")

    img["atp_demo_03_1"] = card("Spices: cumin, sweet paprika, chili flakes", spices)

    img["atp_demo_04_query"] = card("", lambda d: eye(d, 180, 125), bg="#f2d3bf")
    img["atp_demo_04_0"] = card(
        "Thin wing angled toward the brow tail",
        lambda d: eye(d, 170, 125, liner="wing"),
        bg="#f2d3bf",
    )
    img["atp_demo_04_1"] = card(
        "Tightlining the upper waterline", lambda d: eye(d, 180, 125, liner="tight"), bg="#f2d3bf"
    )
    img["atp_demo_04_2"] = card(
        "Mistake: thick liner hidden under the lid",
        lambda d: eye(d, 180, 125, liner="thick"),
        bg="#f2d3bf",
    )

    def bathroom(d: ImageDraw.ImageDraw) -> None:
        for x in range(0, 360, 30):
            for y in range(0, 270, 30):
                d.rectangle((x, y, x + 30, y + 30), fill="#f7f9fa", outline="#d5dadd")
        d.rectangle((130, 30, 230, 110), fill="#cfe3ea", outline="#9fb3ba")
        d.rectangle((110, 140, 250, 170), fill="white", outline="#9aa3a8")
        d.rectangle((165, 170, 195, 244), fill="white", outline="#9aa3a8")
        d.ellipse((172, 118, 188, 140), fill="#d0d4d6")

    img["atp_demo_05_query"] = card("", bathroom)

    def shelf(d: ImageDraw.ImageDraw) -> None:
        d.rectangle((0, 0, 360, 244), fill="#f7f9fa")
        d.rectangle((70, 90, 290, 108), fill="#b8864b", outline="#7a5630")
        for i, c in enumerate(["#e8ded0", "#6f8f72", "#d9b38c"]):
            d.rectangle((95 + i * 60, 50, 135 + i * 60, 90), fill=c)
        d.rectangle((110, 160, 250, 244), fill="white", outline="#9aa3a8")

    img["atp_demo_05_0"] = card("Floating oak shelf above the toilet", shelf)

    def tap(d: ImageDraw.ImageDraw) -> None:
        d.rectangle((0, 180, 360, 244), fill="white")
        d.rectangle((170, 70, 190, 180), fill="#b5913f")
        d.rectangle((150, 60, 250, 78), fill="#c9a449")
        d.rectangle((236, 78, 250, 110), fill="#c9a449")
        d.rectangle((140, 50, 200, 60), fill="#a8842f")

    img["atp_demo_05_1"] = card("Brushed brass tap", tap)

    def pothos(d: ImageDraw.ImageDraw) -> None:
        d.rectangle((0, 0, 360, 244), fill="#f7f9fa")
        d.rectangle((90, 40, 270, 52), fill="#b8864b")
        d.polygon([(160, 10), (200, 10), (195, 40), (165, 40)], fill="#c66b3d")
        for k in range(9):
            x = 150 + (k % 3) * 12
            y = 60 + k * 18
            d.ellipse((x - 9, y - 6, x + 9, y + 6), fill="#3d8b3d")
        d.line((160, 40, 170, 210), fill="#2f6e2f", width=2)
        d.rectangle((40, 150, 120, 244), fill="white", outline="#9aa3a8")

    img["atp_demo_05_2"] = card("Pothos trailing from a high shelf", pothos)

    def reader(d: ImageDraw.ImageDraw, *, screen: str = "#eceae4", label: str = "") -> None:
        d.rounded_rectangle((120, 20, 240, 230), radius=12, fill="#26292d")
        d.rectangle((130, 34, 230, 204), fill=screen)
        for k in range(8):
            d.line((138, 48 + k * 18, 222 - (k % 3) * 10, 48 + k * 18), fill="#6b6b6b", width=2)
        d.text((180, 217), label or "LUMO", font=font(10), fill="#bbbbbb", anchor="mm")

    img["atp_demo_06_0"] = card("Lumo 7 front: 7-inch, 300 ppi screen", reader)

    def warm(d: ImageDraw.ImageDraw) -> None:
        for i, (screen, label) in enumerate([("#e8f0fb", "cool"), ("#f7dfb7", "warm")]):
            dx = -85 + i * 170
            d.rounded_rectangle((120 + dx, 20, 240 + dx, 210), radius=12, fill="#26292d")
            d.rectangle((130 + dx, 34, 230 + dx, 196), fill=screen)
            d.text((180 + dx, 226), label, font=font(12), fill="#333333", anchor="mm")

    img["atp_demo_06_1"] = card("Warm light: cool vs. warm setting", warm)

    def water(d: ImageDraw.ImageDraw) -> None:
        reader(d)
        d.rectangle((0, 170, 360, 244), fill="#7fb3d5")
        for k in range(6):
            d.arc((k * 60, 160, k * 60 + 60, 184), 0, 180, fill="#4a88b8", width=3)
        d.text((300, 40), "IPX8", font=font(18), fill="#1d4f75", anchor="mm")

    img["atp_demo_06_2"] = card("IPX8: survives a drop in the bath", water)

    def port(d: ImageDraw.ImageDraw) -> None:
        d.rounded_rectangle((40, 90, 320, 170), radius=16, fill="#26292d")
        d.rounded_rectangle((160, 150, 200, 162), radius=5, fill="#0f0f0f", outline="#8a8a8a")
        d.text((180, 200), "USB-C", font=font(14), fill="#333333", anchor="mm")
        d.line((180, 165, 180, 190), fill="#333333")

    img["atp_demo_06_3"] = card("USB-C port on the bottom edge", port)

    def network(d: ImageDraw.ImageDraw, *, route: bool = False) -> None:
        stops = {
            "Airport": (40, 60),
            "Central": (180, 60),
            "Harbour Gate": (180, 130),
            "Cathedral": (260, 180),
            "Market Sq.": (320, 220),
        }
        if route:
            d.line([stops[s] for s in stops], fill="#f5d90a", width=14)
        d.line((stops["Airport"], stops["Central"]), fill="#2b6cb0", width=6)
        d.line(
            [stops[s] for s in ["Central", "Harbour Gate", "Cathedral", "Market Sq."]],
            fill="#2f9e44",
            width=6,
        )
        d.line(((180, 60), (320, 30)), fill="#2f9e44", width=6)
        for name, (x, y) in stops.items():
            d.ellipse((x - 7, y - 7, x + 7, y + 7), fill="white", outline="#222222", width=2)
            d.text(
                (x + 9 if x < 300 else x - 9, y - 10),
                name,
                font=font(11),
                fill="#222222",
                anchor="ld" if x < 300 else "rd",
            )
        d.text((110, 70), "Blue line", font=font(10), fill="#2b6cb0", anchor="ma")
        d.text((205, 100), "Tram 3", font=font(10), fill="#2f9e44", anchor="lm")

    img["atp_demo_07_0"] = card("Port Veyra rail and tram map", network)

    def machine(d: ImageDraw.ImageDraw) -> None:
        d.rectangle((110, 20, 250, 240), fill="#d64545")
        d.rectangle((125, 40, 235, 110), fill="#e8f4ff")
        d.text((180, 60), "90 min, zones A-B", font=font(10), fill="#222222", anchor="mm")
        d.text((180, 86), "3.20", font=font(20), fill="#222222", anchor="mm")
        for k in range(6):
            d.rectangle(
                (130 + (k % 3) * 35, 125 + (k // 3) * 30, 155 + (k % 3) * 35, 145 + (k // 3) * 30),
                fill="#f0f0f0",
            )
        d.rectangle((150, 200, 210, 210), fill="#222222")

    img["atp_demo_07_1"] = card("Ticket machine: 90-minute ticket 3.20", machine)

    def stop(d: ImageDraw.ImageDraw) -> None:
        d.line((180, 60, 180, 240), fill="#555555", width=6)
        d.rectangle((110, 30, 250, 110), fill="#2f9e44")
        d.text((180, 55), "3", font=font(26), fill="white", anchor="mm")
        d.text((180, 92), "Market Square", font=font(13), fill="white", anchor="mm")

    img["atp_demo_07_2"] = card("Tram 3 stop: Market Square (Old Town)", stop)

    def baikal(d: ImageDraw.ImageDraw) -> None:
        d.rectangle((0, 0, 360, 244), fill="#dfe8cf")
        d.line(
            [(110, 215), (140, 180), (175, 150), (205, 115), (240, 80), (262, 45), (275, 20)],
            fill="#3c7fb1",
            width=18,
        )
        d.text((60, 120), "RUSSIA", font=font(13), fill="#555555")
        d.text((170, 205), "Irkutsk", font=font(11), fill="#333333")
        d.ellipse((160, 208, 166, 214), fill="#333333")
        d.text((230, 130), "Lake Baikal", font=font(12), fill="#1d4f75")

    img["atp_demo_08_0"] = card("Map: Lake Baikal in southern Siberia", baikal)
    return img


def _llmi_images() -> dict[str, Image.Image]:
    img: dict[str, Image.Image] = {}

    def balcony(d: ImageDraw.ImageDraw) -> None:
        d.rectangle((0, 0, 480, 200), fill="#f0ece4")
        d.rectangle((300, 30, 420, 200), fill="#a7c4d9", outline="#777777", width=3)
        d.rectangle((0, 200, 480, 360), fill="#c9c1b4")
        for x in range(20, 480, 28):
            d.line((x, 230, x, 330), fill="#4b4b4b", width=3)
        d.line((0, 230, 480, 230), fill="#4b4b4b", width=5)
        d.line((0, 330, 480, 330), fill="#4b4b4b", width=3)

    img["mm_01_balcony"] = plain((480, 360), balcony)

    def budget(d: ImageDraw.ImageDraw) -> None:
        d.text((260, 24), "Our budget", font=font(18), fill="#333333", anchor="mm")
        # Drawn by hand: transport is too big (60 degrees for 10%) and savings too small (30
        # degrees for 15%); rent, food and other are right.
        slices = [
            ("rent 45%", 162, "#e07a5f"),
            ("food 20%", 72, "#81b29a"),
            ("transport 10%", 60, "#f2cc8f"),
            ("savings 15%", 30, "#3d405b"),
            ("other 10%", 36, "#a8dadc"),
        ]
        start = -90.0
        for label, extent, color in slices:
            d.pieslice(
                (120, 60, 400, 340), start, start + extent, fill=color, outline="white", width=2
            )
            mid = math.radians(start + extent / 2)
            d.text(
                (260 + 175 * math.cos(mid), 200 + 160 * math.sin(mid)),
                label,
                font=font(13),
                fill="#222222",
                anchor="mm",
            )
            start += extent

    img["mm_02_budget_drawing"] = plain((520, 380), budget, bg="#fffdf6")

    def bike(d: ImageDraw.ImageDraw) -> None:
        d.ellipse((40, 170, 180, 300), outline="#222222", width=6)  # flat: squashed rear wheel
        d.ellipse((300, 160, 440, 300), outline="#222222", width=6)
        d.line((110, 235, 200, 150, 330, 150, 370, 230), fill="#2b6cb0", width=6)
        d.line((200, 150, 230, 235, 110, 235), fill="#2b6cb0", width=6)
        d.line((230, 235, 330, 150), fill="#2b6cb0", width=6)
        d.line((200, 150, 190, 120), fill="#222222", width=5)
        d.line((170, 118, 215, 118), fill="#222222", width=6)
        d.line((330, 150, 320, 110, 350, 105), fill="#222222", width=5)
        d.text((110, 320), "rear tyre flat", font=font(13), fill="#c0392b", anchor="mm")

    img["mm_03_bike"] = plain((480, 340), bike)

    def valve(d: ImageDraw.ImageDraw) -> None:
        d.arc((-200, 180, 560, 700), 200, 340, fill="#222222", width=40)
        d.rectangle((160, 70, 200, 200), fill="#b8bcc0", outline="#666666")
        d.rectangle((172, 30, 188, 70), fill="#9ea3a8", outline="#666666")
        d.rectangle((168, 20, 192, 32), fill="#7d8287")
        d.text((260, 50), "locknut on top", font=font(12), fill="#333333", anchor="lm")
        d.line((195, 26, 255, 50), fill="#333333")

    img["mm_03_valve"] = plain((400, 300), valve)

    def desk(d: ImageDraw.ImageDraw) -> None:
        d.rectangle((0, 0, 440, 220), fill="#e9eef2")
        d.rectangle((40, 200, 400, 220), fill="#8b5e3c")
        d.line((60, 220, 60, 320), fill="#8b5e3c", width=8)
        d.line((380, 220, 380, 320), fill="#8b5e3c", width=8)
        d.rectangle((150, 110, 290, 195), fill="#2d2d2d")
        d.rectangle((200, 195, 240, 200), fill="#555555")
        for k in range(5):
            d.line((60 + k * 12, 150, 70 + k * 12, 198), fill="#c0392b", width=3)

    img["train_mm_desk"] = plain((440, 330), desk)
    return img


# --------------------------------------------------------------------------- Agentic-MME scenes

SceneResult = tuple[Image.Image, dict[str, Box]]


def _scene_parking() -> SceneResult:
    img = Image.new("RGB", (1200, 800), "#b7d3e9")
    d = ImageDraw.Draw(img)
    d.rectangle((0, 420, 1200, 800), fill="#6d6f73")
    d.rectangle((0, 160, 520, 420), fill="#c7b299")
    for x in range(30, 500, 80):
        for y in (190, 280):
            d.rectangle((x, y, x + 45, y + 55), fill="#5d7288")
    d.text((260, 385), "SUPERMARKET", font=font(34), fill="#2d5d34", anchor="mm")
    for x in range(60, 1200, 190):
        d.line((x, 560, x + 40, 760), fill="#f2f2f2", width=6)
    for x, color in ((140, "#b83a3a"), (520, "#3a6eb8"), (900, "#e0b43a")):
        d.rounded_rectangle((x, 600, x + 170, 690), radius=20, fill=color)
        d.ellipse((x + 18, 670, x + 58, 710), fill="#1b1b1b")
        d.ellipse((x + 112, 670, x + 152, 710), fill="#1b1b1b")
    # The pole and its small sign.
    d.line((1030, 300, 1030, 600), fill="#4a4a4a", width=8)
    d.rectangle((996, 318, 1066, 380), fill="#f8f8f8", outline="#1f4fa0", width=2)
    boxes = {
        "sign_title": centered(d, 1031, 331, "PAY & DISPLAY", 7, fill="#1f4fa0"),
        "sign_free": centered(d, 1031, 349, "FREE AFTER 18:00", 7, fill="#c0392b"),
        "sign_sunday": centered(d, 1031, 365, "SUNDAYS FREE", 7, fill="#1f4fa0"),
    }
    boxes["sign"] = (996, 318, 1067, 381)
    return img, boxes


def _scene_flowchart() -> SceneResult:
    img = Image.new("RGB", (1000, 700), "#fbfbf8")
    d = ImageDraw.Draw(img)
    d.text((500, 50), "ORDER FULFILMENT", font=font(30), fill="#333333", anchor="mm")
    steps = ["Receive order", "Pick items", "Quality check", "Pack order", "Ship"]
    boxes: dict[str, Box] = {}
    for i, step in enumerate(steps):
        x = 40 + i * 192
        d.rounded_rectangle(
            (x, 300, x + 160, 400), radius=14, fill="#dbe9f6", outline="#2b5a87", width=3
        )
        boxes[step] = centered(d, x + 80, 350, step, 20, fill="#173a5a")
        if i < len(steps) - 1:
            d.line((x + 160, 350, x + 192, 350), fill="#2b5a87", width=4)
            d.polygon([(x + 192, 350), (x + 182, 343), (x + 182, 357)], fill="#2b5a87")
    d.text(
        (500, 520),
        "Failed checks go back to Pick items",
        font=font(18),
        fill="#8a3b12",
        anchor="mm",
    )
    # The photo was taken upside down: the whole sheet is turned 180 degrees.
    w, h = img.size
    flipped = {k: (w - b[2], h - b[3], w - b[0], h - b[1]) for k, b in boxes.items()}
    return img.rotate(180), flipped


def _scene_exchange() -> SceneResult:
    """An exchange-office board photographed in poor light: every value is between 10 and 45."""
    img = Image.new("RGB", (960, 720), (14, 14, 18))
    d = ImageDraw.Draw(img)
    d.rectangle((220, 120, 740, 560), fill=(24, 24, 30), outline=(40, 40, 44), width=4)
    d.text((480, 165), "EXCHANGE", font=font(34), fill=(44, 40, 22), anchor="mm")
    d.text((560, 225), "WE BUY", font=font(18), fill=(40, 40, 40), anchor="mm")
    d.text((680, 225), "WE SELL", font=font(18), fill=(40, 40, 40), anchor="mm")
    rows = [
        ("USD", "0.921", "0.958"),
        ("EUR", "1.072", "1.109"),
        ("GBP", "1.247", "1.296"),
        ("CHF", "1.018", "1.061"),
    ]
    boxes: dict[str, Box] = {}
    for i, (cur, buy, sell) in enumerate(rows):
        y = 290 + i * 66
        b1 = text_box(d, (270, y), cur, 26, fill=(36, 36, 36), anchor="lm")
        b2 = centered(d, 560, y, buy, 26, fill=(36, 33, 16))
        b3 = centered(d, 680, y, sell, 26, fill=(36, 33, 16))
        boxes[f"{cur}_row"] = (b1[0], min(b1[1], b2[1]), b3[2], max(b1[3], b3[3]))
        boxes[f"{cur}_buy"] = b2
    d.rectangle((0, 600, 960, 720), fill=(10, 10, 12))
    return img, boxes


def _scene_library() -> SceneResult:
    img = Image.new("RGB", (1200, 800), "#efe6d6")
    d = ImageDraw.Draw(img)
    d.rectangle((80, 60, 1120, 760), fill="#7a5230")
    boxes: dict[str, Box] = {}
    palette = [
        "#8c2f39",
        "#2f4858",
        "#33658a",
        "#86bbd8",
        "#758e4f",
        "#f6ae2d",
        "#6a4c93",
        "#3d5a80",
    ]
    for shelf, top in enumerate((90, 420)):
        d.rectangle((95, top + 300, 1105, top + 318), fill="#5a3b22")
        x = 110
        k = 0
        while x < 1080:
            width = 28 + (k * 7) % 18
            height = 240 + (k * 37) % 50
            d.rectangle(
                (x, top + 300 - height, x + width, top + 300),
                fill=palette[(k + shelf) % len(palette)],
            )
            if shelf == 0 and k == 14:
                # The book the question is about: a cream spine with its title written top to
                # bottom, as English spines are.
                d.rectangle((x, top + 300 - height, x + 40, top + 300), fill="#efe3c2")
                spine = Image.new("RGB", (height - 20, 40), "#efe3c2")
                sd = ImageDraw.Draw(spine)
                sd.text(
                    (6, 20), "ON THE ORIGIN OF SPECIES", font=font(12), fill="#3a2a14", anchor="lm"
                )
                sd.text((height - 26, 20), "DARWIN", font=font(9), fill="#3a2a14", anchor="rm")
                spine = spine.rotate(-90, expand=True)
                img.paste(spine, (x, top + 300 - height + 10))
                boxes["spine"] = (x, top + 300 - height + 10, x + 40, top + 290)
                width = 40
            x += width + 2
            k += 1
    # A small acquisition sticker on the shelf edge below the book.
    sx = boxes["spine"][0] - 10
    d.rectangle((sx, 392, sx + 60, 407), fill="#fdfdf5", outline="#999999")
    boxes["sticker"] = centered(d, sx + 30, 400, "ACQ. 1961", 8, fill="#222222")
    d.rectangle((300, 20, 900, 50), fill="#3b2a1a")
    d.text((600, 35), "RARE BOOKS READING ROOM", font=font(18), fill="#e9d8a6", anchor="mm")
    return img, boxes


MME_SCENES: dict[str, Callable[[], SceneResult]] = {
    "image_demo01": _scene_parking,
    "image_demo02": _scene_flowchart,
    "image_demo03": _scene_exchange,
    "image_demo04": _scene_library,
}


# --------------------------------------------------------------------------- Agentic-MME operations


def denormalize(bbox: list[float], width: int, height: int) -> Box:
    """0-1000 box to pixels, truncating as the Agentic-MME toolbox does."""
    x1, y1, x2, y2 = (
        int(bbox[0] / 1000 * width),
        int(bbox[1] / 1000 * height),
        int(bbox[2] / 1000 * width),
        int(bbox[3] / 1000 * height),
    )
    x1, x2 = sorted((max(0, min(x1, width)), max(0, min(x2, width))))
    y1, y2 = sorted((max(0, min(y1, height)), max(0, min(y2, height))))
    return x1, y1, x2, y2


def normalize(box: Box, width: int, height: int) -> list[int]:
    """The tightest 0-1000 box whose denormalized pixels still contain ``box``."""
    x1, y1, x2, y2 = box
    return [
        math.floor(x1 * 1000 / width),
        math.floor(y1 * 1000 / height),
        math.ceil(x2 * 1000 / width),
        math.ceil(y2 * 1000 / height),
    ]


def apply_op(op: str, args: dict[str, Any], src: Image.Image) -> tuple[Image.Image, dict[str, Any]]:
    """One atomic operation with the released toolbox's semantics. Returns the new image and
    the output fields that depend on it."""
    src = src.convert("RGB")
    extra: dict[str, Any] = {}
    if op == "crop":
        box = denormalize(args["bbox_2d"], *src.size)
        out = src.crop(box)
        zoom = float(args.get("zoom_scale", 1.0))
        if zoom > 1.0:
            out = out.resize(
                (int(out.width * zoom), int(out.height * zoom)), Image.Resampling.LANCZOS
            )
        extra["bbox_absolute"] = list(box)
    elif op == "rotate":
        out = src.rotate(float(args["angle"]), expand=bool(args.get("expand", True)))
    elif op == "flip":
        direction = args.get("direction", "horizontal")
        out = ImageOps.mirror(src) if direction == "horizontal" else ImageOps.flip(src)
        if direction == "both":
            out = ImageOps.flip(ImageOps.mirror(src))
    elif op == "enhance":
        out = src
        for key, enhancer in (
            ("brightness", ImageEnhance.Brightness),
            ("contrast", ImageEnhance.Contrast),
            ("sharpness", ImageEnhance.Sharpness),
        ):
            if args.get(key) is not None:
                out = enhancer(out).enhance(float(args[key]))
    elif op == "autocontrast":
        out = ImageOps.autocontrast(src, cutoff=float(args.get("cutoff", 0)))
    elif op == "sharpen":
        out = src.filter(ImageFilter.SHARPEN)
    elif op == "grayscale":
        out = src.convert("L").convert("RGB")
    else:
        raise ValueError(f"the demo replay does not implement {op!r}")
    extra["size"] = list(out.size)
    return out, extra


def png_bytes(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "PNG", optimize=True)
    return buf.getvalue()


def replay_run(run_dir: Path, task: dict[str, Any], *, write: bool) -> list[str]:
    """Apply each logged image operation to its source image; write or compare the outputs.
    Returns the problems found."""
    problems: list[str] = []
    events = json.loads((run_dir / "tool_use_list.json").read_text(encoding="utf-8"))
    images: list[Image.Image] = [
        Image.open(ROOT / "agentic-mme" / task["input"]["image"]).convert("RGB")
    ]
    for event in events:
        out_fields = event["output"]
        if "output_path" not in out_fields:
            continue
        src = images[event["arguments"]["image_index"]]
        out, extra = apply_op(event["tool_name"], event["arguments"], src)
        where = f"{run_dir.name} event {event['index']}"
        for key, value in extra.items():
            if out_fields.get(key) != value:
                problems.append(
                    f"{where}: logged {key} {out_fields.get(key)} but the op gives {value}"
                )
        if out_fields["new_image_index"] != len(images):
            problems.append(f"{where}: new_image_index should be {len(images)}")
        path = run_dir / out_fields["output_path"]
        if write:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(png_bytes(out))
        elif not path.is_file():
            problems.append(f"{where}: {path.name} is missing")
        elif Image.open(path).convert("RGB").tobytes() != out.tobytes():
            problems.append(f"{where}: {path.name} is not what the logged operation produces")
        images.append(out)
    return problems


# --------------------------------------------------------------------------- checks

MME_DETAILS: dict[tuple[str, str], list[str]] = {
    # (task file, checkpoint id) -> the drawn details its crop must contain.
    ("demo01.json", "C1"): ["sign_free"],
    ("demo03.json", "C2"): ["EUR_buy"],
    ("demo04.json", "C1"): ["spine"],
    ("demo04.json", "C3"): ["sticker"],
}


def _contains(outer: Box, inner: Box) -> bool:
    return (
        outer[0] <= inner[0]
        and outer[1] <= inner[1]
        and outer[2] >= inner[2]
        and outer[3] >= inner[3]
    )


def check(details: dict[str, dict[str, Box]]) -> list[str]:
    problems: list[str] = []

    def need(base: Path, rel: str, where: str) -> None:
        if not (base / rel).is_file():
            problems.append(f"{where}: missing image {rel}")

    atp = ROOT / "atp"
    for line in (atp / "data.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        for rel in row["images"] + ([row["image_query"]] if row["image_query"] else []):
            need(atp, rel, row["trace_id"])
        if [p for doc in row["doc"] for p in doc["images"]] != row["images"]:
            problems.append(f"{row['trace_id']}: images are not the document images in order")

    llmi = ROOT / "llmi"
    for row in json.loads((llmi / "mm_input.json").read_text(encoding="utf-8")):
        for rel in row["images"]:
            need(llmi, rel, "mm_input.json")
    for row in json.loads((llmi / "train_sample.json").read_text(encoding="utf-8")):
        for image in row.get("images", []):
            need(llmi, image["image"], "train_sample.json")

    mme = ROOT / "agentic-mme"
    for task_file in sorted((mme / "json").glob("*.json")):
        task = json.loads(task_file.read_text(encoding="utf-8"))
        need(mme, task["input"]["image"], task_file.name)
        name = Path(task["input"]["image"]).stem
        with Image.open(mme / task["input"]["image"]) as im:
            size = im.size
        for cp in task["process_evaluation"]["checkpoints"]:
            bbox = (cp.get("code_check") or {}).get("bbox_2d")
            if not bbox:
                continue
            wanted = MME_DETAILS.get((task_file.name, cp["id"]))
            if wanted is None:
                problems.append(f"{task_file.name} {cp['id']}: crop has no detail to check against")
                continue
            # Crops on a flipped or rotated intermediate image are not checked here.
            pixels = denormalize(bbox, *size)
            for key in wanted:
                if not _contains(pixels, details[name][key]):
                    problems.append(
                        f"{task_file.name} {cp['id']}: {bbox} -> {pixels} misses {key} {details[name][key]}"
                    )
    for run_dir in sorted((mme / "runs").iterdir()):
        task = json.loads((mme / "json" / f"{run_dir.name}.json").read_text(encoding="utf-8"))
        problems += replay_run(run_dir, task, write=False)

    total = 0
    for png in ROOT.rglob("*.png"):
        nbytes = png.stat().st_size
        total += nbytes
        if nbytes > MAX_IMAGE_BYTES:
            problems.append(f"{png.relative_to(ROOT)} is {nbytes} bytes")
    for f in ROOT.rglob("*"):
        if f.is_file() and f.suffix != ".png":
            total += f.stat().st_size
    if total > MAX_TOTAL_BYTES:
        problems.append(f"the demo folder holds {total} bytes")
    return problems


def scene_details() -> dict[str, dict[str, Box]]:
    return {name: scene()[1] for name, scene in MME_SCENES.items()}


def draw_all() -> None:
    for name, image in _atp_images().items():
        save(image, ROOT / "atp" / "images" / f"{name}.png")
    for name, image in _llmi_images().items():
        save(image, ROOT / "llmi" / "images" / f"{name}.png")
    for name, scene in MME_SCENES.items():
        image, _ = scene()
        save(image, ROOT / "agentic-mme" / "images" / f"{name}.png")
    mme = ROOT / "agentic-mme"
    for run_dir in sorted((mme / "runs").iterdir()):
        task = json.loads((mme / "json" / f"{run_dir.name}.json").read_text(encoding="utf-8"))
        problems = replay_run(run_dir, task, write=True)
        for problem in problems:
            print("run:", problem)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the committed files")
    parser.add_argument(
        "--boxes", action="store_true", help="print detail boxes on the 0-1000 scale"
    )
    args = parser.parse_args(argv)
    details = scene_details()
    if args.boxes:
        for name, boxes in details.items():
            with Image.open(ROOT / "agentic-mme" / "images" / f"{name}.png") as im:
                w, h = im.size
            for key, box in boxes.items():
                print(name, key, box, normalize(box, w, h))
        return 0
    if not args.check:
        draw_all()
    problems = check(details)
    for problem in problems:
        print("PROBLEM:", problem)
    print("OK" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
