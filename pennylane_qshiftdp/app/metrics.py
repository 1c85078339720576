r"""Test-split metrics of the released weights (post-processing) and the stuck-run warning."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import torch

__all__ = ["CHANCE_TOLERANCE", "CLIPPED_FRACTION", "MAJORITY_TOLERANCE", "accuracy",
           "clipping_cause", "evaluate", "majority_class_warning", "majority_rate"]

#: A final test accuracy within this of the test split's majority-class rate warns that the
#: classifier predicts the majority class (does no better than always answering it).
MAJORITY_TOLERANCE = 0.01


#: A final balanced accuracy within this of 1/K (what any constant answer scores) warns that the
#: classifier barely separates the classes, even when its accuracy is above the majority rate
#: (a classifier that answers the majority class for all but a few examples).
CHANCE_TOLERANCE = 0.05


#: When at least this fraction of the held-out raw feature values lies outside the declared
#: feature ranges (or some column lies wholly outside), a run that learns nothing is blamed on
#: the ranges rather than on too little training.
CLIPPED_FRACTION = 0.5


def accuracy(model, x, y):
    """Fraction of correct predictions: sign for one output (labels ±1), else argmax."""
    return evaluate(model, x, y)[0]


def predict(model, x, dtype=torch.float64):
    """Predicted labels: the sign for one output (labels ±1), else the argmax (indices)."""
    with torch.no_grad():
        out = model(x)
    pred = torch.where(out >= 0, 1.0, -1.0) if out.ndim == 1 else out.argmax(dim=1).to(dtype)
    return out, pred


def evaluate(model, x, y, loss_fn=None):
    """Test accuracy, balanced accuracy and, with ``loss_fn``, the mean test loss, from one
    forward pass (balanced accuracy: :func:`sklearn.metrics.balanced_accuracy_score`)."""
    from sklearn.metrics import balanced_accuracy_score

    out, pred = predict(model, x, y.dtype)
    with torch.no_grad():
        loss = float(loss_fn(out, y).mean()) if loss_fn is not None and len(y) else None
    if not len(y):
        return math.nan, math.nan, loss
    with warnings.catch_warnings():  # a class never predicted / absent: sklearn's own warning
        warnings.simplefilter("ignore", UserWarning)
        balanced = float(balanced_accuracy_score(y.numpy(), pred.numpy()))
    return float((pred == y).double().mean()), balanced, loss


def majority_rate(y) -> float:
    """Share of the most frequent label in ``y`` (the accuracy of always predicting it).

    Example:
        >>> majority_rate(np.array([1.0, -1.0, 1.0, 1.0]))
        0.75
    """
    y = np.asarray(y)
    if not y.size:
        return math.nan
    return float(np.unique(y, return_counts=True)[1].max() / y.size)


def clipping_cause(data) -> str | None:
    """The feature ranges as the cause of a run that learns nothing, or ``None``.

    Reads :attr:`~.data.Dataset.test_clipped_fraction` and
    :attr:`~.data.Dataset.test_clipped_columns`, computed from the held-out test split only
    (never from training examples). Clipped values reach the model as the ends of the angle
    range: when most are clipped, or a whole column is, the features carry little or nothing
    of the data, and more epochs cannot help.

    Example:
        >>> from types import SimpleNamespace
        >>> clipping_cause(SimpleNamespace(test_clipped_fraction=1.0,
        ...                                test_clipped_columns=("a", "b")))[:56]
        'every feature value of the held-out test split lies outs'
    """
    fraction = float(getattr(data, "test_clipped_fraction", 0.0) or 0.0)
    columns = tuple(getattr(data, "test_clipped_columns", ()) or ())
    if fraction >= 1.0:
        head = "every feature value of the held-out test split lies outside its declared range"
    elif fraction >= CLIPPED_FRACTION or columns:
        shown = ", ".join(repr(c) for c in columns[:5]) + (", ..." if len(columns) > 5 else "")
        head = (f"{100 * fraction:.0f} % of the held-out test split's feature values lie "
                f"outside their declared ranges"
                + (f" (every value of {len(columns)} column(s): {shown})" if columns else ""))
    else:
        return None
    return (f"{head} and was clipped to a bound (--feature-range, or the shipped ranges): the "
            f"clipped features reach the model as constants, so more epochs will not help. "
            f"Declare ranges that contain the data's values (from domain knowledge: units, "
            f"instrument limits), or use --preprocessing standardize_pca.")


def majority_class_warning(test_accuracy: float, rate: float,
                           balanced_accuracy: float = math.nan,
                           n_classes: int | None = None,
                           history: Sequence[float] = (),
                           cause: str | None = None) -> str | None:
    """The warning text for a classifier that has learned little or is systematically wrong.

    Three cases, ``None`` otherwise: the final ``test_accuracy`` is within
    :data:`MAJORITY_TOLERANCE` of the test split's majority-class ``rate``; the
    ``balanced_accuracy`` is within :data:`CHANCE_TOLERANCE` of ``1 / n_classes`` (either side:
    what a constant answer scores); or it is more than that *below* ``1 / n_classes``, i.e. the
    classifier is systematically wrong (an inverted sign, a class order swapped), which points
    to other causes than too little training. ``history`` (the test accuracy after each epoch)
    changes the advice when an earlier epoch was clearly better: the run learned and lost it,
    so more epochs would not help. ``cause`` (e.g. :func:`clipping_cause`) replaces the advice
    when a cause is known.

    Example:
        >>> majority_class_warning(0.63, 0.627)[:44]
        'the classifier predicts the majority class: '
        >>> majority_class_warning(0.65, 0.629, 0.528, 2)[:43]
        'the classifier barely separates the classes'
        >>> majority_class_warning(0.1053, 0.3421, 0.1047, 3)[:41]
        'the classifier is systematically wrong: t'
        >>> majority_class_warning(0.9, 0.627, 0.88, 2) is None
        True
        >>> majority_class_warning(0.0933, 0.1022, history=[0.89, 0.5, 0.0933]).split(". ")[-2]
        'It learned, then lost it: the test accuracy was 0.8900 after epoch 1'
    """
    hint = ("It has learned little or nothing; try more epochs, a larger learning rate or a "
            "larger epsilon.")
    past = [a for a in history if math.isfinite(a)]
    if past and math.isfinite(test_accuracy) and max(past) > test_accuracy + 0.05:
        best = max(past)
        hint = (f"It learned, then lost it: the test accuracy was {best:.4f} after epoch "
                f"{list(history).index(best) + 1}. At a fixed epsilon more steps need more "
                f"noise per step; try fewer epochs, a smaller learning rate or a larger epsilon.")
    if cause:
        hint = f"Likely cause: {cause}"
    bal = (f" (balanced accuracy {balanced_accuracy:.4f})"
           if math.isfinite(balanced_accuracy) else "")
    if math.isfinite(test_accuracy) and math.isfinite(rate) and \
            abs(test_accuracy - rate) <= MAJORITY_TOLERANCE + 1e-12:
        return (f"the classifier predicts the majority class: the final test accuracy "
                f"{test_accuracy:.4f}{bal} is within {MAJORITY_TOLERANCE} of the held-out "
                f"test split's majority-class rate {rate:.4f}, what always answering the most "
                f"frequent class scores. {hint}")
    if not (n_classes and math.isfinite(balanced_accuracy)):
        return None
    chance = 1.0 / n_classes
    accuracy = (f"the accuracy {test_accuracy:.4f} is "
                f"{'above' if test_accuracy > rate else 'below'} the majority-class rate "
                f"{rate:.4f}")
    if abs(balanced_accuracy - chance) <= CHANCE_TOLERANCE + 1e-12:
        return (f"the classifier barely separates the classes: the final balanced accuracy "
                f"{balanced_accuracy:.4f} (mean per-class recall on the held-out test split) is "
                f"within {CHANCE_TOLERANCE} of 1/{n_classes} = {chance:.4f}, what any constant "
                f"answer scores; {accuracy}. {hint}")
    if balanced_accuracy < chance - CHANCE_TOLERANCE:
        return (f"the classifier is systematically wrong: the final balanced accuracy "
                f"{balanced_accuracy:.4f} (mean per-class recall on the held-out test split) is "
                f"more than {CHANCE_TOLERANCE} below 1/{n_classes} = {chance:.4f}, what any "
                f"constant answer scores; {accuracy}. It separates the classes but answers "
                f"the wrong ones (e.g. a readout whose sign or class order is inverted); more "
                f"training in the same direction will not fix it: try another initialisation "
                f"(--seed), a larger learning rate or a larger epsilon.")
    return None
