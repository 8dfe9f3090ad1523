"""The default figure of each check kind of a study, one PNG per kind present.

- ``oracle``: MSE of φ̂_L against L for every sweep point, with the exact MSE dashed;
- ``invariance`` and ``slope``: the judged quantity at the final checkpoint against the dim
  ``over``, with ±1.96 standard errors and the exact value;
- ``rate``: the final MSE against ``over`` on log axes, the exact MSE, and the bound's rate
  drawn through the first point;
- ``envelope``: held-out MSE against the fitted envelope's value (the claim: every point
  below the diagonal, up to its error bar).

Phase-space studies (:mod:`.phase_space_judgements`):

- ``oracle``: every comparison's measured value against its exact one, ±1.96 standard errors
  (the claim: the diagonal);
- ``rate``: the MSE at L against ``over`` on log axes for each judged slice, the exact MSE,
  and the bound's rate drawn through the first point.

Sharded studies (:mod:`.sharded_judgements`):

- ``oracle``: each chain's window average of ‖θ - μ‖² (mean over replicates) against its exact
  value given the chain's schedule, one colour per point and estimator (the claim: the diagonal);
- ``stationary``, ``invariance``, ``growth``: the chains' ‖θ - μ‖² against the sweep dim, per
  estimator, with ±1.96 standard errors over chains and the exact stationary value dashed;
- ``distance``: W₂ from the samples to each reference per value of ``over``, measured (bars)
  and exact (dots), in posterior standard deviations.

Models without an oracle (:mod:`.held_out_judgements`):

- ``reference``: at every sweep point and for every test function judged, the difference of
  E φ̂_L from the reference posterior's value in units of the check's margin, with ±z·σ (the
  claim: inside ±1);
- ``envelope``: as above, the excess error over the reference mean against the envelope;
- ``slope``, ``ordering`` and ``invariance``: the variance (slope, log-log) or the mean
  (ordering, invariance) of φ̂_L at the last checkpoint against ``over``, with ±1.96 standard
  errors, per test function judged;
- ``speed-up``: the variance over replicates of φ̂_L against iterations per worker, one curve
  per worker count (seed 001 Figure 2, left: the same variance at 1/P of the iterations per
  worker is a linear speed-up), for the first test function judged, at the first value of the
  other sweep dims.

Federated rounds on a model without an oracle (:mod:`.federated_model_judgements`), every
kind: E φ̂_L of the check's test function (the held-out log-loss if it names none) against L,
one curve per estimator with ±1 standard deviation over the chains shaded, the reference
posterior's value dashed where the study keeps one (seed 002 Figure 5), at every point the
check judges.

The Gaussian mean with S servers pooled (:mod:`.pooled_judgements`): ``oracle``, the variance
of the pooled φ̂_L(θ) against L at every sweep point; ``slope`` and ``invariance``, its
variance (log-log) or bias at the last checkpoint against ``over``; the exact values dashed.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

from workbench.store.atomic import save_figure  # noqa: E402
from workbench.studies import gaussian_judgements as kinds  # noqa: E402
from workbench.studies import held_out_judgements as held_out  # noqa: E402
from workbench.studies import phase_space_judgements as phase_space  # noqa: E402
from workbench.studies import sharded_judgements as sharded  # noqa: E402
from workbench.studies.point_kinds import point_kind  # noqa: E402
from workbench.studies.schema import HELD_OUT, SHARDED  # noqa: E402


def _positive(values) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(values) & (values > 0) & (values < 1e150), values, np.nan)


def _oracle(ax, dataset: xr.Dataset, ctx: kinds.Context, options: dict) -> None:
    function = ctx.config["test_function"]
    points = kinds.sweep_points(dataset, ctx.dims)
    colours = plt.cm.viridis(np.linspace(0, 0.9, max(1, len(points))))
    for point, colour in zip(points, colours, strict=True):
        at = dataset.sel(point).sel(test_function=function)
        if "component" in at.dims:  # a protocol point (seed 003) has one coordinate
            at = at.sum("component", min_count=1)
        iterations = dataset["iterations"].sel(point).values
        ax.plot(iterations, _positive(at["mse"]), color=colour, label=kinds.point_label(point))
        ax.plot(iterations, _positive(at["exact_mse"]), color=colour, linestyle="--")
    ax.set(xscale="log", yscale="log", xlabel="samples L", ylabel=f"MSE of φ̂({function})",
           title="measured (solid) and exact (dashed) MSE")
    ax.legend(fontsize=7)


def _against(ax, dataset: xr.Dataset, ctx: kinds.Context, options: dict, kind: str) -> None:
    function = options.get("test_function") or ctx.config["test_function"]
    over = options["over"]
    quantity, error, exact = (("variance", "variance_se", "exact_variance") if kind == "slope"
                              else ("mse", "mse_se", "exact_mse"))
    for suffix, _, data in kinds.rate_slices(dataset, ctx.dims, over, options.get("where", {})):
        fin = kinds.final(data).sel(test_function=function)
        _measured_and_exact(ax, data[over].values, fin[quantity].sum("component").values,
                            np.sqrt((fin[error] ** 2).sum("component")).values,
                            fin[exact].sum("component"), suffix, ctx, options, kind)
    ax.set(xscale="log", yscale="log", xlabel=over,
           ylabel=f"{quantity} of φ̂({function}) at the last checkpoint", title=kind)
    ax.legend(fontsize=7)


def _measured_and_exact(ax, x, y, error, exact, suffix: str, ctx: kinds.Context,
                        options: dict, kind: str) -> None:
    """One slice of ``_against`` or a phase-space rate: measured ±1.96 errors, exact dashed,
    and for a rate the bound's exponent through the first point."""
    line = ax.errorbar(x, _positive(y), yerr=1.96 * error, marker="o", capsize=3,
                       label=f"measured{suffix}")
    ax.plot(x, _positive(exact), linestyle="--", color=line[0].get_color(),
            label=f"exact{suffix}")
    if kind == "rate":
        spec = ctx.bounds[options["bound"]]
        rate = options.get("expected", kinds.bound_rate(spec.bound, spec.fixed)[0])
        ax.plot(x, y[0] * (x / x[0]) ** rate, linestyle=":", color="grey",
                label=f"L^({rate:.3g})")


def phase_space_panel(ax, kind: str, dataset: xr.Dataset, ctx: kinds.Context,
                      options: dict) -> None:
    if kind == "oracle":
        for function, quantity, _ in phase_space.COMPARISONS:
            at = dataset.sel(test_function=function)
            ax.errorbar(at[f"exact_{quantity}"].values.ravel(), at[quantity].values.ravel(),
                        yerr=1.96 * at[f"{quantity}_se"].values.ravel(), fmt="o", capsize=3,
                        label=f"{quantity} of φ̂({function})")
        low, high = ax.get_xlim()
        ax.plot([low, high], [low, high], linestyle=":", color="grey")
        ax.set(xlabel="exact", ylabel="measured", title="oracle (the claim: the diagonal)")
        ax.legend(fontsize=7)
        return
    function = options.get("test_function") or ctx.config["test_function"]
    over = options["over"]
    for suffix, _, data in kinds.rate_slices(dataset, ctx.dims, over, options["where"]):
        at = data.sel(test_function=function)
        _measured_and_exact(ax, data[over].values, at["mse"].values, at["mse_se"].values,
                            at["exact_mse"], suffix, ctx, options, kind)
    ax.set(xscale="log", yscale="log", xlabel=over, ylabel=f"MSE of φ̂({function}) at L",
           title=kind)
    ax.legend(fontsize=7)


def _envelope(ax, dataset: xr.Dataset, ctx: kinds.Context, options: dict) -> None:
    if ctx.config["model"] in HELD_OUT:
        function = held_out.functions_judged(dataset, options.get("test_function"))[0]
        fit = held_out.envelope_fit(dataset, ctx, options, function)
        quantity = "excess error over the reference"
    else:
        function = options.get("test_function") or ctx.config["test_function"]
        fit = kinds.envelope_fit(dataset, ctx, {**options, "test_function": function})
        quantity = "MSE"
    if np.all(np.isfinite(fit.envelope.coefficients)):
        predicted = fit.envelope(fit.values).broadcast_like(fit.observed)
        for mask, label in ((~fit.held_out, "calibration"), (fit.held_out, "held out")):
            ax.errorbar(predicted.where(mask).values.ravel(),
                        fit.observed.where(mask).values.ravel(),
                        yerr=1.96 * fit.errors.where(mask).values.ravel(), fmt="o",
                        markersize=3, label=label)
        low = float(np.nanmin(_positive(fit.observed)))
        high = float(np.nanmax(_positive(predicted)))
        ax.plot([low, high], [low, high], color="grey", linestyle="--", label="envelope")
    ax.set(xscale="log", yscale="log", xlabel="fitted envelope",
           ylabel=f"measured {quantity} of φ̂({function})",
           title=f"envelope of {options['bound']}")
    ax.legend(fontsize=7)


def _window_oracle(ax, dataset: xr.Dataset, ctx: kinds.Context, options: dict) -> None:
    chosen = sharded.selections(dataset, ctx.dims, ctx.symbols)
    colours = plt.cm.viridis(np.linspace(0, 0.9, max(1, len(chosen))))
    for (label, selection), colour in zip(chosen, colours, strict=True):
        measured = sharded.chain_values(dataset, selection).mean(axis=0)
        exact = sharded.about_posterior(dataset, "exact_").sel(selection).sum(
            "component").values
        ax.plot(exact, measured, "o", markersize=3, color=colour, label=label)
    low, high = ax.get_xlim()
    ax.plot([low, high], [low, high], color="grey", linestyle="--")
    ax.set(xlabel="exact window ‖θ - μ‖² given the schedule",
           ylabel="measured (mean over replicates)", title="one point per chain")
    ax.legend(fontsize=7)


def _posterior(ax, dataset: xr.Dataset, ctx: kinds.Context) -> None:
    """Every point's window E‖θ - μ‖² in units of d·s² (1 is the posterior's), with its 95 %
    interval over its units and the exact oracle's value."""
    chosen = sharded.selections(dataset, ctx.dims, ctx.symbols)
    scale = float(dataset["posterior_variance"]) * dataset.sizes["component"]
    for x, (_, selection) in enumerate(chosen):
        values = sharded.chain_values(dataset, selection).ravel() / scale
        exact = sharded.about_posterior(dataset, "exact_").sel(selection).sum(
            "component").values.mean() / scale
        ax.errorbar([x], [values.mean()], yerr=[1.96 * values.std(ddof=1) / np.sqrt(values.size)],
                    fmt="o", capsize=3, color="tab:blue")
        ax.plot([x], [exact], "k_", markersize=14)
    ax.axhline(1.0, color="tab:red", linewidth=1)
    ax.set_xticks(np.arange(len(chosen)), [label for label, _ in chosen], fontsize=8)
    ax.set(ylabel="window E‖θ - μ‖² / (d s²)",
           title="against the posterior (red; black: exact oracle)")


def _gradient_noise(ax, dataset: xr.Dataset, ctx: kinds.Context) -> None:
    """Every point's mean ‖ĝ - ∇U(μ)‖² and its minibatch part, with 95 % intervals over the
    draws, and their exact values (docs/math.md §11.2)."""
    chosen = sharded.points(dataset, ctx.dims)
    labels = [sharded.label(point, ctx.symbols) for point in chosen]
    for name, marker in (("gradient_error", "o"), ("gradient_minibatch_error", "s")):
        values = [dataset[name].sel(point).values for point in chosen]
        ax.errorbar(np.arange(len(chosen)), [v.mean() for v in values],
                    yerr=[1.96 * v.std(ddof=1) / np.sqrt(v.size) for v in values], fmt=marker,
                    capsize=3, label=name.replace("_", " "))
        ax.plot(np.arange(len(chosen)),
                [float(dataset[f"exact_{name}"].sel(point)) for point in chosen], "k_",
                markersize=14)
    ax.set_xticks(np.arange(len(chosen)), labels, fontsize=8)
    ax.set(yscale="log", ylabel="E‖ĝ - ∇U(μ)‖² at θ = μ", title="gradient noise (black: exact)")
    ax.legend(fontsize=7)


def _stationary(ax, dataset: xr.Dataset, ctx: kinds.Context, options: dict, kind: str) -> None:
    over = options.get("over", ctx.dims[0] if ctx.dims else None)
    if over is None:
        return
    methods = options.get("estimator")
    for method in [methods] if methods else dataset["estimator"].values.tolist():
        for suffix, rest in sharded.slices(dataset, ctx.dims, over, ctx.symbols):
            x = dataset[over].values
            per_chain = [sharded.chain_values(dataset, {**rest, over: v, "estimator": method})
                         .mean(axis=0) for v in x.tolist()]
            y = np.array([v.mean() for v in per_chain])
            e = np.array([v.std(ddof=1) / np.sqrt(v.size) for v in per_chain])
            line = ax.errorbar(x, y, yerr=1.96 * e, marker="o", capsize=3,
                               label=f"{method}{suffix}")
            exact = dataset["stationary_second_moment"].sel(rest).sel(estimator=method).sum(
                "component", skipna=False)
            ax.plot(x, exact.values, linestyle="--", color=line[0].get_color())
    ax.set(xscale="log", xlabel=over, ylabel="window ‖θ - μ‖² (dashed: exact stationary)",
           title=kind)
    ax.legend(fontsize=7)


def _distance(ax, dataset: xr.Dataset, ctx: kinds.Context, options: dict) -> None:
    over = options["over"]
    names = dataset["reference"].values.tolist()
    groups = [(f"{sharded.label({over: value}, ctx.symbols)}{suffix}", {**rest, over: value})
              for suffix, rest in sharded.slices(dataset, ctx.dims, over, ctx.symbols)
              for value in dataset[over].values.tolist()]
    sd = float(np.sqrt(dataset["posterior_variance"]))
    width = 0.8 / len(groups)
    for i, (label, at) in enumerate(groups):
        measured = sharded.distances(dataset, at)
        exact = sharded.distances(dataset, at, "exact_")
        x = np.arange(len(names)) + (i - (len(groups) - 1) / 2) * width
        ax.bar(x, [measured[n] / sd for n in names], width, label=label)
        ax.plot(x, [exact[n] / sd for n in names], "k.", markersize=8)
    ax.set_xticks(np.arange(len(names)), [n.replace("_", " ") for n in names], fontsize=8)
    ax.set(ylabel="W₂ from the samples, in posterior sd", title="distance (dots: exact)")
    ax.legend(fontsize=7)


def _reference(ax, dataset: xr.Dataset, ctx: kinds.Context, options: dict) -> None:
    verdicts = held_out.reference_checks(dataset, ctx, options)
    labels = sorted({v.evidence["test_function"] for v in verdicts}, key=str)
    points = [kinds.point_label(p) or "the point" for p in kinds.sweep_points(dataset, ctx.dims)]
    width = 0.8 / max(1, len(labels))
    for i, label in enumerate(labels):
        chosen = [v for v in verdicts if v.evidence["test_function"] == label]
        x = np.arange(len(chosen)) + (i - (len(labels) - 1) / 2) * width
        ax.errorbar(x, [v.difference / v.margin for v in chosen],
                    yerr=[v.z_threshold * v.mc_error / v.margin for v in chosen], fmt="o",
                    capsize=3, label=label)
    for level in (-1, 1):
        ax.axhline(level, color="grey", linestyle="--")
    ax.axhline(0, color="black", linewidth=0.5)
    ax.set_xticks(np.arange(len(points)), points, fontsize=8)
    ax.set(ylabel="(E φ̂_L − reference) / margin", title="against the reference posterior")
    ax.legend(fontsize=7)


def _speedup(ax, dataset: xr.Dataset, ctx: kinds.Context, options: dict) -> None:
    function = held_out.functions_judged(dataset, options.get("test_function"))[0]
    over = options["over"]
    suffix, data = next(kinds.point_slices(dataset, ctx.dims, over))
    curves = data.sel(test_function=function)
    for workers in curves[over].values.tolist():
        at = curves.sel({over: workers})
        ax.errorbar(at["iterations_per_worker"].values, _positive(at["variance"]),
                    yerr=1.96 * at["variance_se"].values, marker="o", markersize=3, capsize=2,
                    label=f"P = {workers}")
    ax.set(xscale="log", yscale="log", xlabel="iterations per worker",
           ylabel=f"variance of φ̂({function})", title=f"speed-up{suffix}")
    ax.legend(fontsize=7)


def _held_out_against(ax, dataset: xr.Dataset, ctx: kinds.Context, options: dict,
                      kind: str) -> None:
    over = options["over"]
    quantity, error = ("variance", "variance_se") if kind == "slope" else ("mean", "mean_se")
    for function in held_out.functions_judged(dataset, options.get("test_function")):
        for suffix, data in kinds.point_slices(dataset, ctx.dims, over):
            at = data.isel(checkpoint=-1).sel(test_function=function)
            ax.errorbar(data[over].values, _positive(at[quantity]),
                        yerr=1.96 * at[error].values, marker="o", capsize=3,
                        label=f"{function}{suffix}")
    ax.set(xscale="log", yscale="log" if kind == "slope" else "linear", xlabel=over,
           ylabel=f"{quantity} of φ̂_L at the last checkpoint", title=kind)
    ax.legend(fontsize=7)


def pooled_panel(ax, kind: str, dataset: xr.Dataset, ctx: kinds.Context,
                 options: dict) -> None:
    quantity = "bias" if kind == "invariance" else "variance"
    if kind == "oracle":
        for point in kinds.sweep_points(dataset, ctx.dims):
            at = dataset.sel(point)
            line = ax.plot(at["iterations"], _positive(at[quantity]),
                           label=kinds.point_label(point))
            ax.plot(at["iterations"], _positive(at[f"exact_{quantity}"]), linestyle="--",
                    color=line[0].get_color())
        xlabel = "iterations per server"
    else:
        xlabel = options["over"]
        for suffix, data in kinds.point_slices(dataset, ctx.dims, xlabel):
            at = kinds.final(data)
            line = ax.errorbar(data[xlabel].values, at[quantity].values,
                               yerr=1.96 * at[f"{quantity}_se"].values, marker="o", capsize=3,
                               label=f"measured{suffix}")
            ax.plot(data[xlabel].values, at[f"exact_{quantity}"].values, linestyle="--",
                    color=line[0].get_color(), label=f"exact{suffix}")
    ax.set(xscale="log", yscale="linear" if kind == "invariance" else "log", xlabel=xlabel,
           ylabel=f"{quantity} of the pooled φ̂_L(θ)", title=f"{kind} (exact dashed)")
    ax.legend(fontsize=7)


def mean_band(ax, x, runs: xr.DataArray, label: str) -> None:
    """The mean over replicates of ``runs`` against ``x``, with a band of ±1 sd."""
    mean, spread = runs.mean("replicate"), runs.std("replicate")
    line = ax.plot(x, mean, label=label)
    ax.fill_between(x, mean - spread, mean + spread, alpha=0.2, color=line[0].get_color())


def federated_models_panel(ax, kind: str, dataset: xr.Dataset, ctx: kinds.Context,
                           options: dict) -> None:
    function = options.get("test_function") or "log_loss"
    where = options.get("where", {})
    for point in kinds.sweep_points(dataset, ctx.dims):
        if any(point[k] != v for k, v in where.items()):
            continue
        at = dataset.sel(point).sel(test_function=function)
        for estimator in at["estimator"].values.tolist():
            mean_band(ax, at["iterations"], at["estimate"].sel(estimator=estimator),
                      "/".join([estimator, sharded.label(point, ctx.symbols)]).strip("/"))
        if "reference_mean" in at:
            ax.axhline(float(at["reference_mean"]), linestyle="--", color="black",
                       linewidth=1, label="reference" if not point else None)
    ax.set(xscale="log", xlabel="updates L after the burn-in",
           ylabel=f"E φ̂_L of {function}", title=f"{function} (±1 sd over chains)")
    ax.legend(fontsize=7)


def topic_panel(ax, kind: str, dataset: xr.Dataset, ctx: kinds.Context,
                options: dict) -> None:
    """Seed 004 Figure 3's view: held-out perplexity against simulated time per sampler (mean
    and ±1 sd over replicates), the true topics' perplexity dashed and, for a
    time-to-perplexity check, the target dotted; the cost model in the axis label."""
    where = options.get("where", {})
    for point in kinds.sweep_points(dataset, ctx.dims):
        if any(point[k] != v for k, v in where.items()):
            continue
        at = dataset.sel(point)
        for sampler in at["topic_sampler"].values.tolist():
            mean_band(ax, at["time"], at["perplexity"].sel(topic_sampler=sampler),
                  "/".join([sampler, kinds.point_label(point)]).strip("/"))
        truth = float(at["true_perplexity"])
        if np.isfinite(truth):
            ax.axhline(truth, linestyle="--", color="black", linewidth=1,
                       label="true topics" if not point else None)
        if kind == "time-to-perplexity":
            target = float(at["perplexity"].sel(topic_sampler=options["target"])
                           .isel(time=-1).max())
            ax.axhline(target, linestyle=":", color="grey", linewidth=1,
                       label=f"target ({options['target']})" if not point else None)
    attrs = dataset.attrs
    ax.set(xscale="log", ylabel="held-out perplexity",
           xlabel=("simulated time (costs: Gibbs token "
                   f"{attrs.get('cost_gibbs_token', np.nan):g}, SGRLD token "
                   f"{attrs.get('cost_sgrld_token', np.nan):g}, entry update "
                   f"{attrs.get('cost_topic_entry', np.nan):g}, message entry "
                   f"{attrs.get('cost_message_entry', np.nan):g})"),
           title=f"{kind}: perplexity against simulated time")
    ax.xaxis.label.set_fontsize(7)
    ax.legend(fontsize=7)


def _panel(ax, kind: str, dataset: xr.Dataset, ctx: kinds.Context, options: dict) -> None:
    """The panel of one check: its point kind's own (:attr:`.point_kinds.PointKind.panel`),
    else the check kind's on the study's model."""
    own = point_kind(ctx.config).panel
    if own:
        module, function = own.split(":")
        getattr(import_module(module, __package__), function)(ax, kind, dataset, ctx, options)
    elif kind == "reference":
        _reference(ax, dataset, ctx, options)
    elif kind == "speed-up":
        _speedup(ax, dataset, ctx, options)
    elif kind in ("slope", "ordering", "invariance") and ctx.config["model"] in HELD_OUT:
        _held_out_against(ax, dataset, ctx, options, kind)
    elif ctx.config["model"] == SHARDED:
        if kind == "oracle":
            _window_oracle(ax, dataset, ctx, options)
        elif kind == "distance":
            _distance(ax, dataset, ctx, options)
        elif kind == "posterior":
            _posterior(ax, dataset, ctx)
        elif kind == "gradient-noise":
            _gradient_noise(ax, dataset, ctx)
        else:
            _stationary(ax, dataset, ctx, options, kind)
    elif kind == "oracle":
        _oracle(ax, dataset, ctx, options)
    elif kind == "envelope":
        _envelope(ax, dataset, ctx, options)
    else:
        _against(ax, dataset, ctx, options, kind)


def draw(name: str, specs: Sequence, ctx: kinds.Context, dataset: xr.Dataset,
         out_dir: Path) -> list[Path]:
    """One figure per check kind of the study (module docstring)."""
    by_kind: dict[str, list] = {}
    for spec in specs:
        by_kind.setdefault(spec.kind, []).append(spec.options)
    paths = []
    for kind, entries in by_kind.items():
        fig, axes = plt.subplots(1, len(entries), figsize=(5.5 * len(entries), 4.2),
                                 constrained_layout=True, squeeze=False)
        for ax, options in zip(axes[0], entries, strict=True):
            _panel(ax, kind, dataset, ctx, options)
        fig.suptitle(f"{name}: {kind} checks")
        paths.append(save_figure(fig, out_dir / f"{name}-{kind}.png", dpi=110))
        plt.close(fig)
    return paths
