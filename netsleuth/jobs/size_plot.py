"""The minimizer's convergence plot: inputs left per iteration, drawn with Pillow.

A minimization's report shows how delta debugging converged as one small
step plot. Drawing it with matplotlib cost every ``netsleuth minimize`` (and
every campaign bucket minimized in a fresh process) about 0.8 s of CPU,
nearly all of it importing pyplot, for a picture of a few dozen points.
Pillow (already what matplotlib wrote its PNGs with) draws the same plot in
a few milliseconds: axes with integer ticks, a light grid, the step line,
one marker colour per pass (ddmin, confirm, ...) and a legend.

The image is a pure function of its data: no timestamp or other metadata is
written, so the same run gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

WIDTH, HEIGHT = 700, 360
LEFT, RIGHT, TOP, BOTTOM = 62, 16, 34, 46        # the plot area's margins, in pixels
LINE = (0x1F, 0x77, 0xB4)                        # the step line
PASS_COLOURS = ((0xFF, 0x7F, 0x0E), (0x2C, 0xA0, 0x2C), (0xD6, 0x27, 0x28), (0x94, 0x67, 0xBD),
                (0x8C, 0x56, 0x4B), (0xE3, 0x77, 0xC2), (0x7F, 0x7F, 0x7F), (0xBC, 0xBD, 0x22))
GRID, AXIS, TEXT = (0xE4, 0xE4, 0xE4), (0x30, 0x30, 0x30), (0x20, 0x20, 0x20)


def tick_step(top: int, most: int = 8) -> int:
    """The first of 1, 2, 5, 10, 20, 50, ... that cuts [0, ``top``] into at most ``most`` steps."""
    k = 0
    while top > most * (step := (1, 2, 5)[k % 3] * 10 ** (k // 3)):
        k += 1
    return step


class _Frame:
    """Data coordinates to pixels for x in [0, xmax] and y in [0, ymax]."""

    def __init__(self, xmax: int, ymax: int) -> None:
        self.xmax = max(1, xmax)
        self.ystep = tick_step(max(1, ymax))
        self.ymax = -(-max(1, ymax) // self.ystep) * self.ystep   # headroom up to the tick above the top
        self.x0, self.x1 = LEFT, WIDTH - RIGHT
        self.y0, self.y1 = HEIGHT - BOTTOM, TOP

    def at(self, x: float, y: float) -> tuple[float, float]:
        return (self.x0 + (self.x1 - self.x0) * x / self.xmax,
                self.y0 - (self.y0 - self.y1) * y / self.ymax)


def _axes(draw: ImageDraw.ImageDraw, frame: _Frame, font: ImageFont.ImageFont | ImageFont.FreeTypeFont) -> None:
    for x in range(0, frame.xmax + 1, tick_step(frame.xmax)):
        px, _ = frame.at(x, 0)
        draw.line([(px, frame.y1), (px, frame.y0)], fill=GRID)
        draw.line([(px, frame.y0), (px, frame.y0 + 4)], fill=AXIS)
        draw.text((px, frame.y0 + 6), str(x), fill=TEXT, font=font, anchor="ma")
    for y in range(0, frame.ymax + 1, frame.ystep):
        _, py = frame.at(0, y)
        draw.line([(frame.x0, py), (frame.x1, py)], fill=GRID)
        draw.line([(frame.x0 - 4, py), (frame.x0, py)], fill=AXIS)
        draw.text((frame.x0 - 7, py), str(y), fill=TEXT, font=font, anchor="rm")
    draw.rectangle([frame.x0, frame.y1, frame.x1, frame.y0], outline=AXIS)


def _labels(img: Image.Image, title: str, font: ImageFont.ImageFont | ImageFont.FreeTypeFont) -> None:
    draw = ImageDraw.Draw(img)
    draw.text((WIDTH / 2, TOP / 2), title, fill=TEXT, font=font, anchor="mm")
    draw.text(((LEFT + WIDTH - RIGHT) / 2, HEIGHT - 6), "iteration", fill=TEXT, font=font, anchor="md")
    ylabel = "inputs in the candidate MCS"
    box = draw.textbbox((0, 0), ylabel, font=font)
    strip = Image.new("RGB", (int(box[2]) + 4, int(box[3]) + 4), "white")
    ImageDraw.Draw(strip).text((2, 2), ylabel, fill=TEXT, font=font)
    turned = strip.rotate(90, expand=True)
    img.paste(turned, (4, int(TOP + (HEIGHT - TOP - BOTTOM - turned.height) / 2)))


def _legend(draw: ImageDraw.ImageDraw, names: Sequence[str],
            font: ImageFont.ImageFont | ImageFont.FreeTypeFont) -> None:
    rows = [n or "(no pass)" for n in names]
    wide = max(draw.textbbox((0, 0), r, font=font)[2] for r in rows)
    right, top = WIDTH - RIGHT - 8, TOP + 8
    left = right - wide - 30
    draw.rectangle([left, top, right, top + 8 + 16 * len(rows)], fill="white", outline=GRID)
    for k, row in enumerate(rows):
        cy = top + 12 + 16 * k
        colour = PASS_COLOURS[k % len(PASS_COLOURS)]
        draw.ellipse([left + 8, cy - 3, left + 14, cy + 3], fill=colour)
        draw.text((left + 22, cy), row, fill=TEXT, font=font, anchor="lm")


def plot_sizes(sizes: list[int], passes: list[str], out: Path) -> None:
    """Step plot (a step after each point) of the inputs left per iteration, one marker colour per pass."""
    img = Image.new("RGB", (WIDTH, HEIGHT), "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=12)
    frame = _Frame(len(sizes) - 1, max(sizes, default=0))
    _axes(draw, frame, font)
    points = [frame.at(x, s) for x, s in enumerate(sizes)]
    steps: list[tuple[float, float]] = []
    for (x, y), (nx, _ny) in zip(points, points[1:], strict=False):
        steps += [(x, y), (nx, y)]
    if points:
        steps.append(points[-1])
    if len(steps) > 1:
        draw.line(steps, fill=LINE, width=2, joint="curve")
    names = list(dict.fromkeys(passes))
    for (px, py), name in zip(points, passes, strict=True):
        draw.ellipse([px - 3, py - 3, px + 3, py + 3], fill=PASS_COLOURS[names.index(name) % len(PASS_COLOURS)])
    if names:
        _legend(draw, names, font)
    _labels(img, f"MCS size per iteration: {sizes[0] if sizes else 0} -> {sizes[-1] if sizes else 0} inputs", font)
    img.save(out, format="PNG")
