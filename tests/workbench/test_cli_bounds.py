"""``workbench bounds show --expression``: a user bound analysed from the command line."""

import json

from workbench.cli.main import main


def test_a_user_bound_is_shown_with_its_optimal_step_and_rate(capsys):
    assert main(["bounds", "show", "--expression", "C1/(L*h) + C2*tau^2*h^2 + C3*h^2"]) == 0
    out = capsys.readouterr().out
    assert "[user] hypothesis under test" in out
    assert "h* ∝ L^(-1/3)" in out and "L^(-2/3) at the optimal step" in out


def test_user_symbols_are_declared_with_assume(capsys):
    assert main(["bounds", "show", "--json", "--expression", "C/(n_walkers*L*h) + h",
                 "--assume", "n_walkers=positive integer"]) == 0
    record = json.loads(capsys.readouterr().out)[0]
    assert record["analysis"]["optimum"]["rate"] == "-1/2"


def test_a_refused_expression_exits_2_naming_the_piece(capsys):
    assert main(["bounds", "show", "--expression", "__import__('os')"]) == 2
    assert "__import__" in capsys.readouterr().err
    assert main(["bounds", "show", "--expression", "h", "--assume", "oops"]) == 2
    assert main(["bounds", "show", "seed001-theorem-3-mse", "--expression", "h"]) == 2
