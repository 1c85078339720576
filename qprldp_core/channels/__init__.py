r"""Quantum channels from Kraus operators, and the depolarizing family.

Convention (fixed): the depolarizing channel on dimension d is

.. math::

    \mathcal D_p(\rho) = (1 - p)\,\rho + p\,\frac{I}{d},

completely positive and trace preserving (CPTP) exactly for :math:`p \in [0, d^2/(d^2 - 1)]`.
PennyLane's single-qubit ``qml.DepolarizingChannel(q)`` is :math:`\mathcal D_p` with
:math:`p = 4q/3`; toqito's ``depolarizing(d, param)`` is :math:`\mathcal D_p` with
``param = 1 - p``. Use the converters below instead of passing an ambiguous "p".

Modules: :mod:`~qprldp_core.channels.channel` (the :class:`Channel` class and its adjoint),
:mod:`~qprldp_core.channels.constructors` (depolarizing, local depolarizing, bit-flip, unitary and
measure-and-prepare channels), :mod:`~qprldp_core.channels.parameters` (the CPTP range of
:math:`\mathcal D_p` and the PennyLane/toqito parameter converters) and
:mod:`~qprldp_core.channels.depolarizing_part` (the largest p with
:math:`\mathcal N = \mathcal D_p \circ \mathcal M` for a channel :math:`\mathcal N`).
"""

from .channel import Channel, HeisenbergMap
from .constructors import (
    bit_flip,
    depolarizing,
    local_depolarizing,
    measure_prepare_channel,
    unitary,
)
from .depolarizing_part import depolarizing_part
from .parameters import (
    PARAM_ATOL,
    depolarizing_p_from_pennylane,
    depolarizing_p_from_toqito,
    depolarizing_p_max,
    depolarizing_p_to_pennylane,
    depolarizing_p_to_toqito,
)

__all__ = [
    "Channel",
    "HeisenbergMap",
    "depolarizing",
    "local_depolarizing",
    "bit_flip",
    "unitary",
    "measure_prepare_channel",
    "depolarizing_p_from_pennylane",
    "depolarizing_p_to_pennylane",
    "depolarizing_p_from_toqito",
    "depolarizing_p_to_toqito",
    "depolarizing_p_max",
    "depolarizing_part",
    "PARAM_ATOL",
]
