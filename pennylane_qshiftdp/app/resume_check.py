r"""What binds ``qshiftdp train --resume`` to the training data the run started on.

A resume is accepted only if it trains on the same data, sampled at the same rate: the ledger
accounts for one data set of N rows, each step sampling with q = 1/ceil(N/B). A file at the same
``--csv`` path that now holds other rows would otherwise be trained on under the old N and q.

Two records, written when a run starts:

* the checkpoint's ``data`` (:func:`data_facts`): N, q, the public expected batch size B, the
  declared feature ranges and the preprocessing described without any statistic of the data.
  All are public (N and q are in the ledger already; the ranges and the preprocessing are
  declared settings or their description).
* ``resume_check.json`` (:data:`RESUME_CHECK_FILE`): a **keyed** digest of the training rows
  the mechanism consumes, HMAC-SHA256 under a random 256-bit key drawn for the run and stored
  beside it (so the digest alone identifies nothing across runs). Being computed from every
  private row it is NOT protected by the guarantee and is not part of the release: it stays in
  the output directory for the operator who holds the data, like ``diagnostics.json``; the
  ledger, the statement, ``metrics.json`` and the checkpoint never hold it. ``qshiftdp
  predict`` (refitting a standardize_pca feature map) and ``qshiftdp audit --run`` (re-training)
  read it too.

:func:`check_same_data` compares both with the data read now and refuses, before any step,
naming what changed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import secrets
from pathlib import Path

import numpy as np

__all__ = ["RESUME_CHECK_FILE", "RESUME_CHECK_FORMAT", "RESUME_CHECK_NOTE", "check_same_data",
           "data_facts", "keyed_digest", "loader_facts", "write_resume_check"]

#: The file beside ``checkpoint.pt`` holding the key and the keyed digest of the training rows.
RESUME_CHECK_FILE = "resume_check.json"

#: ``resume_check.json`` layout tag.
RESUME_CHECK_FORMAT = "qshiftdp-resume-check-1"

#: The label of ``resume_check.json``.
RESUME_CHECK_NOTE = (
    "NOT protected by the privacy guarantee and not part of the release: an HMAC-SHA256 of "
    "every private training row (the preprocessed features and labels the mechanism consumes) "
    "under the random key stored here; whoever holds this file can test whether a guessed data "
    "set is the one trained on. qshiftdp train --resume (and qshiftdp predict and audit, where "
    "they read the training data again) use it to refuse other data at the same path. Keep it "
    "with the data; do not publish it.")

_FIX = ("resume with the run's own training data (and settings), or start a new run in a new "
        "--output-dir")


def data_facts(data, *, sample_rate: float, expected_batch_size) -> dict:
    """The public facts of the training data a run samples (the checkpoint's ``data``).

    Args:
        data: the run's :class:`~.data.Dataset`.
        sample_rate: the Poisson sampling rate q of every step (the loader's).
        expected_batch_size: the public batch size B the run was given (q = 1/ceil(N/B)).

    Returns:
        dict: ``n_train`` (N), ``sample_rate`` (q), ``expected_batch_size`` (B),
        ``feature_ranges`` (the declared ``[low, high]`` per raw column; empty for digits and
        standardize_pca) and ``preprocessing`` (its description, no statistic of the data).

    Example:
        >>> class D:
        ...     y_train, feature_ranges, preprocessing = [1.0] * 120, ((0, 1),), "fixed"
        >>> data_facts(D(), sample_rate=0.5, expected_batch_size=60)["n_train"]
        120
    """
    return {"n_train": int(len(data.y_train)), "sample_rate": float(sample_rate),
            "expected_batch_size": (expected_batch_size if isinstance(expected_batch_size, str)
                                    else float(expected_batch_size)),
            "feature_ranges": [[float(v) for v in r] for r in data.feature_ranges],
            "preprocessing": str(data.preprocessing)}


def loader_facts(data, expected_batch_size) -> dict:
    """:func:`data_facts` of ``data`` sampled as ``qshiftdp train`` samples it, q = 1/ceil(N/B)
    (for a reader that re-reads a run's data without building its loader).

    Example:
        >>> class D:
        ...     y_train, feature_ranges, preprocessing = [1.0] * 60, (), "fixed"
        >>> loader_facts(D(), 60)["sample_rate"]
        1.0
    """
    n = len(data.y_train)
    rate = 1.0 / math.ceil(n / float(expected_batch_size)) if n else math.nan
    return data_facts(data, sample_rate=rate, expected_batch_size=expected_batch_size)


def keyed_digest(data, key: bytes) -> str:
    """HMAC-SHA256 under ``key`` of the training rows: shapes, features, labels (float64).

    Args:
        data: an object with ``X_train`` and ``y_train`` arrays.
        key: the HMAC key (at least 16 bytes).

    Returns:
        str: the hexadecimal digest (64 characters).

    Raises:
        ValueError: if ``key`` is not bytes of length at least 16.

    Example:
        >>> class D:
        ...     X_train, y_train = np.zeros((2, 3)), np.ones(2)
        >>> len(keyed_digest(D(), bytes(32)))
        64
    """
    if not isinstance(key, bytes) or len(key) < 16:
        raise ValueError(f"`key` must be at least 16 bytes. Found {key!r}.")
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for arr in (data.X_train, data.y_train):
        a = np.ascontiguousarray(arr, dtype=np.float64)
        mac.update(repr(a.shape).encode())
        mac.update(a.tobytes())
    return mac.hexdigest()


def write_resume_check(out_dir: Path, data) -> None:
    """Write ``resume_check.json`` for a new run: a fresh random key and the keyed digest.

    Args:
        out_dir: the run's output directory (it exists).
        data: the run's :class:`~.data.Dataset`.
    """
    from .outputs import write_json

    key = secrets.token_bytes(32)
    write_json(out_dir / RESUME_CHECK_FILE, {
        "NOT_PROTECTED": RESUME_CHECK_NOTE, "format": RESUME_CHECK_FORMAT,
        "hmac_key": key.hex(), "training_rows_hmac_sha256": keyed_digest(data, key)})


def _fmt(x) -> str:
    return f"{x:.6g}" if isinstance(x, (int, float)) else str(x)


def _public_differences(saved: dict, now: dict, names) -> list[str]:
    """The public facts that differ, as sentences (N and q first)."""
    out = []
    if saved["n_train"] != now["n_train"]:
        out.append(f"N = {now['n_train']} rows now, {saved['n_train']} when the run started")
    if float(saved["sample_rate"]) != float(now["sample_rate"]):
        out.append(f"the sampling rate q = 1/ceil(N/B) would be {_fmt(now['sample_rate'])} now, "
                   f"{_fmt(saved['sample_rate'])} in the run's ledger (B = "
                   f"{_fmt(now['expected_batch_size'])} now, "
                   f"{_fmt(saved['expected_batch_size'])} then)")
    if saved["feature_ranges"] != now["feature_ranges"]:
        old, new = saved["feature_ranges"], now["feature_ranges"]
        if len(old) == len(new):
            cols = [f"{names[i] if i < len(names) else f'column {i}'!r} "
                    f"{tuple(b)} now, {tuple(a)} then"
                    for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
            out.append("the declared feature ranges: " + ", ".join(cols))
        else:
            out.append(f"the declared feature ranges: {len(new)} columns now, {len(old)} "
                       f"when the run started")
    if saved["preprocessing"] != now["preprocessing"]:
        out.append(f"the preprocessing: {now['preprocessing']!r} now, "
                   f"{saved['preprocessing']!r} when the run started")
    return out


def check_same_data(out_dir: Path, ckpt: dict, data, facts: dict, *,
                    settings_differ=(), what: str = "--resume", fix: str | None = None) -> None:
    """Refuse training data (or their sampling) other than the run's, naming what changed.

    Compared in order: the public facts of the checkpoint's ``data`` (N, q, B, the declared
    ranges, the preprocessing; :func:`data_facts`), then the keyed digest of the rows in
    ``resume_check.json``. A checkpoint written before these were recorded is refused: the rows
    cannot be checked. With ``settings_differ`` (settings that differ from the run's, which the
    caller refuses next) the digest is not compared: another seed or test size draws another
    split, and the settings are the cause to name.

    Args:
        out_dir: the run's output directory.
        ckpt: its loaded checkpoint.
        data: the training data read now.
        facts: :func:`data_facts` of ``data`` as sampled now.
        settings_differ: the caller's sentences naming the settings that differ (added to a
            refusal of the public facts).
        what: the command named in the message.
        fix: what the message advises (default: resume with the run's own data, or start a new
            run).

    Raises:
        ValueError: the data, N, q, B, ranges or preprocessing differ, or the run's records of
            them are missing or unreadable (the message names which).
    """
    saved = ckpt.get("data")
    path = out_dir / RESUME_CHECK_FILE
    if not isinstance(saved, dict) or not path.is_file():
        missing = ("its checkpoint.pt has no `data` record" if not isinstance(saved, dict)
                   else f"{path} is missing")
        raise ValueError(
            f"{what}: cannot check that the training data are the run's: {missing} (a run "
            f"started before qshiftdp recorded N, q and a keyed digest of the training rows, "
            f"or a directory that lost {RESUME_CHECK_FILE}). Without them other rows at the "
            f"same path would be trained on under the run's N and q, so it is refused; start "
            f"a new run in a new --output-dir.")
    try:
        saved = {k: saved[k] for k in ("n_train", "sample_rate", "expected_batch_size",
                                       "feature_ranges", "preprocessing")}
        record = json.loads(path.read_text(encoding="utf-8"))
        key = bytes.fromhex(record["hmac_key"])
        digest = str(record["training_rows_hmac_sha256"])
        if record.get("format") != RESUME_CHECK_FORMAT:
            raise ValueError(f"format {record.get('format')!r}")
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{what}: cannot check that the training data are the run's: {path} "
                         f"or the checkpoint's `data` record cannot be read (corrupt?): "
                         f"{type(err).__name__}: {err}.") from None
    fix = _FIX if fix is None else fix
    names = tuple(getattr(data, "raw_feature_names", ()))
    differ = _public_differences(saved, facts, names)
    if differ:
        also = (" These settings differ too: " + "; ".join(settings_differ) + "."
                if settings_differ else "")
        raise ValueError(f"{what}: the training data differ from the run's: "
                         + "; ".join(differ) + f". The run's ledger accounts for one data set "
                         f"sampled at one rate: {fix}.{also}")
    if settings_differ:
        return
    if not hmac.compare_digest(keyed_digest(data, key), digest):
        raise ValueError(
            f"{what}: the training data differ from the run's: the same N = "
            f"{facts['n_train']} rows, but their keyed digest (HMAC-SHA256 of the preprocessed "
            f"training rows and labels, {path}) differs from the one recorded when the run "
            f"started: a row was changed, replaced or reordered. {fix[0].upper()}{fix[1:]}.")
