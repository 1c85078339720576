r"""Exact-law shot sampling: shot estimates drawn from a simulator's exact outcome law.

A shot estimate of a circuit depends on the circuit only through its outcome distribution. On a
simulator that distribution is computed exactly, so the :math:`N_s`-shot estimate can be drawn
from it directly instead of simulating :math:`N_s` single shots. For an observable with two
eigenvalues :math:`\lambda_- < \lambda_+` (every Pauli word, scaled or shifted, and projectors)
the number of shots that return :math:`\lambda_+` is binomial:

.. math::

    k \sim \mathrm{Binomial}(N_s, p_+), \qquad
    p_+ = P(\lambda_+) = \frac{\langle O\rangle - \lambda_-}{\lambda_+ - \lambda_-}, \qquad
    \hat\mu = \frac{k\,\lambda_+ + (N_s - k)\,\lambda_-}{N_s},

since :math:`\langle O\rangle = \lambda_- (1 - p_+) + \lambda_+ p_+`. ``probs`` returns are
multinomial counts over their outcomes divided by :math:`N_s`. The drawn estimate has exactly
the law of the device's estimate (the device's :math:`N_s` i.i.d. shots give the same count law),
and so have the shot statistics recorded from it (variance and fourth moment of a two-valued
sample are functions of its mean, :func:`~.two_point_moments`). Derived here (elementary).

* :mod:`.modes`: :func:`use_exact_law`, :func:`set_shot_sampling` (on a QNode, a TorchLayer or
  a model), :func:`shot_sampling`, :func:`device_generator`;
* :mod:`.exact_law`: :func:`execute_exact_law` (analytic execution, then the draws);
* :mod:`.draws`: the draws of each group of measurements that share shots;
* :mod:`.merging`: circuits differing only in parameters run as a few broadcast tapes;
* :mod:`.allocation`: :func:`set_shot_budget`, a per-example shot budget split over the
  parameter-shift circuits ∝ |shift coefficient| (:func:`split_shots`).

Example::

    model = QuantumClassifier(4, 2, device="default.qubit", shots=1000, seed=0)
    use_exact_law(model)
"""

from .allocation import set_shot_budget, set_step_shot_budget, shot_budget, split_shots
from .draws import draw_two_point
from .exact_law import execute_exact_law
from .modes import (
    SHOT_SAMPLING_MODES,
    device_generator,
    set_shot_sampling,
    shot_sampling,
    use_exact_law,
)

__all__ = [
    "SHOT_SAMPLING_MODES",
    "draw_two_point",
    "device_generator",
    "execute_exact_law",
    "set_shot_budget",
    "set_shot_sampling",
    "set_step_shot_budget",
    "shot_budget",
    "shot_sampling",
    "split_shots",
    "use_exact_law",
]
