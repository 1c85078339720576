"""What the plots of a run show (issue 35): labelled axes, nothing drawn that was not collected,
and the noise relative to the clip norm."""

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from pennylane_qshiftdp.app.outputs import diagnostics_figure, noise_figure  # noqa: E402


def _records(credit="none", steps=6):
    out = []
    for t in range(1, steps + 1):
        clip = 1.6 if t <= 3 else 1.2  # a public clip norm that shrinks
        sigma = 3.0
        shot = None if credit == "none" else 0.02 * t
        out.append({"step": t, "credit_mode": credit, "proven_noise_multiplier": sigma,
                    "credited_noise_multiplier": sigma * (1.0 if credit == "none" else 1.01),
                    "clip_norm": clip, "clipped_fraction": 0.1 * (t % 2),
                    "shot_variance_estimate_mean": shot,
                    "shot_variance_lower_bound_mean": None if shot is None else shot / 2,
                    "credited_variance_mean": 0.0 if credit == "none" else 0.01,
                    "target_variance": (sigma * clip) ** 2,
                    "artificial_variance_mean": (sigma * clip) ** 2,
                    "gradient_snr": 1.0, "epsilon": 0.1 * t, "credited_epsilon": 0.1 * t})
    return out


def _texts(ax):
    return " ".join(t.get_text() for t in ax.texts)


def test_without_a_credit_mode_nothing_uncollected_is_drawn_as_zero():
    fig = diagnostics_figure(_records("none"), plt)
    ax = {a.get_title(): a for a in fig.axes}
    shot = ax["shot-noise variance per coordinate (mean)"]
    assert len(shot.lines) == 0 and "not collected" in _texts(shot)
    credited = ax["credited share of σ²C² (%)"]
    assert len(credited.lines) == 0 and "nothing is credited" in _texts(credited)
    eps = ax["ε spent (nats)"]
    assert [line.get_label() for line in eps.lines] == ["proven ε"]
    plt.close(fig)


def test_clipping_panel_has_both_series_labelled_on_their_axes():
    fig = diagnostics_figure(_records("none"), plt)
    left = next(a for a in fig.axes if a.get_title() == "clipping")
    right = next(a for a in fig.axes if a is not left and a.bbox.bounds == left.bbox.bounds)
    assert left.get_ylabel() == "clip norm C" and right.get_ylabel() == "fraction clipped"
    labels = [t.get_text() for t in left.get_legend().get_texts()]
    assert labels == ["clip norm C (left axis)", "fraction of the batch clipped (right axis)"]
    plt.close(fig)


def test_with_a_credit_mode_the_shot_statistics_are_drawn():
    fig = diagnostics_figure(_records("adaptive"), plt)
    ax = {a.get_title(): a for a in fig.axes}
    shot = ax["shot-noise variance per coordinate (mean)"]
    assert [line.get_label() for line in shot.lines] == ["estimate", "lower bound"]
    assert len(ax["credited share of σ²C² (%)"].lines) == 1
    plt.close(fig)


def test_noise_plot_shows_sigma_relative_to_the_clip_and_the_absolute_std_beside_c():
    records = _records("none")
    fig = noise_figure(records, plt)
    rel, absolute = fig.axes
    assert rel.get_title() == "Noise relative to the clip: sets ε"
    proven, planned = rel.lines
    # σ_t = std / C stays at the plan while the clip shrinks: never "less noise than planned"
    assert list(proven.get_ydata()) == pytest.approx(list(planned.get_ydata()))
    assert list(proven.get_ydata()) == pytest.approx([3.0] * len(records))
    std, clip = absolute.lines
    assert std.get_label().startswith("added noise std") and clip.get_label() == "clip norm C"
    assert list(std.get_ydata()) == pytest.approx(
        [math.sqrt(r["artificial_variance_mean"]) for r in records])
    assert "never less privacy" in fig._suptitle.get_text()
    plt.close(fig)
