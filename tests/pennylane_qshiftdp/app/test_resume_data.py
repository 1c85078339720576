"""``qshiftdp train --resume`` binds to the training data, not to the ``--csv`` path (issue 42).

A seeded run on a CSV file of 160 rows (120 training rows, B = 60: q = 1/ceil(120/60) = 0.5)
is interrupted after its first epoch; the file at the same path is then shrunk, edited, or read
under other declared ranges. Each resume must be refused before any step, naming what changed;
the same data resume bit for bit.
"""

import json
import re
import shutil
import warnings

import numpy as np
import pytest
import torch

from pennylane_qshiftdp.app.job import TrainConfig, train
from pennylane_qshiftdp.app.resume_check import RESUME_CHECK_FILE, keyed_digest

_VALUES = np.random.default_rng(0).uniform(0.0, 1.0, size=(160, 2))


def _write_csv(path, rows=160, edit=None):
    """The CSV file: ``rows`` rows of two features in [0, 1]; ``edit`` = (row, value) sets the
    first feature of one row (still inside the declared range)."""
    values = _VALUES[:rows].copy()
    if edit is not None:
        values[edit[0], 0] = edit[1]
    lines = ["a,b,label"] + [f"{x:.6f},{y:.6f},{'yes' if i % 2 else 'no'}"
                             for i, (x, y) in enumerate(values)]
    path.write_text("\n".join(lines) + "\n")


def _config(path, out, **kw):
    return TrainConfig(**{**dict(dataset="csv", csv_path=str(path), label_column="label",
                                 classes=("no", "yes"), feature_range=(0.0, 1.0), epochs=2,
                                 expected_batch_size=60, secure_mode=False, seed=1,
                                 output_dir=str(out)), **kw})


def _train(cfg, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tiny run's majority-class warning
        return train(cfg, progress=False, **kw)


@pytest.fixture
def interrupted(tmp_path):
    """(csv path, run directory, bytes of every file of the run) after one of two epochs."""
    path, out = tmp_path / "d.csv", tmp_path / "run"
    _write_csv(path)
    r = _train(_config(path, out), stop_after_epochs=1)
    assert r.steps == 2  # q = 0.5: two expected batches of 60 per epoch
    ckpt = torch.load(out / "checkpoint.pt", weights_only=True)
    assert ckpt["data"]["n_train"] == 120 and ckpt["data"]["sample_rate"] == 0.5
    assert ckpt["data"]["expected_batch_size"] == 60
    files = {f.name: f.read_bytes() for f in out.iterdir()}
    return path, out, files


def _unchanged(out, files):
    """The refused resume wrote nothing: every file of the run is byte for byte the same."""
    return {f.name: f.read_bytes() for f in out.iterdir()} == files


def test_same_data_resumes_bit_for_bit(interrupted, tmp_path):
    path, out, _ = interrupted
    full = _train(_config(path, tmp_path / "full"))
    resumed = _train(_config(path, out), resume=True)
    assert resumed.steps == full.steps == 4
    np.testing.assert_array_equal(resumed.weights, full.weights)
    a = json.loads((out / "ledger.json").read_text())
    b = json.loads((tmp_path / "full" / "ledger.json").read_text())
    assert a["proven_history"] == b["proven_history"] and a["sample_rate"] == 0.5


def test_fewer_rows_at_the_same_path_are_refused_naming_n(interrupted):
    path, out, files = interrupted
    _write_csv(path, rows=80)  # 60 training rows: q would be 1/ceil(60/60) = 1
    with pytest.raises(ValueError) as err:
        _train(_config(path, out), resume=True)
    assert str(err.value) == (
        "--resume: the training data differ from the run's: N = 60 rows now, 120 when the "
        "run started; the sampling rate q = 1/ceil(N/B) would be 1 now, 0.5 in the run's "
        "ledger (B = 60 now, 60 then). The run's ledger accounts for one data set sampled at "
        "one rate: resume with the run's own training data (and settings), or start a new run "
        "in a new --output-dir.")
    assert _unchanged(out, files)


def test_one_changed_row_is_refused_naming_the_digest(interrupted):
    from pennylane_qshiftdp.app.data import load_dataset

    path, out, files = interrupted
    before = load_dataset("csv", csv_path=str(path), label_column="label",
                          classes=("no", "yes"), feature_range=(0.0, 1.0), n_features=None,
                          seed=1)
    _write_csv(path, edit=(0, 0.123456))
    after = load_dataset("csv", csv_path=str(path), label_column="label",
                         classes=("no", "yes"), feature_range=(0.0, 1.0), n_features=None,
                         seed=1)
    # the edit reaches exactly one training row (the check below is not vacuous)
    assert after.n_train == before.n_train == 120
    assert int((after.X_train != before.X_train).any(axis=1).sum()) == 1
    with pytest.raises(ValueError) as err:
        _train(_config(path, out), resume=True)
    assert str(err.value) == (
        f"--resume: the training data differ from the run's: the same N = 120 rows, but their "
        f"keyed digest (HMAC-SHA256 of the preprocessed training rows and labels, "
        f"{out / RESUME_CHECK_FILE}) differs from the one recorded when the run started: a row "
        f"was changed, replaced or reordered. Resume with the run's own training data (and "
        f"settings), or start a new run in a new --output-dir.")
    assert _unchanged(out, files)
    _write_csv(path)  # the original rows again: accepted
    assert _train(_config(path, out), resume=True).steps == 4


def test_a_changed_declared_range_is_refused(interrupted):
    path, out, files = interrupted
    with pytest.raises(ValueError) as err:
        _train(_config(path, out, feature_range=((0.0, 1.0), (0.0, 2.0))), resume=True)
    assert str(err.value) == (
        "--resume: the training data differ from the run's: the declared feature ranges: 'b' "
        "(0.0, 2.0) now, (0.0, 1.0) then. The run's ledger accounts for one data set sampled "
        "at one rate: resume with the run's own training data (and settings), or start a new "
        "run in a new --output-dir. These settings differ too: --feature-range: (0.0, 1.0) "
        "(interrupted run) vs ((0.0, 1.0), (0.0, 2.0)) (now).")
    assert _unchanged(out, files)


def test_a_changed_shipped_range_is_refused_though_no_setting_changed(monkeypatch, tmp_path):
    """No --feature-range: iris's shipped ranges apply; a version that ships others must not
    continue the run (the settings are equal, the feature map is not)."""
    import pennylane_qshiftdp.app.data as data_mod

    cfg = TrainConfig(dataset="iris", classes=(1, 2), epochs=2, expected_batch_size=40,
                      secure_mode=False, seed=1, output_dir=str(tmp_path / "run"))
    _train(cfg, stop_after_epochs=1)
    ranges = dict(data_mod.FEATURE_RANGES)
    ranges["iris"] = ((3.8, 8.7), (1.8, 4.9), (0.9, 7.6), (0.0, 3.0))
    monkeypatch.setattr(data_mod, "FEATURE_RANGES", ranges)
    with pytest.raises(ValueError) as err:
        _train(cfg, resume=True)
    assert str(err.value).startswith(
        "--resume: the training data differ from the run's: the declared feature ranges: "
        "'petal width (cm)' (0.0, 3.0) now, (0.09, 2.8) then. ")
    assert "These settings differ too" not in str(err.value)


@pytest.mark.parametrize("loses", ["checkpoint record", RESUME_CHECK_FILE])
def test_an_older_run_without_the_records_is_refused(interrupted, loses):
    """Without N, q and the keyed digest the rows cannot be checked: refused, not trusted."""
    path, out, _ = interrupted
    if loses == RESUME_CHECK_FILE:
        (out / RESUME_CHECK_FILE).unlink()
        missing = f"{out / RESUME_CHECK_FILE} is missing"
    else:
        ckpt = torch.load(out / "checkpoint.pt", weights_only=True)
        del ckpt["data"]
        torch.save(ckpt, out / "checkpoint.pt")
        missing = "its checkpoint.pt has no `data` record"
    with pytest.raises(ValueError) as err:
        _train(_config(path, out), resume=True)
    assert str(err.value) == (
        f"--resume: cannot check that the training data are the run's: {missing} (a run "
        f"started before qshiftdp recorded N, q and a keyed digest of the training rows, or a "
        f"directory that lost {RESUME_CHECK_FILE}). Without them other rows at the same path "
        f"would be trained on under the run's N and q, so it is refused; start a new run in a "
        f"new --output-dir.")


def test_the_digest_is_kept_out_of_every_released_file(interrupted):
    path, out, _ = interrupted
    check = json.loads((out / RESUME_CHECK_FILE).read_text())
    assert check["NOT_PROTECTED"].startswith("NOT protected by the privacy guarantee")
    digest, key = check["training_rows_hmac_sha256"], check["hmac_key"]
    from pennylane_qshiftdp.app.data import load_dataset

    data = load_dataset("csv", csv_path=str(path), label_column="label", classes=("no", "yes"),
                        feature_range=(0.0, 1.0), n_features=None, seed=1)
    assert keyed_digest(data, bytes.fromhex(key)) == digest  # it is the rows' digest
    assert keyed_digest(data, bytes(32)) != digest  # and it depends on the key
    for name in ("ledger.json", "metrics.json", "privacy_statement.txt", "checkpoint.pt"):
        raw = (out / name).read_bytes()
        assert digest.encode() not in raw and key.encode() not in raw, name


def test_predict_refits_only_on_the_runs_own_data(tmp_path):
    """standardize_pca: predict refits the feature map from the training data at the run's
    path, so it checks them as a resume does."""
    from pennylane_qshiftdp.app.predict import load_run

    path, out = tmp_path / "d.csv", tmp_path / "run"
    _write_csv(path)
    _train(_config(path, out, preprocessing="standardize_pca", feature_range=None, epochs=1))
    load_run(out)  # the same data: accepted
    _write_csv(path, rows=80)
    with pytest.raises(ValueError, match=re.escape(
            "predict (refitting the run's feature map): the training data differ from the "
            "run's: N = 60 rows now, 120 when the run started")):
        load_run(out)


def test_cli_resume_on_shrunk_data_exits_2_with_the_message(capsys, tmp_path):
    from pennylane_qshiftdp.app.cli import main

    path, out = tmp_path / "d.csv", tmp_path / "run"
    _write_csv(path)
    args = ["train", "--dataset", "csv", "--csv", str(path), "--label-column", "label",
            "--classes", "no,yes", "--feature-range", "0:1", "--epochs", "2", "--batch-size",
            "60", "--seeded-noise", "--seed", "1", "--no-progress", "--output-dir", str(out)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main([*args, "--epochs", "1"]) == 0
    shutil.copy(out / "checkpoint.pt", tmp_path / "ckpt.bak")
    _write_csv(path, rows=80)
    assert main([*args, "--epochs", "1", "--resume"]) == 2
    assert ("--resume: the training data differ from the run's: N = 60 rows now, 120 when the "
            "run started") in capsys.readouterr().err
    assert (out / "checkpoint.pt").read_bytes() == (tmp_path / "ckpt.bak").read_bytes()


def test_a_ledger_at_another_rate_is_refused_even_when_the_data_record_matches(interrupted):
    """The ledger's own q is checked too: new steps are never recorded at an old rate."""
    path, out, _ = interrupted
    ckpt = torch.load(out / "checkpoint.pt", weights_only=True)
    ckpt["ledger"]["sample_rate"] = 0.25
    torch.save(ckpt, out / "checkpoint.pt")
    with pytest.raises(ValueError, match=re.escape(
            "--resume: the run's ledger samples at q = 0.25, this run's loader at q = 0.5; "
            "resume with the run's own training data and settings.")):
        _train(_config(path, out), resume=True)


def test_audit_reruns_only_on_the_runs_own_data(tmp_path):
    """qshiftdp audit --run re-trains on the data at the run's path: checked like a resume
    (refused before the re-run trains anything)."""
    from pennylane_qshiftdp.app.audit_run import _read_run

    path, out = tmp_path / "d.csv", tmp_path / "run"
    _write_csv(path)
    _train(_config(path, out, epochs=1))
    assert _read_run(out)[0].csv_path == str(path)  # the same data: accepted
    _write_csv(path, edit=(0, 0.123456))
    with pytest.raises(ValueError, match=re.escape(
            "--run: the training data differ from the run's: the same N = 120 rows, but their "
            "keyed digest")):
        _read_run(out)
