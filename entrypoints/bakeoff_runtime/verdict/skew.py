"""Skewed per-seed differences: Hall's skewness-corrected t, read as a guard beside the plain t.

The paired t interval is exact for normal differences and no more. Skewed ones (a leg that now and
then does much worse, an accuracy pressed against a ceiling) break it on the side of the long tail:
at 3-20 seeds of shifted lognormal differences the plain interval passes a leg worse by the margin
2-6 times as often as alpha, and fails a left-skewed leg that truly sits at the margin as often.

Hall (J. R. Statist. Soc. B 54:221-228, 1992, "On the removal of skewness by transformation") removes
the skewness term of the studentized mean's Edgeworth expansion with a monotone cubic transform of
u = (mean - mu) / s,
    h(u) = u + g u^2 / 3 + g^2 u^3 / 27 + g / (6 n),      T(mu) = sqrt(n) h(u) ~ t(n - 1),
g the sample skewness; h' = (1 + g u / 3)^2 >= 0, so h is monotone and inverts in closed form,
    h^-1(y) = (3 / g) ((1 + g (y - g / (6 n)))^(1/3) - 1).
Johnson (JASA 73:536-544, 1978) proposed the same correction without the cubic term, which is not
monotone. Alone, Hall's interval trades errors between shapes: it pulls lognormal false passes down but
pushes t3's (symmetric, heavy-tailed) above alpha from 10 seeds on, since its noisy g shifts the interval
at random (benchmarks/verdict_oc_cells.py, cell c, and the notes in benchmarks/verdict_attempts.py).

So where the skewness is visible the decision reads, on each side, the wider of the plain t bound and
Hall's: the union of the two intervals. Visible: |g| beyond what 90% of normal samples of this size show
(1.645 times g's SD under normality, sqrt(6 (n - 2) / ((n + 1) (n + 3))): Joanes & Gill, The Statistician
47:183-189, 1998); at 3 seeds never, since |g| cannot exceed 1/sqrt(2) there (skew cannot be seen in 3
values, and Hall's g from 3 values is noise that would cost 40% of the power of equivalent legs).

Where it acts, the pass region and the fail region are each the intersection of the two tests' regions;
elsewhere they are the t interval's. So under any distribution of the differences the false-pass and the
false-fail rates are at most the t interval's (at most alpha under normality), it acts on pass and fail
alike, and its widening (of order s |g| / n, against a half-width of order s / sqrt(n)) shrinks as seeds
are added, so power still grows with them. The price is power where normal seeds look skewed by chance
(one sample in ten): about 3 points at 10 normal seeds and a margin of one SD, 9 points at 5 seeds and
three SDs; without the gate the union cost twice that for the same protection from 10 seeds on.
No procedure holds alpha for every skewed shape at a few seeds (Bahadur & Savage, Ann. Math. Statist.
27:1115-1122, 1956: no test of a mean has power above its level over all distributions with the mean
under the null), so this narrows the failure; it does not remove it. Torch-free, standard library only.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

MIN_PAIRS = 3  # a skewness needs three values
VISIBLE_Z = 1.645  # |g| beyond the normal-theory 90% band: skew the seeds show


def sd_under_normality(n: int) -> float:
    """The SD of the sample skewness g of n normal values (Joanes & Gill 1998)."""
    return math.sqrt(6 * (n - 2) / ((n + 1) * (n + 3)))


def visible(g: float, n: int) -> bool:
    """Whether n values show skewness g beyond what 90% of normal samples of that size do."""
    return n >= MIN_PAIRS and g != 0.0 and abs(g) > VISIBLE_Z * sd_under_normality(n)


def skewness(values: Sequence[float]) -> float:
    """The sample skewness g = m3 / m2^(3/2) (moments about the mean, divided by n), 0 for fewer than
    MIN_PAIRS values or no spread."""
    n = len(values)
    if n < MIN_PAIRS:
        return 0.0
    mean = math.fsum(values) / n
    m2 = math.fsum((v - mean) ** 2 for v in values) / n
    if m2 <= 0.0:
        return 0.0
    m3 = math.fsum((v - mean) ** 3 for v in values) / n
    g = m3 / m2 ** 1.5
    return g if abs(g) > 1e-12 else 0.0


def _h(u: float, g: float, n: int) -> float:
    return u + g * u * u / 3 + g * g * u ** 3 / 27 + g / (6 * n)


def _h_inverse(y: float, g: float, n: int) -> float:
    a = y - g / (6 * n)
    if g == 0.0:
        return a
    inner = 1 + g * a
    return (3 / g) * (math.copysign(abs(inner) ** (1 / 3), inner) - 1)


def hall_bounds(mean: float, sd: float, n: int, g: float, t_crit: float) -> tuple[float, float]:
    """Hall's two one-sided bounds at the t critical value `t_crit`: [lower, upper]."""
    y = t_crit / math.sqrt(n)
    return mean - sd * _h_inverse(y, g, n), mean - sd * _h_inverse(-y, g, n)


def p_side(figures: Mapping[str, Any], bound: float, side: str, t_cdf) -> float:
    """The one-sided p of `figures` (diff, se, df, and for a paired test its `skewness` and `n_pairs`)
    against `bound`: side "low" tests H0 diff <= bound, "high" H0 diff >= bound. The larger of the plain
    t p and Hall's, as the interval is the wider of the two (a p that rejects exactly where the interval
    excludes the bound)."""
    diff, se, df = float(figures["diff"]), float(figures["se"]), float(figures["df"])
    t = (diff - bound) / se
    p = float(1.0 - t_cdf(t, df)) if side == "low" else float(t_cdf(t, df))
    g, n = float(figures.get("skewness") or 0.0), int(figures.get("n_pairs") or 0)
    if not visible(g, n):
        return p
    big_t = math.sqrt(n) * _h((diff - bound) / (se * math.sqrt(n)), g, n)
    hall = float(1.0 - t_cdf(big_t, df)) if side == "low" else float(t_cdf(big_t, df))
    return max(p, hall)
