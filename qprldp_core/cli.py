r"""Console command ``qprldp``: print QLDP / QPrLDP certificates for depolarizing noise.

Examples::

    qprldp certify --channel depolarizing --p 0.3 --dim 2 --epsilon 1
    qprldp certify --channel depolarizing --local --qubits 3 --p 0.3 --epsilon 1 --delta 1e-3
    qprldp certify --p-pennylane 0.1 --epsilon 0.5 --notion qprldp

Exit codes: 0 on success, 2 on bad input (with a message on stderr).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any

from .certify import qldp_certificate, qldp_epsilon, qprldp_certificate, qprldp_epsilon
from .channels import depolarizing, depolarizing_p_from_pennylane, local_depolarizing

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="qprldp",
        description="Certificates of quantum local differential privacy (QLDP) and quantum "
        "probabilistic LDP (QPrLDP) for depolarizing noise D_p(rho) = (1 - p) rho + p I/d.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("certify", help="print certificates for a depolarizing channel")
    c.add_argument("--channel", default="depolarizing", choices=["depolarizing"],
                   help="channel family (default: depolarizing)")
    grp = c.add_mutually_exclusive_group(required=True)
    grp.add_argument("--p", type=float, help="p of D_p(rho) = (1 - p) rho + p I/d (docs/qprldp.md)")
    grp.add_argument("--p-pennylane", type=float, dest="q",
                     help="PennyLane DepolarizingChannel parameter q (p = 4q/3, single qubit)")
    c.add_argument("--dim", type=int, default=None,
                   help="dimension d of global depolarizing (default 2, or 2^qubits)")
    c.add_argument("--local", action="store_true",
                   help="local depolarizing D_p^(⊗n) on --qubits qubits")
    c.add_argument("--qubits", type=int, default=None, help="number of qubits n (with --local)")
    c.add_argument("--epsilon", type=float, required=True, help="epsilon in nats")
    c.add_argument("--delta", type=float, default=None,
                   help="also print the smallest certified epsilon for this delta")
    c.add_argument("--notion", choices=["qldp", "qprldp", "both"], default="both")
    c.add_argument("--save-witness", default=None, metavar="FILE.npz",
                   help="write each certificate's witness pair of input states (numpy .npz: "
                   "rho_<notion>, sigma_<notion>) to this file")
    return parser


class _ArgError(Exception):
    pass


#: Largest global dimension the command line certifies (dense d x d matrices: ~1 GiB at 4096).
_MAX_DIM = 4096


def _build_channel(ns):
    if ns.local:
        if ns.qubits is None:
            raise _ArgError("--local requires --qubits N.")
        if ns.dim is not None:
            raise _ArgError(
                f"--local acts qubit by qubit and takes no --dim. Found --dim {ns.dim}."
            )
    dim = ns.dim
    if not ns.local and ns.qubits is not None:
        if dim is not None and dim != 2**ns.qubits:
            raise _ArgError(f"--dim {dim} contradicts --qubits {ns.qubits} (d = 2^n = "
                            f"{2**ns.qubits}); give one of them.")
        dim = 2**ns.qubits
    dim = 2 if dim is None else dim
    if not ns.local and dim > _MAX_DIM:
        raise _ArgError(
            f"{f'--dim {dim}' if ns.qubits is None else f'--qubits {ns.qubits} (d = {dim})'}"
            f" is too large: the certificates build dense d x d witness matrices "
            f"(about 64·d² bytes, {64 * dim**2 / 2**30:.3g} GiB here); at most d = {_MAX_DIM} "
            f"(12 qubits) is supported. For global depolarizing QLDP the closed form is "
            f"delta(eps) = max(0, (1 - p) - (e^eps - 1) p / d)."
        )
    if ns.q is not None:
        if not ns.local and dim != 2:
            raise _ArgError(f"--p-pennylane is PennyLane's single-qubit DepolarizingChannel "
                            f"parameter; use --p for d = {dim} (or --local).")
        p = depolarizing_p_from_pennylane(ns.q)
    else:
        p = ns.p
    if ns.local:
        return local_depolarizing(p, ns.qubits)
    return depolarizing(p, dim)


def _fmt_eps(x: float) -> str:
    """ε rounded *up* to 6 significant digits, trailing zeros kept: two ε printed side by side
    have the same precision, and a certified ε is never printed below its value."""
    if math.isinf(x):
        return "inf"
    if x == 0:
        return "0"
    from decimal import ROUND_CEILING, Decimal, localcontext

    decimals = max(0, 5 - math.floor(math.log10(abs(x))))
    with localcontext() as ctx:  # the float's shortest decimal, rounded up exactly (rounding
        ctx.prec = 400  # x·10^k to 6 decimals first, as before, could drop a tiny excess)
        r = Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-decimals),
                                             rounding=ROUND_CEILING)
    return f"{r:.{decimals}f}"


def _certify(ns, out) -> None:
    ch = _build_channel(ns)
    notions = ["qldp", "qprldp"] if ns.notion == "both" else [ns.notion]
    blocks: list[str] = []
    smallest: list[str] = []
    witnesses: dict[str, Any] = {}  # the .npz arrays, by name
    for notion in notions:
        fn = qldp_certificate if notion == "qldp" else qprldp_certificate
        cert = fn(ch, epsilon=ns.epsilon)
        if cert.witness is not None:
            witnesses[f"rho_{notion}"], witnesses[f"sigma_{notion}"] = cert.witness
        where = (f"rho_{notion}, sigma_{notion} in {ns.save_witness}" if ns.save_witness
                 else "write it with --save-witness FILE.npz")
        blocks.append(cert.describe(witness=where))
        if ns.delta is not None:
            efn = qldp_epsilon if notion == "qldp" else qprldp_epsilon
            smallest.append(f"{cert.notion} {_fmt_eps(efn(ch, delta=ns.delta))}")
    if smallest:
        from ._formatting import format_bound

        blocks.append(f"Smallest certified epsilon at delta = {format_bound(ns.delta, up=True)} "
                      f"(nats, rounded up): " + ", ".join(smallest))
    if ns.save_witness:
        import numpy as np

        np.savez(ns.save_witness, **witnesses)
    print("\n\n".join(blocks), file=out)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``qprldp`` console script.

    Args:
        argv: command-line arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        Exit code: 0 on success, 2 on bad input.

    Example:
        >>> main(["certify", "--p", "0.5", "--dim", "2", "--epsilon", "0.5", "--notion", "qldp"])
        QLDP certificate
          channel   : global depolarizing D_p, p=0.5, d=2
          epsilon   : 0.5 nats
          delta     : 0.33782 (exact)
          statement : the channel is (0.5, 0.33782)-QLDP, and no smaller delta holds (exact)
          witness   : a pair (ρ, σ) of 2×2 input states attains delta (write it with
          --save-witness FILE.npz)
          reference : derived here (docs/qprldp.md, 'Global depolarizing'); QLDP via the
          hockey-stick divergence of Hirche, Rouzé, França arXiv:2202.10717 (v2) Def. 3.1;
          QPrLDP of Shi arXiv:2607.06307
        0
    """
    parser = _parser()
    try:
        ns = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed its message
        return int(exc.code) if exc.code is not None else 0
    try:
        if ns.command == "certify":
            _certify(ns, sys.stdout)
    except (ValueError, TypeError, NotImplementedError, _ArgError) as exc:
        print(f"qprldp: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and closed early
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115  (silence the interpreter's flush)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
