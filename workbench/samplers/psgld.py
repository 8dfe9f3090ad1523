"""Preconditioned SGLD with the RMSprop preconditioner (Li, Chen, Carlson & Carin 2016).

Seed 003, Algorithm 1 lines 7-11 (and docs/math.md §6), written in the Chen convention (docs/math.md
§1, ε = 2h), with g = ∇Ũ the (possibly stale) stochastic gradient:

    v ← β v + (1 - β) g ⊙ g,   G = diag(1 ⊘ (λ + √v)),
    θ ← θ - h (G g - Γ) + √(2h G) ξ,   ξ ~ N(0, I).

Γ is the correction term of the general SG-MCMC dynamics that seed 003 §A instantiates for
pSGLD (z = θ, H = U, W = G, Q = 0): Γ_i = Σ_j ∂G_ij/∂θ_j, here ∂G_ii/∂θ_i since G is
diagonal. What is differentiated is the preconditioner of *this* step,
G(θ) = 1/(λ + √(β v_prev + (1 - β) g(θ)²)) with the history v_prev held fixed (the only way G
depends on θ in Algorithm 1), which gives

    Γ_i = -(1 - β) κ_i G_i² g_i / √v_i,   κ_i = ∂g_i/∂θ_i,

and Γ_i = 0 where v_i = 0 (then g_i = 0 too). A sampler that only sees gradients cannot know
the curvature κ of Ũ, so ``correction=True`` asks for it as a constant ``curvature``: exact
for potentials whose Hessian is a constant multiple of the identity, as on the Gaussian mean
(κ = 1/s² for every minibatch, docs/math.md §7), an approximation elsewhere. ``correction=False``
drops Γ, as Li et al. 2016 do in practice (the term carries the factor 1 - β and is small for β
near 1). For β = 0 the preconditioner is a genuine function of θ, and without Γ the chain
targets exp(-U)/G instead of exp(-U) (stationary Fokker-Planck flux G U' p + (G p)' = 0), which
the tests use as a negative control. With stale gradients, Γ is computed from the stale
gradient like G itself: it is the correction for the point the gradient was read at.
Since |g_i|/√v_i <= 1/√(1 - β), |Γ_i| <= √(1 - β) |κ_i| G_i²; but G_i can be close to 1/λ
while v is still small, so from v₀ = 0 the first corrected steps can throw the chain far away
(seen on the Gaussian mean with λ = 10⁻⁵). With ``correction=True`` start from a settled
``initial_second_moment`` (of the size of E g²).

``adaptation_steps``: the preconditioner adapts during the first that many steps and is frozen
afterwards (None: it always adapts, as in Algorithm 1). A frozen preconditioner does not depend
on θ, so Γ = 0 there, and the chain is SGLD with the per-coordinate step h G_i: with
``adaptation_steps=0`` and ``initial_second_moment`` v₀ it is SGLD with step h/(λ + √v₀) bit for
bit (``h G`` is formed first, as SGLD's step is), which makes the linear-Gaussian oracle of
that SGLD apply.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from simulators import validation


class PSGLDState(NamedTuple):
    position: np.ndarray
    second_moment: np.ndarray  # v, the running average of squared gradients
    steps: int  # steps taken, for freezing the preconditioner after adaptation


class PSGLD:
    """pSGLD step (module docstring); first-order integrator."""

    name = "psgld"
    order = 1

    def __init__(self, step_size: float, decay: float = 0.99, regularizer: float = 1e-5,
                 correction: bool = False, curvature: float | None = None,
                 adaptation_steps: int | None = None, initial_second_moment: float = 0.0):
        self.step_size = validation.positive("step_size", step_size)
        self.decay = validation.finite("decay", decay)
        if not 0.0 <= self.decay < 1.0:
            raise validation.InvalidParameter("decay", decay, "must lie in [0, 1)")
        self.regularizer = validation.positive("regularizer", regularizer)
        if not isinstance(correction, bool):
            raise validation.InvalidParameter("correction", correction, "must be True or False")
        self.correction = correction
        if correction:
            if curvature is None:
                raise validation.InvalidParameter(
                    "curvature", curvature,
                    "must be given (the diagonal of ∇²Ũ) when correction is True")
            curvature = validation.finite("curvature", curvature)
        elif curvature is not None:
            raise validation.InvalidParameter("curvature", curvature,
                                              "is used only with correction=True")
        self.curvature = curvature
        self.adaptation_steps = (None if adaptation_steps is None else validation.integer(
            "adaptation_steps", adaptation_steps, minimum=0))
        self.initial_second_moment = validation.non_negative("initial_second_moment",
                                                             initial_second_moment)

    def init(self, position: np.ndarray, second_moment: np.ndarray | None = None) -> PSGLDState:
        position = np.array(position, dtype=float)
        if second_moment is None:
            second_moment = np.full_like(position, self.initial_second_moment)
        else:
            second_moment = np.broadcast_to(np.asarray(second_moment, dtype=float),
                                            position.shape).copy()
        return PSGLDState(position, second_moment, 0)

    def gradient_point(self, state: PSGLDState) -> np.ndarray:
        return state.position

    def position(self, state: PSGLDState) -> np.ndarray:
        return state.position

    def preconditioner(self, second_moment: np.ndarray) -> np.ndarray:
        """The diagonal of G = diag(1 ⊘ (λ + √v))."""
        return 1.0 / (self.regularizer + np.sqrt(second_moment))

    def step(self, state: PSGLDState, gradient: np.ndarray, noise: np.ndarray) -> PSGLDState:
        adapting = self.adaptation_steps is None or state.steps < self.adaptation_steps
        second_moment = state.second_moment
        if adapting:
            second_moment = self.decay * second_moment + (1.0 - self.decay) * gradient**2
        preconditioner = self.preconditioner(second_moment)
        scaled = self.step_size * preconditioner  # h G, the per-coordinate SGLD step
        drift = scaled * gradient
        if self.correction and adapting:
            drift = drift - self.step_size * self.correction_term(
                gradient, second_moment, preconditioner)
        position = state.position - drift + np.sqrt(2.0 * scaled) * noise
        return PSGLDState(position, second_moment, state.steps + 1)

    def correction_term(self, gradient: np.ndarray, second_moment: np.ndarray,
                        preconditioner: np.ndarray) -> np.ndarray:
        """Γ = -(1 - β) κ G² g / √v, zero where v = 0 (module docstring)."""
        root = np.sqrt(second_moment)
        ratio = np.divide(gradient, root, out=np.zeros_like(root), where=root > 0)
        return -(1.0 - self.decay) * self.curvature * preconditioner**2 * ratio

    def describe(self) -> dict[str, float | str]:
        description = {"sampler": self.name, "step_size": self.step_size, "decay": self.decay,
                       "regularizer": self.regularizer, "correction": int(self.correction),
                       "initial_second_moment": self.initial_second_moment}
        if self.curvature is not None:
            description["curvature"] = self.curvature
        if self.adaptation_steps is not None:
            description["adaptation_steps"] = self.adaptation_steps
        return description
