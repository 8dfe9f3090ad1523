"""Test functions φ(θ) from expression strings: their values equal numpy's on positions of shape
(3, 4, d), every refusal names the offending piece, and they survive pickling (worker processes
receive test functions)."""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest

from bounds.expressions import FUNCTIONS, MAX_EXPONENT, BoundSyntaxError
from workbench.core.phi import TestFunction
from workbench.core.phi_expressions import components, expression_test_function

D = 4


@pytest.fixture
def positions() -> np.ndarray:
    return np.random.default_rng(20240601).normal(size=(3, 4, D))


EXPECTED = {
    "theta[0]*theta[1]": lambda t: t[..., 0] * t[..., 1],
    "theta[2]**2 - 1": lambda t: t[..., 2] ** 2 - 1,
    "theta[3]^3": lambda t: t[..., 3] ** 3,
    "exp(theta[0])": lambda t: np.exp(t[..., 0]),
    "theta[0] + 2*theta[1]": lambda t: t[..., 0] + 2 * t[..., 1],
    "-theta[1] / (1 + theta[2]**2)": lambda t: -t[..., 1] / (1 + t[..., 2] ** 2),
    "+theta[1] - -theta[3]": lambda t: t[..., 1] + t[..., 3],
    "min(theta[0], theta[1], 0.5)": lambda t: np.minimum(np.minimum(t[..., 0], t[..., 1]), 0.5),
    "max(theta[3], -theta[3])": lambda t: np.abs(t[..., 3]),
    "sqrt(abs(theta[2])) * log(2)": lambda t: np.sqrt(np.abs(t[..., 2])) * np.log(2),
    "theta[0]**-2 + 2^3": lambda t: t[..., 0] ** -2.0 + 8,
    "abs(theta[1])**(1/2)": lambda t: np.sqrt(np.abs(t[..., 1])),
    "exp(-theta[0]^2/2) * theta[0]*theta[0]*theta[1]":
        lambda t: np.exp(-t[..., 0] ** 2 / 2) * t[..., 0] * t[..., 0] * t[..., 1],
}


@pytest.mark.parametrize("text", sorted(EXPECTED))
def test_values_equal_numpy_over_leading_axes(text, positions):
    function = expression_test_function(text, D)
    values = function(positions)
    assert isinstance(function, TestFunction) and function.name == text
    assert values.shape == (3, 4, 1) and values.dtype == np.float64
    np.testing.assert_allclose(values[..., 0], EXPECTED[text](positions), rtol=1e-14)


def test_shapes_for_one_position_integer_positions_and_constants(positions):
    assert expression_test_function("theta[1]", D)(positions[0, 0]).shape == (1,)
    assert expression_test_function("theta[1]*2", D)(np.arange(D)).tolist() == [2.0]
    constant = expression_test_function("2 * 3", D)(positions)
    assert constant.shape == (3, 4, 1) and np.all(constant == 6.0)
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 4\), got \(3, 4, 3\)"):
        expression_test_function("theta[0]", D)(positions[..., :3])


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_each_function_over_arrays_computes_what_it_computes_over_floats(name, positions):
    """The array functions mirror the floating-point ones of the bound whitelist."""
    text = f"{name}(theta[0], theta[1])" if name in ("min", "max") else f"{name}(theta[0])"
    t = np.abs(positions)  # inside every function's domain
    expected = [FUNCTIONS[name](*p[:2]) if name in ("min", "max") else FUNCTIONS[name](p[0])
                for p in t.reshape(-1, D)]
    np.testing.assert_allclose(expression_test_function(text, D)(t).ravel(), expected,
                               rtol=1e-15)


def test_undefined_values_are_nan_silently():
    theta = np.array([[-1.0, 0.0], [1.0, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        logs = expression_test_function("log(theta[0])", 2)(theta)[:, 0]
        quotients = expression_test_function("theta[0] / theta[1]", 2)(theta)[:, 0]
    assert math.isnan(logs[0]) and logs[1] == 0.0
    assert quotients.tolist() == [-np.inf, np.inf]


def test_name_is_the_string_as_written_stripped():
    assert expression_test_function("  theta[0]^2 \n", D).name == "theta[0]^2"


REFUSED = [  # text, dimension, pieces the message names
    ("__import__('os')", D, ["__import__('os')", "only the functions"]),
    ("__import__('os').system('true')", D, ["__import__('os').system('true')"]),
    ("theta.__class__", D, ["theta.__class__"]),
    ("theta[0:2]", D, ["theta[0:2]", "integer index"]),
    ("theta[-1]", D, ["theta[-1]", "non-negative"]),
    ("theta[i]", D, ["theta[i]"]),
    ("theta[True]", D, ["theta[True]"]),
    ("theta[0.5]", D, ["theta[0.5]"]),
    ("x[0]", D, ["x[0]", "only theta can be indexed"]),
    ("theta[0][1]", D, ["theta[0][1]"]),
    ("theta", D, ["'theta'", "must be indexed"]),
    ("theta[0] + 2*theta", D, ["'theta'", "column 14"]),
    ("theta[0] * y", D, ["'y'", "unknown name"]),
    ("theta[0]**theta[1]", D, ["theta[1]", "exponents must be numbers"]),
    ("2^theta[1]", D, ["theta[1]", "exponents must be numbers"]),
    (f"theta[0]**{MAX_EXPONENT + 1}", D, [f"theta[0]**{MAX_EXPONENT + 1}", "exponents"]),
    ("theta[5]", 3, ["theta[5]", "5", "dimension 3"]),
    ("open('f')", D, ["open('f')"]),
    ("open(theta[0])", D, ["open(theta[0])"]),
    ("exp(x=theta[0])", D, ["exp(x=theta[0])", "positional"]),
    ("sqrt(theta[0], theta[1])", D, ["sqrt(theta[0], theta[1])", "one argument"]),
    ("min(theta[0])", D, ["min(theta[0])", "two or more"]),
    ("theta[0] % 2", D, ["theta[0] % 2", "operator"]),
    ("(lambda: theta[0])()", D, ["lambda: theta[0]"]),
    ("theta[0] if theta[1] else 0", D, ["theta[0] if theta[1] else 0"]),
    ("theta[0] + 1/0", D, ["1/0", "cannot be computed"]),
]


@pytest.mark.parametrize(("text", "dim", "pieces"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refusals_name_the_offending_piece_and_column(text, dim, pieces):
    with pytest.raises(BoundSyntaxError) as refused:
        expression_test_function(text, dim)
    message = str(refused.value)
    assert "column" in message
    for piece in pieces:
        assert piece in message


@pytest.mark.parametrize(("text", "says"), [
    ("", "non-empty"), ("   ", "non-empty"), ("theta[0] +", "not an expression"),
    ("theta[0]+" * 222 + "10", "at most 1000 characters, got 2000"),
    ("+".join(["theta[0]"] * 100), "at most 300 parts"),
])
def test_size_and_syntax_refusals(text, says):
    with pytest.raises(BoundSyntaxError, match=says):
        expression_test_function(text, D)


@pytest.mark.parametrize("dim", [0, -1, True, 2.0])
def test_dimension_must_be_a_positive_integer(dim):
    with pytest.raises(ValueError, match="positive integer"):
        expression_test_function("theta[0]", dim)


@pytest.mark.parametrize(("text", "indices"), [
    ("theta[0]*theta[1]", {0, 1}), ("theta[2]**2 - 1", {2}),
    ("exp(theta[7]) + theta[7]^2", {7}), ("min(theta[3], theta[0], 1)", {0, 3}),
    ("2 * 3", set()),
])
def test_components_are_the_indices_read_without_a_dimension(text, indices):
    assert components(text) == frozenset(indices)


@pytest.mark.parametrize("text", ["theta[-1]", "theta", "x[0]", "theta[0]**theta[1]", ""])
def test_components_refuses_what_the_builder_refuses(text):
    with pytest.raises(BoundSyntaxError):
        components(text)


def test_pickled_function_gives_the_same_values(positions):
    function = expression_test_function("theta[0]*exp(theta[2]) - max(theta[1], 0)", D)
    restored = pickle.loads(pickle.dumps(function))
    assert restored == function and restored.name == function.name
    np.testing.assert_array_equal(restored(positions), function(positions))
