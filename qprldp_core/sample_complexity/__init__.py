r"""Sample complexity of (private) quantum hypothesis testing: bounds on the number of copies.

Every bound below is derived in ``docs/qprldp.md`` §6 and property-tested against brute force
(exact errors of :math:`n` explicit copies for qubits, :math:`n \le 8`). Counts are integers,
rounded conservatively: an upper bound :math:`x` on the needed copies becomes
``math.ceil(x + slack)``; a lower bound :math:`x` becomes ``math.ceil(x - slack)``, valid because
:math:`n^*` is an integer (``math.floor(x)`` would also be valid, but looser by one copy);
``slack = 1e-9 max(1, x)`` absorbs floating-point error.
``math.inf`` means "no finite bound" (e.g. identical states).

Tasks (states :math:`\rho, \sigma` are the *outputs* of the channel when privacy enters):

* Binary symmetric: priors :math:`(p, 1-p)`, :math:`n^* = \min\{n : P_e(n) \le \alpha\}` with
  Helstrom's error :math:`P_e(n) = \tfrac12(1 - \|p\rho^{\otimes n} - (1-p)\sigma^{\otimes n}\|_1)`.
  :func:`symmetric_copy_bounds`, :func:`private_symmetric_lower_bound`,
  :func:`private_symmetric_copy_bounds`; brute force :func:`minimal_copies_symmetric`.
* Binary asymmetric (Stein-type): :math:`n^* = \min\{n : \beta^*_n(\alpha) \le \beta\}` with
  :math:`\beta^*_n(\alpha)` the least type-II error of a test of type-I error :math:`\le\alpha`.
  :func:`asymmetric_copy_bounds`, :func:`private_asymmetric_lower_bound`; brute force
  :func:`optimal_type_ii_error`, :func:`minimal_copies_asymmetric`.
* m-ary symmetric: :func:`mary_copy_bounds`, :func:`private_mary_lower_bound`; the pretty-good
  measurement's error :func:`pretty_good_measurement_error`.
* Quantum spectral probabilistic indistinguishability (QSPrI): the first :math:`n` at which
  :math:`\rho^{\otimes n}, \sigma^{\otimes n}` stop being :math:`(\varepsilon, \delta)`-QSPrI:
  :func:`qspri_copy_bounds`, brute force :func:`minimal_copies_qspri`.

Modules: :mod:`~qprldp_core.sample_complexity.copy_bounds` (:class:`CopyBounds`, the bracket every
bound returns), :mod:`~qprldp_core.sample_complexity.symmetric`,
:mod:`~qprldp_core.sample_complexity.asymmetric`, :mod:`~qprldp_core.sample_complexity.mary` and
:mod:`~qprldp_core.sample_complexity.qspri`.
"""

from .asymmetric import (
    asymmetric_copy_bounds,
    minimal_copies_asymmetric,
    optimal_type_ii_error,
    private_asymmetric_lower_bound,
)
from .copy_bounds import CopyBounds
from .mary import mary_copy_bounds, pretty_good_measurement_error, private_mary_lower_bound
from .qspri import minimal_copies_qspri, qspri_copy_bounds
from .symmetric import (
    helstrom_error,
    minimal_copies_symmetric,
    private_symmetric_copy_bounds,
    private_symmetric_lower_bound,
    symmetric_copy_bounds,
)

__all__ = [
    "CopyBounds",
    "helstrom_error",
    "minimal_copies_symmetric",
    "symmetric_copy_bounds",
    "private_symmetric_lower_bound",
    "private_symmetric_copy_bounds",
    "optimal_type_ii_error",
    "minimal_copies_asymmetric",
    "asymmetric_copy_bounds",
    "private_asymmetric_lower_bound",
    "pretty_good_measurement_error",
    "mary_copy_bounds",
    "private_mary_lower_bound",
    "minimal_copies_qspri",
    "qspri_copy_bounds",
]
