"""The command line as a user runs it: the installed console script, in a subprocess."""
import json
import os
import shutil
import subprocess
import sys

import pytest

SCRIPT = shutil.which("gradcli")
COMMAND = [SCRIPT] if SCRIPT else [sys.executable, "-m", "gradcli"]
SEED = ["w1*x1 + w2*x2", "--var", "w1=2", "--var", "w2=3", "--arg", "x1=5", "--arg", "x2=7"]


def run(*args, stdin=None, env=None):
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run(COMMAND + list(args), capture_output=True, text=True, input=stdin,
                          env=full_env, timeout=120)


def run_json(*args):
    result = run(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_console_script_is_installed():
    assert SCRIPT is not None, "pip install -e . should put gradcli on PATH"


def test_value_grad_json_is_the_seed():
    assert run_json("value-grad", *SEED) == {
        "mode": "value-grad", "value": 31.0,
        "gradients": [{"name": "w1", "gradient": 5.0}, {"name": "w2", "gradient": 7.0}]}


def test_grad_json_has_the_arguments_and_no_value():
    out = run_json("grad", *SEED)
    assert "value" not in out
    assert out["gradients"] == [{"name": "x1", "gradient": 2.0}, {"name": "x2", "gradient": 3.0}]


def test_implicit_with_frozen_w1_lists_only_w2():
    args = ["w1*x1 + w2*x2", "--frozen", "w1=2", "--var", "w2=3", "--arg", "x1=5",
            "--arg", "x2=7"]
    out = run_json("implicit", *args)
    assert "value" not in out
    assert out["gradients"] == [{"name": "w2", "gradient": 7.0}]


def test_tape_wrt_w1_gives_5():
    out = run_json("tape", *SEED, "--wrt", "w1")
    assert out["value"] == 31.0
    assert out["gradients"] == [{"name": "w1", "gradient": 5.0}]


def test_tape_unwatched_argument_is_null_and_watch_fixes_it():
    assert run_json("tape", *SEED, "--wrt", "x1")["gradients"] == [{"name": "x1", "gradient": None}]
    out = run_json("tape", *SEED, "--wrt", "x1", "--watch", "x1")
    assert out["gradients"] == [{"name": "x1", "gradient": 2.0}]


def test_tape_unconnected_zero():
    out = run_json("tape", *SEED, "--wrt", "x1", "--unconnected", "zero")
    assert out["gradients"] == [{"name": "x1", "gradient": 0.0}]


def test_tape_intermediate_source():
    out = run_json("tape", "y = x * x; z = y * y", "--var", "x=3", "--wrt", "x,y")
    assert out["value"] == 81.0
    assert out["gradients"] == [{"name": "x", "gradient": 108.0}, {"name": "y", "gradient": 18.0}]


def test_tape_no_watch_accessed_watches_only_watch():
    out = run_json("tape", "x1**2 + x2**3", "--var", "x1=2", "--var", "x2=1",
                   "--no-watch-accessed", "--watch", "x2")
    assert out["gradients"] == [{"name": "x2", "gradient": 3.0}]


def test_grad_params_by_name_and_index_agree():
    by_name = run_json("grad", *SEED, "--params", "x2")
    by_index = run_json("grad", *SEED, "--params", "1")
    assert by_name == by_index == {"mode": "grad", "gradients": [{"name": "x2", "gradient": 3.0}]}


def test_seed_program_pasted_with_variables():
    program = "w1 = Variable(2.0)\nw2 = Variable(3.0, trainable=False)\ns = w1 * x1 + w2 * x2"
    out = run_json("value-grad", program, "--arg", "x1=5", "--arg", "x2=7")
    assert out["value"] == 31.0
    assert out["gradients"] == [{"name": "w1", "gradient": 5.0}]


def test_plain_output_is_bare_numbers():
    result = run("value-grad", *SEED, "--plain")
    assert result.returncode == 0
    assert result.stdout == "31.0\n5.0\n7.0\n"
    assert run("grad", *SEED, "--plain").stdout == "2.0\n3.0\n"


def test_array_json_is_nested_lists_and_non_finite_are_strings():
    out = run_json("value-grad", "sum(w * w) + 0 * log(0)", "--var", "w=[[1, 2], [3, 4]]")
    assert out["value"] == "nan"
    assert out["gradients"][0]["gradient"] == [[2.0, 4.0], [6.0, 8.0]]


def test_program_from_stdin_and_file(tmp_path):
    result = run("value-grad", "-", *SEED[1:], "--json", stdin="w1*x1 + w2*x2\n")
    assert json.loads(result.stdout)["value"] == 31.0
    path = tmp_path / "seed.grad"
    path.write_text("# the seed\nw1*x1 + w2*x2\n")
    assert run_json("value-grad", f"@{path}", *SEED[1:])["value"] == 31.0


def test_human_output_mirrors_the_pairs_without_colour_when_piped():
    result = run("value-grad", *SEED)
    assert result.returncode == 0
    assert "31.0" in result.stdout and "w1" in result.stdout and "7.0" in result.stdout
    assert "\x1b[" not in result.stdout


def test_compare_json_is_keyed_by_mode():
    out = run_json("compare", *SEED)
    assert list(out) == ["tape", "grad", "implicit", "value-grad"]
    assert "value" not in out["grad"] and "value" not in out["implicit"]
    assert out["value-grad"]["value"] == 31.0
    assert [g["name"] for g in out["grad"]["gradients"]] == ["x1", "x2"]


def test_compare_reports_a_mode_that_refuses():
    out = run_json("compare", "x * x", "--arg", "x=3")
    assert "No trainable variables" in out["implicit"]["error"]
    assert out["grad"]["gradients"] == [{"name": "x", "gradient": 6.0}]


def test_functions_json_lists_the_table():
    out = run_json("functions")
    names = {f["name"] for f in out["functions"]}
    assert {"sin", "logsumexp", "matmul", "where", "softmax"} <= names
    assert any("asin" in f["aliases"] for f in out["functions"])


def test_functions_human_table():
    result = run("functions")
    assert result.returncode == 0 and "tanh" in result.stdout


def test_version():
    result = run("--version")
    assert result.returncode == 0 and result.stdout.startswith("gradcli ")


@pytest.mark.parametrize("args,needle", [
    (["tape", "tnah(x) * 2", "--arg", "x=1"], "did you mean 'tanh'"),
    (["grad", "x +", "--arg", "x=1"], "error:"),
    (["value-grad", "x * y", "--var", "x=1"], "'y'"),
    (["implicit", "x * x", "--arg", "x=3"], "No trainable variables were accessed"),
    (["grad", "w * w", "--var", "w=3"], "--arg"),
    (["value-grad", "@/nonexistent/prog.grad", "--var", "w=1"], "no such file"),
    (["value-grad", "w @ w", "--var", "w=[[1, 2, 3], [4, 5, 6]]"], "matmul"),
    (["value-grad", "w", "--var", "w=__import__('os')"], "error:"),
    (["value-grad", "w", "--var", "1x=2"], "error:"),
    (["tape", "w * 2", "--var", "w=1", "--wrt", "v"], "unknown source 'v'"),
    (["grad", "x", "--arg", "x=1", "--params", "x,0"], "mix"),
    (["value-grad", "w", "--var", "w=1", "--json", "--plain"], "together"),
])
def test_bad_input_exits_2_with_one_message_and_no_stdout(args, needle):
    result = run(*args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert needle in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_option_is_a_usage_error():
    result = run("grad", "x", "--arg", "x=1", "--frobnicate")
    assert result.returncode == 2 and result.stdout == ""


def test_no_sympy_import_without_check():
    code = ("import sys; from gradcli.cli.app import main; sys.argv = ['gradcli', "
            "'value-grad', 'sin(w) * x', '--var', 'w=1', '--arg', 'x=2', '--json']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('SYMPY' if 'sympy' in sys.modules else 'NO-SYMPY')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.stdout.strip().endswith("NO-SYMPY"), result.stdout + result.stderr


def test_help_of_every_command_has_an_example():
    for command in ("tape", "grad", "implicit", "value-grad", "compare", "functions"):
        result = run(command, "--help")
        assert result.returncode == 0
        assert "Example" in result.stdout, command


def test_json_and_plain_do_not_import_rich_or_sympy():
    code = ("import sys; from gradcli.cli.app import main; sys.argv = ['gradcli', "
            "'value-grad', 'w * x', '--var', 'w=1', '--arg', 'x=2', '{flag}']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('rich', 'sympy') if m in sys.modules))")
    for flag in ("--json", "--plain"):
        result = subprocess.run([sys.executable, "-c", code.format(flag=flag)],
                                capture_output=True, text=True, timeout=120)
        assert result.stdout.strip().splitlines()[-1] == "[]", (flag, result.stdout)


def test_a_program_may_start_with_a_minus_sign():
    result = run("grad", "-x**2 + 1", "--arg", "x=3", "--plain")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "-6.0\n"


def test_a_power_of_literals_that_overflows_is_refused():
    result = run("grad", "9**9**9**9 * x", "--arg", "x=1")
    assert result.returncode == 2 and result.stdout == ""
    assert "too large for a float64" in result.stderr
