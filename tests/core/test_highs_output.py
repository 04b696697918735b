"""Standard output carries results only: nothing HiGHS prints reaches it unless asked for (issue 23).

HiGHS prints its banner once per process, to file descriptor 1, so every case runs in a fresh
child process whose descriptor 1 is pytest's ``capfd`` capture (the child inherits it).
"""

import subprocess
import sys
from pathlib import Path

BANNER = ("Running HiGHS", "Copyright")
TINY_LP = "h.addVars(2, [0.0, 0.0], [1.0, 1.0]); h.changeColsCost(2, [0, 1], [1.0, 2.0]); h.run()"


def child_stdout(code: str, capfd) -> str:
    """What a fresh interpreter running ``code`` writes to file descriptor 1."""
    capfd.readouterr()
    proc = subprocess.run([sys.executable, "-c", code], timeout=600, check=False)
    out, err = capfd.readouterr()
    assert proc.returncode == 0, err
    return out


def test_a_bare_highspy_model_prints_the_banner_on_fd_1(capfd):
    """The control: the banner exists and this capture sees it (else the tests below prove nothing)."""
    out = child_stdout(f"import highspy; h = highspy.Highs(); h.setOptionValue('output_flag', False); {TINY_LP}", capfd)
    assert all(word in out for word in BANNER)


def test_new_highs_prints_nothing_unless_the_log_is_asked_for(capfd):
    code = f"from dpmodels.core.highs import new_highs; h = new_highs(); {TINY_LP}; print('result')"
    assert child_stdout(code, capfd) == "result\n"
    code = f"from dpmodels.core.highs import new_highs; h = new_highs(log=True); {TINY_LP}"
    out = child_stdout(code, capfd)
    assert "Optimal" in out and not any(word in out for word in BANNER)  # the log asked for, not the banner


def test_solve_with_highs_prints_nothing(capfd):
    code = (
        "import pyomo.environ as pyo, dpmodels\n"
        "m = pyo.ConcreteModel(); m.x = pyo.Var(bounds=(1, 2)); m.o = pyo.Objective(expr=m.x)\n"
        "print(dpmodels.solve(m, 'highs').incumbent_objective)"
    )
    assert child_stdout(code, capfd) == "1.0\n"


def test_compare_mdp_prints_its_table_and_no_banner(capfd):
    args = ["compare", "mdp", "--set", "rows=3", "--set", "cols=3", "--set", "K=3", "--no-progress"]
    code = f"import sys; from dpmodels.cli import main; sys.exit(main({[*args, '--methods', 'full LP simplex']!r}))"
    out = child_stdout(code, capfd)
    assert "full LP simplex" in out and "Optimal" in out
    assert not any(word in out for word in BANNER)


def test_every_highs_model_of_dpmodels_comes_from_new_highs():
    """A ``highspy.Highs()`` created elsewhere would print the banner if it came first."""
    import dpmodels.instances
    import dpmodels.solvers

    roots = {Path(pkg.__file__).resolve().parent for pkg in (dpmodels, dpmodels.solvers, dpmodels.instances)}
    sources = [p for root in roots for p in root.rglob("*.py")]
    assert any(p.name == "lp.py" for p in sources)
    makers = [p for p in sources if "highspy.Highs(" in p.read_text() and p.name != "highs.py"]
    assert makers == []
