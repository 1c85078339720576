r"""The human-readable privacy statement of a :class:`~.PrivacyLedger`.

The first line is the guarantee and says what it covers and what it does not; the other lines
say what is protected, the sampling, the mechanism, the accountant, the steps, the shot-noise
credit and its assumption, the preprocessing, the randomness and the software. Only public
properties of the ledger are read, so the statement is a function of what the ledger records.
"""

from __future__ import annotations

import json
from typing import Any

import opacus

from .._formatting import format_up
from .registry import ACCOUNTANTS, resolve_accountant

__all__ = ["privacy_statement"]

_ACCOUNTANT_NAMES = {
    "rdp": "RDPAccountant (Rényi DP of the sampled Gaussian mechanism, Mironov et al. "
    "arXiv:1908.10530, converted to (ε, δ) by Balle et al. arXiv:1905.09982 Thm. 21)",
    "prv": "PRVAccountant (numerical composition of privacy loss random variables, Gopi et al. "
    "arXiv:2106.02848; the upper end of its error bracket is reported)",
    "pld": "PLDAccountant, registered as 'pld' (Google dp-accounting {dp_accounting}'s privacy "
    "loss distributions of the Poisson-subsampled Gaussian, composed by FFT, with its "
    "pessimistic discretisation: every rounding increases ε; Doroshenko et al. "
    "arXiv:2207.04380)",
}

_SHORT_NAMES = {"rdp": "RDP", "prv": "PRV", "pld": "PLD"}


def _fmt(x: float) -> str:
    """Compact, round-trip-safe enough number formatting for statements (descriptions: σ, Δ,
    q, b, the target; the privacy parameters claimed are printed with :func:`_up`)."""
    return f"{x:.6g}"


def _up(x: float, *more: float) -> str:
    """An ε, δ or β claimed (or δ + β from its terms): 6 significant digits rounded up, so the
    printed number is never below the value (:func:`~pennylane_qshiftdp._formatting.format_up`).
    """
    return format_up(x, *more)


def _total_delta(ledger) -> str:
    """δ + β of the credited claim, summed from the two parameters' decimals."""
    return _up(ledger.target_delta, ledger.beta) if ledger.beta else _up(ledger.total_delta)


def privacy_statement(ledger, *, diagnostics: dict[str, Any] | None = None) -> str:
    r"""A human-readable privacy statement for the run recorded so far.

    The first line is the guarantee and says what it covers and what it does not
    (data-dependent preprocessing, written diagnostics, steps outside Poisson sampling).
    Then: what is protected (each training example's membership, under the adjacency
    relation), the sampling, the mechanism (σ, C), the accountant and its version, the
    number of steps, the Gaussian approximation of shot noise when a credit mode is on, and
    the preprocessing.

    Nothing in it is computed from the private batches unless ``diagnostics`` is given:
    with a credit mode the credited ε (a function of the batches' shot statistics) is then
    withheld, and whether a certified clip bound is not reported.

    Args:
        diagnostics: ``None`` (default) for a statement of data-independent facts only. A
            dict says that diagnostics computed from the private batches were released
            beside the statement (they are NOT protected) and adds them, marked as such:
            ``"written_to"`` (list of file names), ``"per_example_gradients"`` and
            ``"certified_clip_binding"`` (counts over the run) are described in words, any
            other JSON-able entry is listed; the credited ε is shown.

    Returns:
        A multi-line string.

    Raises:
        TypeError: if ``diagnostics`` is neither ``None`` nor a dict.

    Example:
        >>> from pennylane_qshiftdp.accountants import PrivacyLedger
        >>> ledger = PrivacyLedger(target_epsilon=1.0, target_delta=1e-5,
        ...                        noise_multiplier=2.0, sample_rate=0.1, sensitivity=1.0)
        >>> print(privacy_statement(ledger).splitlines()[0])  # doctest: +NORMALIZE_WHITESPACE
        Guarantee: (ε, δ) = (0, 1e-05)-differential privacy (ε in nats; target ε = 1) for
        the training examples (add/remove-one adjacency) as they reach the private training
        loop; NOT for any preprocessing fitted on the data before that point (none
        declared).
    """
    if diagnostics is not None and not isinstance(diagnostics, dict):
        raise TypeError(f"`diagnostics` must be None or a dict. Found "
                        f"{type(diagnostics).__name__}.")
    credited = ledger.credited_epsilon if diagnostics is not None else None
    steps = ledger.steps
    extra = ledger.extra or {}
    lines = []
    violations = extra.get("steps_without_poisson_batch", 0)
    if violations:
        lines.append(f"NO GUARANTEE for this run: {violations} step(s) used no batch drawn "
                     f"from the Poisson-sampling loader returned by make_private; the "
                     f"guarantee below assumes Poisson sampling and DOES NOT HOLD.")
    lines.append(_coverage_text(ledger, diagnostics))
    lines.append("Privacy statement of pennylane-qshiftdp (Q-ShiftDP) for the run recorded "
                 "so far.")
    if ledger.credit_mode != "none":
        lines.append(_credited_text(ledger, credited))

    lines.append(_protected_text(ledger))

    lines.append(f"Sampling: {_sampling_text(ledger)}")

    lines.extend(_mechanism_lines(ledger, diagnostics))
    if ledger.credit_mode != "none":
        lines.append(f"Proven noise history (σ_t, q, steps) = {ledger.proven_history}.")
    lines.append(_accountant_text(ledger))
    lines.append(f"Steps: {steps} recorded; planned history (σ, q, steps) = {ledger.history}.")

    lines.append(f"Shot-noise credit: {_credit_text(ledger)}")
    lines.extend(_shot_lines(ledger))

    lines.extend(_preprocessing_lines(ledger))
    if extra.get("model_checks_device"):
        lines.append(f"Model checks: {extra['model_checks_device']}.")
    randomness = extra.get("randomness")
    if randomness:
        lines.append(f"Randomness: {randomness}")
    versions = extra.get("versions")
    if versions:
        lines.append("Software: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    details = {k: v for k, v in extra.items()
               if k not in ("versions", "provenance", "randomness", "preprocessing",
                            "expected_batch_size_source", "shot_budget")}
    if details:
        lines.append(f"Details: {json.dumps(details, sort_keys=True)}")
    if diagnostics is not None:
        lines.append(_diagnostics_text(diagnostics))
    return "\n".join(lines)



def _credited_text(ledger, credited: float | None) -> str:
    """The credited (approximate) guarantee: its ε withheld unless diagnostics release it."""
    beta_text = (
        f", with β = {_up(ledger.beta)} the probability that the adaptive shot-noise "
        f"variance bound fails at any step of the run" if ledger.beta > 0 else ""
    )
    label = "(ε, δ + β)" if ledger.beta > 0 else "(ε, δ)"
    if credited is None:
        return (
            f"Credited Q-ShiftDP guarantee (an APPROXIMATION, not proven): {label} = "
            f"(ε withheld, {_total_delta(ledger)}) if the credited shot noise acted "
            f"as Gaussian noise{beta_text}. Its ε is computed from the private batches' "
            f"shot statistics, so it is itself NOT protected and is not shown; pass "
            f"diagnostics (`qshiftdp train --diagnostics`) to release it, marked as "
            f"such (target ε = {_fmt(ledger.target_epsilon)})."
        )
    return (
        f"Credited Q-ShiftDP guarantee (an APPROXIMATION, not proven): {label} = "
        f"({_up(credited)}, {_total_delta(ledger)}) if the credited shot noise "
        f"acted as Gaussian noise{beta_text} (target ε = "
        f"{_fmt(ledger.target_epsilon)}); this ε is a diagnostic computed from the "
        f"private batches, NOT protected by the guarantee."
    )


def _protected_text(ledger) -> str:
    """What is protected: each example's membership, under the ledger's adjacency."""
    if ledger.adjacency == "add_remove":
        adj = (
            "add/remove-one adjacency: the output distribution changes little when any one "
            "example is added to or removed from the training set"
        )
    else:
        adj = (
            "replace-one adjacency: the output distribution changes little when any one "
            "example is replaced by another; the sensitivity Δ includes the factor 2 for "
            "replacement"
        )
    return (
        f"Protected: the membership of each individual training example ({adj}). Only the "
        f"noisy gradients are released; the trained weights and anything computed from "
        f"them are post-processing, including metrics on a held-out test split (those "
        f"describe the test examples, which the guarantee does not protect)."
    )


def _mechanism_lines(ledger, diagnostics: dict[str, Any] | None) -> list[str]:
    """The mechanism (σ, Δ or the enforced clip C), the certified clip, the clip schedule."""
    sigma, sens = ledger.noise_multiplier, ledger.sensitivity
    extra = ledger.extra or {}
    lines = []
    clipping = extra.get("clipping")
    if clipping is None:
        lines.append(
            f"Mechanism: the summed per-example parameter-shift gradients carry Gaussian "
            f"noise of variance σ²Δ² per coordinate, with noise multiplier σ = {_fmt(sigma)} "
            f"and per-example sensitivity Δ = {_fmt(sens)} (L2, bounded a priori by the "
            f"parameter-shift rule); noise standard deviation σΔ = {_fmt(sigma * sens)}."
        )
    else:
        lines.append(
            f"Mechanism: every example's gradient is clipped in the optimizer's step() to L2 "
            f"norm at most C ({clipping.get('description', clipping.get('mode'))}); the sum "
            f"carries Gaussian noise of standard deviation σC per coordinate with planned σ "
            f"= {_fmt(sigma)} and C = {_fmt(sens)} (σC = {_fmt(sigma * sens)})"
            + (f", except that with the shot-noise credit the quantum coordinates carry "
               f"exactly σ_floor·C with σ_floor = {_fmt(extra['noise_floor_multiplier'])}"
               f" at every step (a level that never depends on the data)"
               if ledger.credit_mode != "none" and "noise_floor_multiplier" in extra else "")
            + ". The guarantee holds for any loss and training loop because the clipping is "
            "enforced."
        )
        if clipping.get("mode") == "certified":
            lines.append(f"Certified clip: {_certified_clip_text(diagnostics)}")
        schedule = extra.get("clip_norm_schedule")
        if schedule:
            factor = sens / float(clipping.get("clip_norm") or sens)  # 2 under replace-one
            moves = "; ".join(f"from step {int(e['from_step'])} C = {_fmt(e['clip_norm'])} "
                              f"(noise std {_fmt(sigma * factor * e['clip_norm'])})"
                              for e in schedule)
            lines.append(
                f"Clip norm schedule (set during training, e.g. by an Opacus clip scheduler; "
                f"public: a function of the step only): {moves}. Every step's rows are "
                f"clipped at, and its noise scaled by, the C in force; σ is unchanged, so the "
                f"accounting above holds.")
    return lines


def _shot_lines(ledger) -> list[str]:
    """The shot budget's split, and the Gaussian assumption of a shot-noise credit."""
    extra = ledger.extra or {}
    lines = []
    budget = extra.get("shot_budget")
    if budget:
        lines.append(
            f"Shot budget: {budget['shots_per_step']} shots per step for the parameter-shift "
            f"circuits, {budget['shots_per_example']} per example and quantum layer (over the "
            f"expected batch {_fmt(budget['expected_batch_size'])}, never the realised one), "
            f"split over each example's shifted circuits in proportion to their |shift "
            f"coefficient| (every circuit's shots: provenance.shot_allocation). The certified "
            f"bound Δ does not depend on the shots (it holds for every outcome); "
            + ("the credit uses each circuit's own shots." if ledger.credit_mode != "none"
               else "no shot noise is credited."))
    if ledger.credit_mode != "none":
        lines.append(
            "Assumption: crediting treats the shot noise of the sample means as Gaussian by "
            "the central limit theorem. This is an approximation (finite shots give a "
            "scaled binomial, not a Gaussian); the guarantee above holds to the extent that "
            "the approximation does."
        )
    return lines


def _preprocessing_lines(ledger) -> list[str]:
    """What preprocessing the guarantee covers (a fixed feature map) and what it does not."""
    extra = ledger.extra or {}
    lines = []
    if ledger.preprocessing_note:
        note = ledger.preprocessing_note.strip()
        if not note.endswith((".", "!", "?")):
            note += "."
        if "not protected" not in note.lower() and "not covered" not in note.lower():
            note += " These data-dependent statistics are not covered by the guarantee."
        if extra.get("preprocessing"):  # a fixed feature map beside what was read from data
            lines.append(f"Preprocessing: {extra['preprocessing']}; fixed before seeing the "
                         f"data.")
        lines.append(f"Preprocessing (NOT protected): {note}")
    elif extra.get("preprocessing"):
        lines.append(
            f"Preprocessing: {extra['preprocessing']}; fixed before seeing the data, "
            f"so the guarantee covers the raw training examples."
        )
    else:
        lines.append(
            "Preprocessing: none declared; the guarantee covers the training data exactly as "
            "they reach the private training loop. Preprocessing fitted on the training data "
            "before that point (e.g. standardisation or PCA) is not covered; declare it with "
            "`preprocessing_note`."
        )
    return lines


def _sampling_text(ledger) -> str:
    """What was sampled at which rate, where q came from, and what the sum is divided by."""
    q, n, source = ledger.sample_rate, ledger.dataset_size, ledger.sample_rate_source
    text = (f"Poisson sampling with rate q = {_fmt(q)}: each example joins each batch "
            f"independently with probability q")
    if source == "sample_rate":
        text += " (q was given, public: no count of the training data enters the release)."
    elif source == "dataset_size":
        text += (f", q = b/N from the declared data set size N = {n} (public: no count of "
                 f"the training data enters the release).")
    elif source == "dataset_length":
        text += (f", q = 1/len(loader) computed from the number of training examples "
                 f"N = {n}, which is therefore treated as public (as in Opacus): the guarantee "
                 f"holds for neighbouring data sets with the sampling rate held fixed. Declare "
                 f"`dataset_size` or `sample_rate` to make q independent of the data.")
    elif n is not None:
        text += (f" over the N = {n} examples. N is treated as public, as in Opacus (q is "
                 f"derived from it).")
    else:
        text += "."
    b = ledger.expected_batch_size
    if b is not None:
        where = (ledger.extra or {}).get("expected_batch_size_source")
        text += (f" The noisy sum is divided by the public constant b = {_fmt(b)}"
                 + (f" ({where})" if where else "")
                 + ", the same for neighbouring data sets; never by q·N, which differs "
                 "between them under add/remove adjacency (opacus#819).")
    return text


def _user_accountant(name: str) -> str:
    """What the statement says of an accountant a user registered with Opacus (not vouched)."""
    cls = resolve_accountant(name).cls
    return (f"{cls.__module__}.{cls.__qualname__}, registered with Opacus as {name!r} by the "
            f"user (not one pennylane_qshiftdp ships)")


def _accountant_text(ledger) -> str:
    """The accountant of the guarantee and, beside it, RDP and PLD on the same history."""
    # the shipped text only for the shipped class under its name (not one re-registered)
    vouched = ACCOUNTANTS.get(ledger.accountant) is resolve_accountant(ledger.accountant).cls
    name = (_ACCOUNTANT_NAMES[ledger.accountant] if vouched
            else _user_accountant(ledger.accountant))
    if "{dp_accounting}" in name:
        from importlib.metadata import PackageNotFoundError, version

        try:
            name = name.format(dp_accounting=version("dp-accounting"))
        except PackageNotFoundError:  # pragma: no cover - a dependency
            name = name.format(dp_accounting="")
    text = (f"Accountant: Opacus {opacus.__version__} {name}; ε is an upper bound." if vouched
            else f"Accountant: Opacus {opacus.__version__} {name}; ε is that accountant's own "
            f"claim, an upper bound only if it computes one (pennylane_qshiftdp cannot check).")
    if ledger.steps:
        beside = {k: v for k, v in ledger.epsilons.items() if k != ledger.accountant}
        if beside:
            text += (" On the same proven history: " + ", ".join(
                f"{_SHORT_NAMES.get(k, k)} ε = {_up(v)}" for k, v in beside.items())
                + f" (each an upper bound; the guarantee and the budget use "
                f"{_SHORT_NAMES.get(ledger.accountant, repr(ledger.accountant))}).")
    return text


def _coverage_text(ledger, diagnostics) -> str:
    """The statement's first line: the guarantee, what it covers and what it does not."""
    eps = _up(ledger.epsilon)
    if ledger.credit_mode == "none":
        head = (f"Guarantee: (ε, δ) = ({eps}, {_up(ledger.target_delta)})-differential privacy "
                f"(ε in nats; target ε = {_fmt(ledger.target_epsilon)})")
    else:
        head = (f"Proven guarantee: (ε, δ) = ({eps}, {_up(ledger.target_delta)})-differential "
                f"privacy (ε in nats), from the Gaussian noise actually added at each step "
                f"(no assumption on shot noise)")
    adj = "add/remove-one" if ledger.adjacency == "add_remove" else "replace-one"
    head += f" for the training examples ({adj} adjacency)"
    extra = ledger.extra or {}
    if ledger.preprocessing_note and extra.get("preprocessing"):
        head += (", their feature values as raw data (the feature preprocessing is fixed "
                 "before seeing the data); NOT for what the 'Preprocessing (NOT protected)' "
                 "line lists, which was read from the training data without privacy")
    elif ledger.preprocessing_note:
        head += (" as preprocessed, with the preprocessing statistics held fixed; NOT for "
                 "those statistics, which were computed from the training data without "
                 "privacy (see Preprocessing), so NOT for the raw data")
    elif extra.get("preprocessing"):
        head += (", raw data included (the preprocessing is fixed before seeing the "
                 "data)")
    else:
        head += (" as they reach the private training loop; NOT for any preprocessing "
                 "fitted on the data before that point (none declared)")
    if diagnostics is not None:
        files = diagnostics.get("written_to")
        where = f" ({', '.join(map(str, files))})" if files else ""
        head += (f"; NOT for the diagnostics released beside it{where}, which are computed "
                 f"from the private batches")
    return head + "."



def _certified_clip_text(diagnostics) -> str:
    """The certified clip line: the binding count only as a marked diagnostic."""
    rule = ("a clip that binds means the declared loss or observable bound was wrong for "
            "that example, never a weaker guarantee, because the clip is enforced")
    if diagnostics is None or "certified_clip_binding" not in diagnostics:
        return (f"{rule}. Whether it bound is computed from the private batches, so it is "
                f"not reported here (pass diagnostics, `qshiftdp train --diagnostics`, to "
                f"count it, marked as not protected).")
    bound = int(diagnostics["certified_clip_binding"])
    total = diagnostics.get("per_example_gradients")
    of = f" of {int(total)}" if total is not None else ""
    return (f"{rule}. Diagnostic (NOT protected, computed from the private batches): "
            f"{bound}{of} per-example gradients exceeded the certified bound and were "
            f"clipped" + (" — the certified bound does not hold for this model and loss."
                          if bound else "."))



def _diagnostics_text(diagnostics) -> str:
    """The closing diagnostics line (everything in it is NOT protected)."""
    files = diagnostics.get("written_to")
    text = ("Diagnostics (NOT protected by the privacy guarantee: computed from the private "
            "batches, they can reveal individual training examples; do not publish them)")
    text += f": written to {', '.join(map(str, files))}." if files else "."
    rest = {k: v for k, v in diagnostics.items()
            if k not in ("written_to", "certified_clip_binding", "per_example_gradients")}
    if rest:
        text += f" Values: {json.dumps(rest, sort_keys=True, default=str)}."
    return text



def _credit_text(ledger) -> str:
    mode = ledger.credit_mode
    if mode == "none":
        return (
            "none. The full noise N(0, σ²C² I) is added artificially; no assumption on shot "
            "noise is made."
        )
    common = (
        " The added Gaussian noise is the data-independent floor σ_floor·C; the credited "
        "guarantee counts the floor plus the credited shot noise, minus the largest "
        "single-example shot-noise term (the example that differs between neighbours cannot "
        "protect itself). The credited ε and σ_t are computed from the private batches."
    )
    extra = ledger.extra or {}
    floor = extra.get("variance_floor")
    if extra.get("variance_floor_source") == "declared":
        floor_text = (
            f"a variance floor v_min = {floor:g} DECLARED BY THE USER (not proven by this "
            f"library; the guarantee relies on it)"
        )
    else:
        floor_text = (
            "a floor proven from the device's declared depolarizing noise"
            + (f" (v_min = {floor:g})" if floor is not None else "")
            + "; the guarantee relies on the hardware noise being at least as declared"
        )
    if mode == "depolarizing":
        return (
            "depolarizing (non-adaptive Q-ShiftDP). Shot noise is credited with a "
            f"data-independent lower bound on each shifted circuit's single-shot variance, "
            f"{floor_text}." + common
        )
    if mode == "adaptive":
        return (
            f"adaptive (adaptive Q-ShiftDP). Shot noise is credited with a distribution-free "
            f"lower confidence bound on the batch's shot variance (Hoeffding/Bernstein on the "
            f"sample variances, valid at every shot count), floored at {floor_text}; the "
            f"bound fails "
            f"with probability at most β = {_up(ledger.beta)} over the whole run (union bound "
            f"over steps and coordinates), hence δ + β." + common
        )
    return (
        f"isotropic (the Q-ShiftDP paper's variant). The adaptive lower confidence bound "
        f"(failure probability at most β = {_up(ledger.beta)} over the run, hence δ + β), "
        f"floored at {floor_text}; its minimum over coordinates is credited on every "
        f"coordinate (single noise level σ_B²)." + common
    )
