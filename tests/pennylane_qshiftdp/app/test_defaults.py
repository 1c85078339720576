"""The "auto" settings of qshiftdp train (app.defaults) and the neuron model they pick.

Checked: the model chosen per task family and the refusals; the neuron's outputs against the
closed form ⟨Z⟩ = cos θ cos a − sin θ cos φ sin a; its per-example gradients under Opacus
against backprop of one example at a time; the job's outputs (settings in the ledger and the
result); a private default run that learns breast cancer.
"""

import dataclasses
import math
import re

import numpy as np
import pytest
import torch

from pennylane_qshiftdp.app.config import TrainConfig
from pennylane_qshiftdp.app.defaults import resolve_model, resolve_settings
from pennylane_qshiftdp.app.models import QuantumNeuronClassifier


@pytest.mark.parametrize(("kwargs", "model"), [
    ({}, "quantum"),
    ({"dataset": "iris", "qubits": 4}, "quantum"),
    ({"dataset": "iris", "model": "neuron", "layers": 1, "qubits": 3}, "neuron"),
    ({"classes": (3, 8)}, "quantum"),
    ({"classes": "all"}, "neuron"),
    ({"dataset": "breast_cancer"}, "neuron"),
    ({"dataset": "iris"}, "neuron"),
    ({"dataset": "wine", "credit": "adaptive"}, "quantum"),
    ({"dataset": "wine", "shots": "auto"}, "quantum"),
    ({"dataset": "iris", "layers": 3}, "quantum"),
    ({"dataset": "iris", "depolarizing": 0.1}, "quantum"),
    ({"dataset": "iris", "model": "hybrid"}, "hybrid"),
])
def test_model_by_task_family(kwargs, model):
    assert resolve_model(TrainConfig(**kwargs)) == model


def test_neuron_refusals_name_the_flag():
    with pytest.raises(ValueError, match=re.escape("does not support --credit 'adaptive'")):
        resolve_model(TrainConfig(dataset="iris", model="neuron", credit="adaptive"))
    with pytest.raises(ValueError, match=re.escape("does not support --layers 3")):
        resolve_model(TrainConfig(dataset="iris", model="neuron", layers=3))
    # what a neuron run records (layers 1, qubits = outputs) runs again as given
    assert resolve_model(TrainConfig(dataset="iris", model="neuron", layers=1)) == "neuron"
    with pytest.raises(ValueError, match=re.escape("`model` must be 'auto', 'quantum'")):
        resolve_model(TrainConfig(model="classical"))
    neuron = TrainConfig(dataset="iris", model="neuron")
    with pytest.raises(ValueError, match=re.escape("one qubit per output). Found qubits=4; "
                                                   "leave --qubits at 'auto', or pass --model "
                                                   "quantum")):
        resolve_settings(dataclasses.replace(neuron, qubits=4), "neuron", n_train=100,
                         n_classes=3)
    with pytest.raises(ValueError, match=re.escape("`max_grad_norm`='public' bounds")):
        resolve_settings(dataclasses.replace(neuron, max_grad_norm="public"), "neuron",
                         n_train=100, n_classes=3)


def test_settings_per_family_and_user_values_kept():
    flagship = resolve_settings(TrainConfig(), "quantum", n_train=270, n_classes=2)
    assert (flagship.qubits, flagship.layers, flagship.lr, flagship.epochs,
            flagship.expected_batch_size, flagship.loss, flagship.max_grad_norm) == (
        4, 2, 0.2, 10, 64, "linear", "public")
    hybrid = resolve_settings(TrainConfig(dataset="iris", model="hybrid"), "hybrid",
                              n_train=112, n_classes=3)
    assert (hybrid.loss, hybrid.max_grad_norm) == ("cross_entropy", "certified")
    credit = resolve_settings(TrainConfig(credit="adaptive"), "quantum", n_train=270,
                              n_classes=2)
    assert credit.max_grad_norm == "certified"
    binary = resolve_settings(TrainConfig(dataset="breast_cancer"), "neuron", n_train=426,
                              n_classes=2)
    assert (binary.qubits, binary.loss, binary.logit_scale, binary.max_grad_norm, binary.lr,
            binary.epochs, binary.expected_batch_size, binary.input_center) == (
        1, "logistic", 20.0, 0.3, 0.25, 20, 64, 1.0)
    large = resolve_settings(TrainConfig(dataset="digits", classes="all"), "neuron",
                             n_train=1347, n_classes=10)
    assert (large.qubits, large.loss, large.max_grad_norm, large.epochs,
            large.expected_batch_size) == (10, "cross_entropy", 1.0, 8, 128)
    plain = resolve_settings(TrainConfig(dataset="breast_cancer", epsilon=math.inf), "neuron",
                             n_train=426, n_classes=2)
    assert (plain.lr, plain.epochs, plain.expected_batch_size, plain.logit_scale,
            plain.input_center) == (0.01, 40, 32, 10.0, 1.0)
    # the centre 1.0 ships with breast cancer's ranges only
    for config in (TrainConfig(dataset="iris", classes=(1, 2)),
                   TrainConfig(dataset="breast_cancer", feature_range=(0.0, 5000.0)),
                   TrainConfig(dataset="breast_cancer", preprocessing="standardize_pca"),
                   TrainConfig(dataset="csv", csv_path="x.csv", label_column="y",
                               classes=("a", "b"))):
        other = resolve_settings(config, "neuron", n_train=75, n_classes=2)
        assert (other.input_center, other.lr, other.logit_scale) == (math.pi / 2, 0.25, 20.0)
    plain_k = resolve_settings(TrainConfig(dataset="wine", epsilon=math.inf), "neuron",
                               n_train=133, n_classes=3)
    assert (plain_k.lr, plain_k.epochs, plain_k.expected_batch_size,
            plain_k.input_center) == (0.03, 20, 32, math.pi / 2)
    quantum = resolve_settings(TrainConfig(), "quantum", n_train=270, n_classes=2)
    assert quantum.input_center == "auto"  # not a setting of the quantum model
    mine = resolve_settings(TrainConfig(dataset="wine", lr=0.05, epochs=3, max_grad_norm=2.0),
                            "neuron", n_train=133, n_classes=3)
    assert (mine.lr, mine.epochs, mine.max_grad_norm, mine.expected_batch_size) == (
        0.05, 3, 2.0, 64)


@pytest.mark.parametrize("center", [math.pi / 2, 1.0, -0.3])
def test_neuron_outputs_closed_form(center):
    kwargs = {} if center == math.pi / 2 else {"input_center": center}
    model = QuantumNeuronClassifier(3, 3, shots=None, init_scale=0.5, init_seed=4, **kwargs)
    with torch.no_grad():
        model.pre.weight.copy_(torch.randn(3, 3, generator=torch.Generator().manual_seed(0)))
        model.pre.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))
    x = torch.rand(5, 3, dtype=torch.float64) * math.pi
    with torch.no_grad():
        # a = W (x - c) + b, computed here without the module's own layer
        a = (x - center) @ model.pre.weight.T.double() + model.pre.bias.double()
        got = model(x)
    for q, layer in enumerate(model.qlayers):
        phi, theta, _ = (float(v) for v in layer.weights)
        want = math.cos(theta) * torch.cos(a[:, q]) - math.sin(theta) * math.cos(phi) * \
            torch.sin(a[:, q])
        torch.testing.assert_close(got[:, q], want, atol=1e-6, rtol=0)
    single = QuantumNeuronClassifier(3, 2, shots=None)
    assert single(x).shape == (5,) and single(x[0]).shape == ()
    assert model(x[0]).shape == (3,) and model.predict(x).shape == (5,)


@pytest.mark.parametrize("n_classes", [2, 4])
def test_neuron_per_example_gradients_match_backprop_one_at_a_time(n_classes):
    """Opacus + the product's grad sampler on the neuron model = autograd example by example."""
    from pennylane_qshiftdp import make_private
    from pennylane_qshiftdp.losses import LogisticLoss, SoftmaxCrossEntropyLoss

    gen = torch.Generator().manual_seed(1)
    x = torch.rand(6, 5, generator=gen, dtype=torch.float64) * math.pi
    y = (torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0, -1.0]) if n_classes == 2
         else torch.tensor([0, 1, 2, 3, 1, 0], dtype=torch.float64))
    loss = LogisticLoss(10.0) if n_classes == 2 else SoftmaxCrossEntropyLoss(5.0)

    def fresh():
        m = QuantumNeuronClassifier(5, n_classes, shots=None, init_scale=0.3, init_seed=2)
        with torch.no_grad():
            m.pre.weight.copy_(0.2 * torch.randn(m.pre.weight.shape, generator=gen,
                                                 dtype=torch.float64))
        return m

    reference = fresh()
    state = {k: v.clone() for k, v in reference.state_dict().items()}
    expected = []
    for i in range(len(x)):
        reference.zero_grad()
        loss(reference(x[i:i + 1]), y[i:i + 1]).sum().backward()
        expected.append(torch.cat([p.grad.reshape(-1).double()
                                   for p in reference.parameters()]))
    model = fresh()
    model.load_state_dict(state)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=6)
    pmodel, opt, _ = make_private(model, torch.optim.SGD(model.parameters(), lr=0.1), loader,
                                  target_epsilon=1.0, target_delta=1e-5, epochs=1,
                                  max_grad_norm=100.0, seed=0)
    loss(pmodel(x), y).mean().backward()  # loss_reduction="mean": Opacus rescales by B
    got = torch.cat([p.grad_sample.reshape(len(x), -1).double()
                     for p in model.parameters()], dim=1)
    torch.testing.assert_close(got, torch.stack(expected), atol=1e-9, rtol=1e-9)


def test_default_run_on_breast_cancer_learns_and_records_its_settings(tmp_path):
    import json

    from pennylane_qshiftdp.app.job import train

    r = train(TrainConfig(dataset="breast_cancer", seed=0, secure_mode=False,
                          output_dir=str(tmp_path)), progress=False)
    assert r.settings == {"model": "neuron", "qubits": 1, "layers": 1, "lr": 0.25, "epochs": 20,
                          "expected_batch_size": 64, "loss": "logistic", "logit_scale": 20.0,
                          "input_center": 1.0, "max_grad_norm": 0.3}
    assert r.epsilon <= 1.0 and r.majority_warning is None
    # the majority class is 0.63 of the test split; a linear DP-SGD model scores about 0.94
    assert r.test_accuracy >= 0.88 and r.test_balanced_accuracy >= 0.85
    assert r.weights.shape == (30 + 1 + 3,)
    ledger = json.loads((tmp_path / "ledger.json").read_text())
    assert ledger["extra"]["provenance"]["settings"] == r.settings
    assert "fixed clip norm C = 0.3 (DP-SGD)" in r.statement
    # all 30 columns from the shipped (published) ranges: data-independent, raw data covered
    assert "Preprocessing: 30 features: each column scaled from its shipped default ranges" \
        in r.statement and "raw data included" in r.statement


def test_cli_prints_the_resolved_settings(tmp_path, capsys):
    from pennylane_qshiftdp.app.cli import main

    assert main(["train", "--dataset", "wine", "--epochs", "1", "--no-progress",
                 "--seeded-noise", "--output-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert ("settings: --model neuron, --qubits 3, --layers 1, --lr 0.3, --epochs 1, "
            "--batch-size 64, --loss cross_entropy, --logit-scale 5.0, --input-center "
            f"{math.pi / 2}, --max-grad-norm 1.0") in out
    statement = (tmp_path / "privacy_statement.txt").read_text(encoding="utf-8")
    assert "13 features: each column scaled from its shipped default ranges" in statement


def test_reported_settings_run_again_and_a_neuron_run_audits(tmp_path, capsys):
    """The settings a run reports are valid settings: the same run again from them (Python),
    and `qshiftdp audit --run` re-runs a finished neuron run from its recorded settings."""
    from pennylane_qshiftdp.app.cli import main
    from pennylane_qshiftdp.app.job import train

    first = train(TrainConfig(dataset="iris", epochs=1, secure_mode=False), progress=False)
    again = train(TrainConfig(dataset="iris", secure_mode=False, **first.settings),
                  progress=False)
    assert again.settings == first.settings
    assert main(["train", "--dataset", "breast_cancer", "--epochs", "2", "--no-progress",
                 "--output-dir", str(tmp_path / "bc")]) == 0
    capsys.readouterr()
    assert main(["audit", "--run", str(tmp_path / "bc")]) == 0
    out = capsys.readouterr().out
    assert "not refuted" in out and "crashed" not in out


def test_input_center_is_the_neuron_models_and_is_checked():
    from pennylane_qshiftdp.app.checks import check_train_config

    with pytest.raises(ValueError, match=r"--input-center.*--model neuron"):
        resolve_settings(TrainConfig(input_center=1.0), "quantum", n_train=270, n_classes=2)
    # refused before any data are read, for an explicit or a resolved quantum/hybrid model
    for kwargs in ({}, {"model": "hybrid"}, {"dataset": "iris", "credit": "adaptive",
                                              "beta": 1e-3}):
        with pytest.raises(ValueError, match=r"--input-center.*--model neuron"):
            check_train_config(TrainConfig(input_center=1.0, **kwargs))
    for bad in (math.nan, math.inf, -4.0, 7.0, 1e9):
        with pytest.raises(ValueError, match=r"`input_center` must be a finite number of "
                                             r"radians in \[-pi, 2\*pi\]"):
            check_train_config(TrainConfig(dataset="iris", input_center=bad))
        with pytest.raises(ValueError, match="`input_center` must be a finite number"):
            QuantumNeuronClassifier(3, 2, shots=None, input_center=bad)
    with pytest.raises(ValueError, match="`input_center` must be 'auto' or a number"):
        check_train_config(TrainConfig(dataset="iris", input_center="middle"))
    with pytest.raises(TypeError, match="`input_center` must be a real number"):
        QuantumNeuronClassifier(3, 2, shots=None, input_center="1.0")
    mine = resolve_settings(TrainConfig(dataset="iris", input_center=0.5), "neuron",
                            n_train=112, n_classes=3)
    assert mine.input_center == 0.5
    # NumPy and torch scalars become plain floats: the checkpoint holds built-in types only
    scalars = resolve_settings(TrainConfig(dataset="iris", input_center=np.float32(0.5),
                                           lr=np.float64(0.1), logit_scale=torch.tensor(4.0),
                                           max_grad_norm=np.float64(2.0)),
                               "neuron", n_train=112, n_classes=3)
    for key in ("input_center", "lr", "logit_scale", "max_grad_norm"):
        assert type(getattr(scalars, key)) is float, key


def test_runs_recorded_before_input_center_resume_and_audit_as_they_ran(tmp_path):
    """A checkpoint without ``input_center`` (written before the setting existed): a quantum
    run resumes with the defaults (the setting does not apply to it); a neuron run was centred
    at π/2, so it resumes only with that centre given, and its audit re-runs it at π/2."""
    from pennylane_qshiftdp.app.audit_run import _read_run
    from pennylane_qshiftdp.app.job import train

    def drop_center(directory):
        ckpt = torch.load(directory / "checkpoint.pt", weights_only=True)
        del ckpt["config"]["input_center"]
        torch.save(ckpt, directory / "checkpoint.pt")

    quantum = tmp_path / "quantum"
    cfg = TrainConfig(epochs=2, secure_mode=False, output_dir=str(quantum))
    train(cfg, progress=False, stop_after_epochs=1)
    drop_center(quantum)
    assert train(cfg, progress=False, resume=True).settings["model"] == "quantum"

    neuron = tmp_path / "neuron"
    cfg = TrainConfig(dataset="iris", classes=(1, 2), epochs=2, secure_mode=False,
                      output_dir=str(neuron))
    train(cfg, progress=False, stop_after_epochs=1)
    drop_center(neuron)
    with pytest.raises(ValueError, match=r"--input-center: 1\.5707963267948966 \(interrupted "
                                         r"run\) vs 1\.0 \(now\)"):
        train(dataclasses.replace(cfg, input_center=1.0), progress=False, resume=True)
    done = train(cfg, progress=False, resume=True)
    assert done.settings["input_center"] == math.pi / 2
    drop_center(neuron)
    config, _, _ = _read_run(neuron)
    assert config.input_center == math.pi / 2


def test_a_neuron_run_recorded_without_a_centre_predicts_with_pi_over_2(tmp_path):
    """A checkpoint written before ``input_center`` existed was trained centred at π/2:
    ``load_run`` rebuilds it so, and its predictions equal the model's closed form."""
    from pennylane_qshiftdp.app.job import train
    from pennylane_qshiftdp.app.predict import load_run

    # breast cancer: "auto" would now be 1.0, so only the fallback gives π/2
    train(TrainConfig(dataset="breast_cancer", epochs=1, secure_mode=False,
                      input_center=math.pi / 2, output_dir=str(tmp_path)), progress=False)
    now = load_run(tmp_path)
    ckpt = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    del ckpt["config"]["input_center"]
    torch.save(ckpt, tmp_path / "checkpoint.pt")
    old = load_run(tmp_path)
    assert old.config.input_center == math.pi / 2
    x = torch.rand(4, 30, dtype=torch.float64) * math.pi
    with torch.no_grad():
        torch.testing.assert_close(old.model(x), now.model(x), atol=0, rtol=0)


@pytest.mark.parametrize("clip", ["public", "certified"])
def test_make_private_names_the_clip_mode_a_neuron_model_cannot_use(clip):
    from pennylane_qshiftdp import make_private

    model = QuantumNeuronClassifier(4, 3, shots=None)
    x = torch.rand(8, 4, dtype=torch.float64)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x, torch.zeros(8, dtype=torch.float64)), batch_size=4)
    with pytest.raises(ValueError, match=re.escape(f"max_grad_norm={clip!r} needs exactly one "
                                                   f"TorchLayer")):
        make_private(model, torch.optim.SGD(model.parameters(), lr=0.1), loader,
                     target_epsilon=1.0, target_delta=1e-5, epochs=1, max_grad_norm=clip)


def test_csv_label_set_read_from_data_keeps_the_fixed_feature_map_in_the_statement(tmp_path):
    """No declared classes: the label set is reported NOT protected, and the data-independent
    feature scaling that ran is still described; the first line names what is not covered."""
    import numpy as np

    from pennylane_qshiftdp.app.job import train
    from pennylane_qshiftdp.exceptions import PrivacyWarning

    rng = np.random.default_rng(0)
    path = tmp_path / "d.csv"
    rows = ["a,b,label"] + [f"{rng.uniform(-3, 3):.3f},{rng.uniform(0, 20):.3f},"
                            f"{'yes' if i % 2 else 'no'}" for i in range(60)]
    path.write_text("\n".join(rows) + "\n")
    with pytest.warns(PrivacyWarning, match="Data-dependent label set"):
        r = train(TrainConfig(dataset="csv", csv_path=str(path), label_column="label",
                              feature_range=((-3.0, 3.0), (0.0, 20.0)), epochs=1,
                              secure_mode=False), progress=False)
    lines = r.statement.splitlines()
    assert lines[0].endswith(
        "their feature values as raw data (the feature preprocessing is fixed before seeing the "
        "data); NOT for what the 'Preprocessing (NOT protected)' line lists, which was read "
        "from the training data without privacy.")
    assert any(ln.startswith("Preprocessing: 2 features: each column scaled from its declared "
                             "`feature_range`") for ln in lines), lines
    assert any(ln.startswith("Preprocessing (NOT protected): the set of classes") for ln in lines)
