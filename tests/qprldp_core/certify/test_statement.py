"""Tests for qprldp_core.certify.statement: the Certificate is frozen and prints its
statement in words (vacuous bounds labelled), never its witness matrices."""

import dataclasses

import numpy as np
import pytest

from qprldp_core.certify import (
    Certificate,
    qldp_certificate,
    qprldp_certificate,
)
from qprldp_core.channels import depolarizing, local_depolarizing, unitary
from qprldp_core.privacy import qprldp_value


def test_certificate_is_frozen_and_printable():
    c = qldp_certificate(depolarizing(0.5, 2), epsilon=0.5)
    assert isinstance(c, Certificate)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.delta = 0.0
    text = str(c)
    assert "QLDP certificate" in text and "0.33782" in text and "exact" in text


def test_certificate_str_and_repr_do_not_dump_matrices():
    c = qprldp_certificate(local_depolarizing(0.3, 3), epsilon=1.0)  # 8 x 8 witness
    for text in (str(c), repr(c)):
        assert "[[" not in text and "array(" not in text and "0.+0.j" not in text
        assert "available as `.witness` (ρ, σ) of shape 8×8" in text
        assert "QPrLDP" in text and "local depolarizing D_p^(⊗n), p=0.3 per qubit, n=3" in text
        assert "arXiv:2607.06307" in text  # the reference
    assert len(repr(c).splitlines()) == 1
    assert len(str(c).splitlines()) == 8
    rho, sigma = c.witness  # documented way to get the matrices
    assert rho.shape == sigma.shape == (8, 8)
    # the witness attains the proven lower bound
    assert qprldp_value(local_depolarizing(0.3, 3), rho, sigma, epsilon=1.0) == pytest.approx(
        c.delta_lower, abs=1e-9)


def test_vacuous_upper_bound_is_labelled():
    c = qprldp_certificate(local_depolarizing(0.3, 3), epsilon=1.0)
    assert c.side == "upper_bound" and c.delta == 1.0 and c.vacuous is True
    text = str(c)
    lines = text.splitlines()
    assert lines[0] == "QPrLDP certificate (VACUOUS)"
    assert lines[3] == "  delta     : 1 (upper bound, VACUOUS)"
    # the proven lower bound 0.93924950... is printed rounded down (issue 42; `.6g` printed
    # 0.93925, above it)
    assert 0.939249 < c.delta_lower < 0.93925
    assert lines[4] == "  delta >=  : 0.939249 (proven lower bound)"
    assert lines[5] == (
        "  statement : VACUOUS: (1, 1)-QPrLDP holds for every channel (delta >= 1), so this "
        "upper bound certifies no privacy; the channel is NOT (1, delta)-QPrLDP for any delta < "
        "0.939249 (proven lower bound)"
    )
    assert "vacuous=True" in repr(c) and "delta_lower=0.93925" in repr(c)
    # an informative upper bound of the same channel is not vacuous
    q = qldp_certificate(local_depolarizing(0.3, 3), epsilon=1.0)
    assert q.side == "upper_bound" and q.delta < 1 and not q.vacuous
    assert "VACUOUS" not in str(q) and "vacuous=False" in repr(q)
    from qprldp_core._formatting import format_bound

    assert str(q).splitlines()[5] == (  # an upper bound: rounded up
        f"  statement : the channel is (1, {format_bound(q.delta, up=True)})-QLDP (proven upper "
        f"bound on delta)")


def test_exact_delta_one_is_not_vacuous_but_says_no_privacy():
    c = qldp_certificate(unitary(np.array([[0, 1], [1, 0]])), epsilon=1.0)
    assert c.side == "exact" and c.delta == 1.0 and not c.vacuous
    assert str(c).splitlines()[4] == (
        "  statement : the channel is (1, 1)-QLDP, and no smaller delta holds (exact): no "
        "privacy at this epsilon")
    # a lower bound of 0 is vacuous: every channel has delta* >= 0
    low = Certificate(1.0, 0.0, "QLDP", "test", False, "lower_bound", None, "test")
    assert low.vacuous and "VACUOUS: delta* >= 0 holds for every channel" in str(low)
    assert "witness   : none" in str(low) and "witness=None" in repr(low)


def test_certificate_str_exact_global():
    c = qldp_certificate(depolarizing(0.5, 2), epsilon=0.5)
    assert str(c).splitlines() == [
        "QLDP certificate",
        "  channel   : global depolarizing D_p, p=0.5, d=2",
        "  epsilon   : 0.5 nats",
        "  delta     : 0.33782 (exact)",
        "  statement : the channel is (0.5, 0.33782)-QLDP, and no smaller delta holds (exact)",
        "  witness   : available as `.witness` (ρ, σ) of shape 2×2; the pair attains delta",
        f"  reference : {c.reference}",
    ]
    assert repr(c).startswith(
        "Certificate(notion='QLDP', epsilon=0.5, delta=0.33782, side='exact', vacuous=False, "
        "channel_description='global depolarizing D_p, p=0.5, d=2', witness=<available as "
        "`.witness` (ρ, σ) of shape 2×2; the pair attains delta>, reference=\"derived here")
