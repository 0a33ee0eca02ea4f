"""A bake-off's question decided in at most two stages: the design every fixed-seed decision belongs to.

Deciding a question, seeing `inconclusive`, running fresh seeds and deciding them again at the full
alpha is a second test nobody counted: "decide; if inconclusive, decide again" passes a leg truly at
the margin 8-10% of the time at alpha 0.05 (three tries: 15-17%). A finished fixed design cannot be
continued honestly at all: its conditional error once it ended undecided is 0 (Müller & Schäfer,
Biometrics 57:886-891, 2001). So the default design plans the continuation from the start:

* stage 1, the seeds the spec runs, is read at the one-sided level alpha_1;
* stage 2, if the first is inconclusive, runs fresh seeds (any number, sized after stage 1) and
  decides on the inverse-normal combination of the two stages' one-sided p-values with weights
  fixed in advance, Z = (z_1 + z_2) / sqrt(2), z_k = Phi^-1(1 - p_k) (Bauer & Köhne, Biometrics
  50:1029-1041, 1994; Lehmacher & Wassmer, Biometrics 55:1286-1290, 1999): under H0 each p_k is
  uniform and independent of the other stage's, whatever stage 2's size, so Z is N(0, 1) and the
  stage-2 size may be chosen from stage 1's data;
* both stages use the same critical value c on the z scale (Pocock's boundaries, Biometrika
  64:191-199, 1977), solved so that P0(z_1 >= c) + P0(z_1 < c, Z >= c) = alpha exactly: at alpha
  0.05, c = 1.876 and alpha_1 = 0.0304.

Each one-sided test of the TOST (and of a fail beyond the margin) is such a design at alpha, so a
pass at either stage still has P(pass | difference at the margin) <= alpha, and so does a fail. The
interval a stage-2 decision reads is the set of differences neither combined one-sided test rejects
(the combination test inverted), so pass and fail read an interval as at stage 1. A question that
declares `parity.design: fixed` is decided once, at the full alpha, and has no second stage.
Torch-free; numpy/scipy only (the Evaluate step's container).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from scipy import special as _sp

from bakeoff_runtime.verdict import skew
from bakeoff_runtime.verdict.stage_figures import DESIGNS, FIXED, TWO_STAGE, stage_record  # noqa: F401  (re-exported)

WEIGHTS = (1 / math.sqrt(2), 1 / math.sqrt(2))  # fixed before any data: equal stages on the z scale
DESIGN_TEXT = ("two-stage design: stage 1 at the Pocock level, stage 2 (fresh seeds) by the inverse-normal "
               "combination of both stages' p-values (Lehmacher & Wassmer 1999)")


@dataclass(frozen=True)
class Stage:
    """Where a decision stands in its design: the design (two_stage, fixed, sequential), the stage, and
    at stage 2 what stage 1 left: each leg's parity figures and its breakage p."""

    design: str = TWO_STAGE
    number: int = 1
    first: dict[str, dict[str, Any]] = field(default_factory=dict)
    breakage: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, config: dict[str, Any], sequential: bool) -> Stage:
        if sequential:
            return cls(design="sequential")
        design = str((config.get("parity") or {}).get("design") or TWO_STAGE)
        attempt = config.get("attempt") or {}
        stage1 = attempt.get("stage1") or {}
        if design == TWO_STAGE and attempt.get("stage") == 2 and stage1:
            return cls(design, 2, dict(stage1.get("legs") or {}), dict(stage1.get("breakage") or {}))
        return cls(design if design in DESIGNS else TWO_STAGE, 1)

    def level(self, alpha: float) -> float:
        """The one-sided level this stage's own interval is read at."""
        return stage1_level(alpha, self.design)


def _continue_mass(c: float) -> float:
    """P0(z_1 < c, (z_1 + z_2)/sqrt2 >= c) for independent standard normal z_1, z_2 (Gauss-Legendre)."""
    import numpy as np

    nodes, weights = np.polynomial.legendre.leggauss(200)
    lo, hi = -10.0, c
    z1 = (hi - lo) / 2 * nodes + (hi + lo) / 2
    tail = _sp.ndtr(-(math.sqrt(2) * c - z1))  # P(z_2 >= sqrt2 c - z_1)
    dens = np.exp(-z1 * z1 / 2) / math.sqrt(2 * math.pi)
    return float((hi - lo) / 2 * np.sum(weights * dens * tail))


@lru_cache(maxsize=64)
def critical(alpha: float) -> float:
    """The common critical value c of both stages for a one-sided test at `alpha` (bisection)."""
    lo, hi = 0.0, 10.0
    for _ in range(200):
        mid = (lo + hi) / 2
        total = float(_sp.ndtr(-mid)) + _continue_mass(mid)
        lo, hi = (mid, hi) if total > alpha else (lo, mid)
    return (lo + hi) / 2


def stage1_level(alpha: float, design: str = TWO_STAGE) -> float:
    """The one-sided level stage 1 is read at: alpha_1 of the two-stage design, or alpha itself."""
    return alpha if design == FIXED else float(_sp.ndtr(-critical(alpha)))


def z_of(p: float) -> float:
    """Phi^-1(1 - p), finite: a p of 0 or 1 (a stage with no spread) is held at +/-8.5."""
    p = min(max(float(p), 1e-17), 1 - 1e-16)
    return float(-_sp.ndtri(p))


def _side_z(stage: dict[str, float], bound: float, side: str) -> float:
    """z of the one-sided test of one stage against `bound`: side "low" tests H0 diff <= bound (a
    large z says the difference lies above it), "high" tests H0 diff >= bound."""
    diff, se = stage["diff"], stage["se"]
    if se <= 0:
        gap = diff - bound if side == "low" else bound - diff
        return 8.5 if gap > 0 else -8.5
    # The stage's one-sided p as its own interval reads it (the larger of the t and Hall's p: skew.py).
    return z_of(skew.p_side(stage, bound, side, lambda x, d: float(_sp.stdtr(d, x))))


def combined_z(first: dict[str, float], second: dict[str, float], bound: float, side: str) -> float:
    """The inverse-normal combination of the two stages' one-sided tests against `bound`."""
    w1, w2 = WEIGHTS
    return w1 * _side_z(first, bound, side) + w2 * _side_z(second, bound, side)


def _solve(first: dict[str, float], second: dict[str, float], c: float, side: str) -> float:
    """The bound at which the combined one-sided test sits exactly at c (monotone in the bound)."""
    scale = max(first["se"], second["se"], abs(first["diff"]), abs(second["diff"]), 1e-300)
    centre = (first["diff"] + second["diff"]) / 2
    lo, hi = centre - 1e3 * scale, centre + 1e3 * scale
    for _ in range(200):
        mid = (lo + hi) / 2
        z = combined_z(first, second, mid, side)
        # "low": z falls as the bound rises; "high": z rises with it
        if (z >= c) == (side == "low"):
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def interval(first: dict[str, float], second: dict[str, float], alpha: float) -> list[float]:
    """[L, U]: the differences neither combined one-sided test at the design's c rejects."""
    c = critical(alpha)
    return [_solve(first, second, c, "low"), _solve(first, second, c, "high")]


def combined_p(z: float) -> float:
    """The one-sided p of a combined z, on its own scale (what the stage-2 check reports)."""
    return float(_sp.ndtr(-z))


def stagewise_p(z1: float, alpha: float, z_combined: float | None = None) -> float:
    """The stage-wise ordering p-value of the whole design (valid over both stages, what Holm's
    correction across claims reads): a stage-1 crossing ranks before every stage-2 result."""
    c = critical(alpha)
    if z_combined is None:
        return float(_sp.ndtr(-z1)) if z1 >= c else 1.0  # a stage-1 result that did not cross: undecided
    import numpy as np

    nodes, weights = np.polynomial.legendre.leggauss(200)
    lo, hi = -10.0, c
    x = (hi - lo) / 2 * nodes + (hi + lo) / 2
    tail = _sp.ndtr(-(math.sqrt(2) * z_combined - x))
    dens = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    return float(_sp.ndtr(-c)) + float((hi - lo) / 2 * np.sum(weights * dens * tail))


def estimate(first: dict[str, float], second: dict[str, float]) -> float:
    """The difference at which the combined test is indifferent (z = 0 on both sides): the two-stage
    design's median-unbiased point estimate."""
    return _solve(first, second, 0.0, "low")


def stage2(r: dict[str, Any], first: dict[str, float], alpha: float, margin: float, test: str,
           direction: str) -> dict[str, Any]:
    """A stage-2 comparison `r` (stats.compare on the fresh seeds alone) decided together with stage 1:
    the combined interval, its outcome, the combined p-values and the stage-wise p of a fail claim.
    The stage's own figures are kept under `stage2_alone`."""
    from bakeoff_runtime.verdict import stats

    own = {"diff": float(r["diff"]), "se": float(r["se"]), "df": float(r["df"]),
           "n_pairs": int(r.get("n_pairs") or 0), "skewness": float(r.get("skewness") or 0.0)}
    lo, hi = interval(first, own, alpha)
    out = dict(r)
    out["stage2_alone"] = {k: r.get(k) for k in ("test", "diff", "se", "sd", "df", "n_pairs", "ci", "ci_level",
                                                  "skewness")}
    out["stage1"] = dict(first)
    out["diff"] = estimate(first, own)
    out["ci"], out["ci_level"] = [lo, hi], 1 - 2 * alpha
    out["ci_basis"] = "two-stage"
    out["outcome"] = stats.decide(lo, hi, margin, test, direction)
    h_lo, h_hi = (lo, hi) if direction == "minimize" else (-hi, -lo)
    out["better"], out["worse"] = bool(h_hi < 0), bool(h_lo > 0)
    p_low = combined_p(combined_z(first, own, -margin, "low"))     # H0: diff <= -margin
    p_high = combined_p(combined_z(first, own, margin, "high"))    # H0: diff >= +margin
    worse_is_high = direction == "minimize"
    if test == stats.EQUIVALENCE:
        out.update(p_lower=p_low, p_upper=p_high, p_value=max(p_low, p_high))
    else:
        out["p_value"] = p_high if worse_is_high else p_low
    # A fail beyond the margin: H0 diff <= +margin (beyond above) or diff >= -margin (beyond below).
    above = (_side_z(first, margin, "low"), combined_z(first, own, margin, "low"))
    below = (_side_z(first, -margin, "high"), combined_z(first, own, -margin, "high"))
    if test == stats.EQUIVALENCE:
        z1, zc = max(above, below, key=lambda pair: pair[1])
    else:
        z1, zc = above if worse_is_high else below
    out["fail_p"] = stagewise_p(z1, alpha, zc)
    return out


def stage1_fail_p(r: dict[str, Any], alpha: float, margin: float, test: str, direction: str) -> float | None:
    """The stage-wise p of a stage-1 fail claim (its one-sided t p, when it crossed the stage-1 level)."""
    from bakeoff_runtime.verdict import stats

    if r.get("se") is None:
        return None
    first = {"diff": float(r["diff"]), "se": float(r["se"]), "df": float(r["df"]),
             "n_pairs": int(r.get("n_pairs") or 0), "skewness": float(r.get("skewness") or 0.0)}
    above, below = _side_z(first, margin, "low"), _side_z(first, -margin, "high")
    if test == stats.EQUIVALENCE:
        z1 = max(above, below)
    else:
        z1 = above if direction == "minimize" else below
    return stagewise_p(z1, alpha)


def combine_breakage(p1: float | None, p2: float, alpha: float) -> tuple[bool, float, float]:
    """(failed, combined p, stage-wise p) of a breakage claim over both stages: exact McNemar p's are
    conservative (discrete), so their combination is too."""
    z1, z2 = z_of(1.0 if p1 is None else p1), z_of(p2)
    zc = WEIGHTS[0] * z1 + WEIGHTS[1] * z2
    return zc >= critical(alpha), combined_p(zc), stagewise_p(z1, alpha, zc)
