"""Counts of scores in a threshold's rejection region (shared by the threshold estimators)."""

from __future__ import annotations

import numpy as np

__all__: list[str] = []


def region_counts(sorted_scores, thresholds, direction):
    """Number of scores strictly above (``>``) or below (``<``) each threshold."""
    if direction == ">":
        return len(sorted_scores) - np.searchsorted(sorted_scores, thresholds, side="right")
    return np.searchsorted(sorted_scores, thresholds, side="left")
