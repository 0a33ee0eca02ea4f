"""Each leg's look: its colour, dash and marker, the same in every figure and table of the report, and in
MLflow's charts (bakeoff_runtime.tracking reads PALETTE). No imports: anything may read it.

The colours are Okabe and Ito's Color Universal Design set (Okabe & Ito 2008, "Color Universal Design (CUD):
how to make figures and presentations that are friendly to colorblind people", http://jfly.iam.u-tokyo.ac.jp/color/;
republished by Wong, "Points of view: Color blindness", Nature Methods 8, 441 (2011)), chosen to stay
distinct under the common colour-vision deficiencies. Its bluish green and vermilion come last, so that in
a bake-off of up to five legs no leg's colour reads as the report's pass green or fail red; its yellow is
left out (too faint a line on white). Color Universal Design also asks for a second cue besides colour
("a combination of different shapes, positions, line types", https://cudo.jp/?page_id=1936): each leg
also has its own dash pattern and marker, cycled at other lengths than the colours, so legs that share a
colour (the eighth and the first) still differ.
"""
from __future__ import annotations

from typing import NamedTuple

OKABE_ITO = {"blue": "#0072b2", "orange": "#e69f00", "reddish purple": "#cc79a7", "sky blue": "#56b4e9",
             "black": "#000000", "bluish green": "#009e73", "vermilion": "#d55e00"}
# The legs' colours, in the legs' order (the spec's, as evaluation.json keeps it).
PALETTE = list(OKABE_ITO.values())
# stroke-dasharray values; "" is a solid line.
DASHES = ["", "7,3", "2,2", "9,3,2,3", "4,4", "12,3,3,3"]
MARKERS = ["circle", "square", "triangle", "diamond", "triangle-down", "plus"]


class LegStyle(NamedTuple):
    colour: str
    dash: str
    marker: str


def leg_style(index: int) -> LegStyle:
    """The look of the leg at `index` in the legs' order."""
    return LegStyle(PALETTE[index % len(PALETTE)], DASHES[index % len(DASHES)], MARKERS[index % len(MARKERS)])


def leg_colours(legs: list[str]) -> dict[str, str]:
    """One colour per leg, by the legs' order: what the report and MLflow both draw a leg in."""
    return {name: leg_style(i).colour for i, name in enumerate(legs)}
