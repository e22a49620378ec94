"""The command line as a user runs it: the installed console script, in a subprocess."""
import json
import os
import subprocess
import sys

import pytest

from cli_process import COMMAND, SCRIPT

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
    assert SCRIPT is not None, (
        "pip install -e . should put gradcli beside this interpreter (the venv's bin/)")


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


@pytest.mark.slow
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


@pytest.mark.slow
def test_grad_params_by_name_and_index_agree():
    by_name = run_json("grad", *SEED, "--params", "x2")
    by_index = run_json("grad", *SEED, "--params", "1")
    assert by_name == by_index == {"mode": "grad", "gradients": [{"name": "x2", "gradient": 3.0}]}


def test_seed_program_pasted_with_variables():
    program = "w1 = Variable(2.0)\nw2 = Variable(3.0, trainable=False)\ns = w1 * x1 + w2 * x2"
    out = run_json("value-grad", program, "--arg", "x1=5", "--arg", "x2=7")
    assert out["value"] == 31.0
    assert out["gradients"] == [{"name": "w1", "gradient": 5.0}]


@pytest.mark.slow
def test_plain_output_is_bare_numbers():
    result = run("value-grad", *SEED, "--plain")
    assert result.returncode == 0
    assert result.stdout == "31.0\n5.0\n7.0\n"
    assert run("grad", *SEED, "--plain").stdout == "2.0\n3.0\n"


@pytest.mark.slow
def test_array_json_is_nested_lists_and_non_finite_are_strings():
    out = run_json("value-grad", "sum(w * w) + 0 * log(0)", "--var", "w=[[1, 2], [3, 4]]")
    assert out["value"] == "nan"
    assert out["gradients"][0]["gradient"] == [[2.0, 4.0], [6.0, 8.0]]


@pytest.mark.slow
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


@pytest.mark.slow
def test_compare_json_is_keyed_by_mode():
    out = run_json("compare", *SEED)
    assert list(out) == ["tape", "grad", "implicit", "value-grad"]
    assert "value" not in out["grad"] and "value" not in out["implicit"]
    assert out["value-grad"]["value"] == 31.0
    assert [g["name"] for g in out["grad"]["gradients"]] == ["x1", "x2"]


@pytest.mark.slow
def test_compare_reports_a_mode_that_refuses():
    out = run_json("compare", "x * x", "--arg", "x=3")
    assert "No trainable variables" in out["implicit"]["error"]
    assert out["grad"]["gradients"] == [{"name": "x", "gradient": 6.0}]


def test_functions_json_lists_the_table():
    out = run_json("functions")
    names = {f["name"] for f in out["functions"]}
    assert {"sin", "logsumexp", "matmul", "where", "softmax"} <= names
    assert any("asin" in f["aliases"] for f in out["functions"])


@pytest.mark.slow
def test_functions_human_table():
    result = run("functions")
    assert result.returncode == 0 and "tanh" in result.stdout


@pytest.mark.slow
def test_version():
    result = run("--version")
    assert result.returncode == 0 and result.stdout.startswith("gradcli ")


@pytest.mark.slow
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
    (["grad", "sin(x=x)", "--arg", "x=1"],
     "error: sin: keyword arguments are not accepted for the input 'x'; pass it by "
     "position: sin(x)\n  1 | sin(x=x)\n    |       ^\n"),
    (["value-grad", "w", "--var", "w=1", "--json", "--plain"], "together"),
])
def test_bad_input_exits_2_with_one_message_and_no_stdout(args, needle):
    result = run(*args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert needle in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("args, message", [
    (["grad", "x^2", "--arg", "x=3", "--params", ""], "--params '' names nothing"),
    (["grad", "x^2", "--arg", "x=3", "--params", ","], "--params ',' names nothing"),
    (["grad", "x^2", "--arg", "x=3", "--params", "x,"], "--params 'x,' has an empty name"),
    (["grad", "x^2", "--arg", "x=3", "--params", "", "--order", "2"],
     "--params '' names nothing"),
    (["grad", "x^2", "--arg", "x", "--params", " , ", "--at", "-"],
     "--params ' , ' names nothing"),
    (["tape", "x^2", "--arg", "x=3", "--wrt", ""], "--wrt '' names nothing"),
    (["tape", "x^2", "--var", "x=3", "--wrt", "x", "--wrt", ""], "--wrt '' names nothing"),
    (["tape", "x^2", "--arg", "x=3", "--watch", ""], "--watch '' names nothing"),
    (["compare", "x^2", "--arg", "x=3", "--params", ""], "--params '' names nothing"),
    (["compare", "x^2", "--arg", "x=3", "--wrt", ",", "--tangent", "x=1"],
     "--wrt ',' names nothing"),
    (["jacobian", "x^2", "--arg", "x=3", "--wrt", ""], "--wrt '' names nothing"),
    (["hessian", "x^2", "--arg", "x", "--wrt", "", "--at", "-"], "--wrt '' names nothing"),
    # refused before any file is read, as an unknown name is
    (["grad", "x^2", "--arg", "x=@missing.npy", "--params", ""], "--params '' names nothing"),
])
def test_an_empty_selection_is_refused_as_an_unknown_name_is(args, message):
    result = run(*args, stdin="x\n1\n")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr == f"error: {message}: give NAME[,NAME...]\n"


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


@pytest.mark.slow
def test_help_of_every_command_has_an_example():
    for command in ("tape", "grad", "implicit", "value-grad", "compare", "functions"):
        result = run(command, "--help")
        assert result.returncode == 0
        assert "Example" in result.stdout, command


@pytest.mark.slow
def test_json_and_plain_do_not_import_rich_or_sympy():
    code = ("import sys; from gradcli.cli.app import main; sys.argv = ['gradcli', "
            "'value-grad', 'w * x', '--var', 'w=1', '--arg', 'x=2', '{flag}']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('rich', 'sympy') if m in sys.modules))")
    for flag in ("--json", "--plain"):
        result = subprocess.run([sys.executable, "-c", code.format(flag=flag)],
                                capture_output=True, text=True, timeout=120)
        assert result.stdout.strip().splitlines()[-1] == "[]", (flag, result.stdout)


@pytest.mark.slow
def test_a_program_may_start_with_a_minus_sign():
    result = run("grad", "-x**2 + 1", "--arg", "x=3", "--plain")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "-6.0\n"


@pytest.mark.slow
def test_a_power_of_literals_that_overflows_is_refused():
    result = run("grad", "9**9**9**9 * x", "--arg", "x=1")
    assert result.returncode == 2 and result.stdout == ""
    assert "too large for a float64" in result.stderr


# ---------------------------------------------------------------------------------------
# Output: nothing read as markup, nothing cut, one number format, notes, clean exits
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_brackets_in_computed_values_print_as_written():
    result = run("grad", "log(sum(exp(z)))", "--arg", "z=[1000, 1001, 999]")
    assert "[nan, nan, nan]" in result.stdout, result.stdout
    result = run("tape", "x/0", "--arg", "x=[1, 2]", "--watch", "x")
    assert "value: [inf, inf]" in result.stdout, result.stdout


@pytest.mark.slow
def test_a_matrix_result_prints_its_rows():
    result = run("value-grad", "sum(W*W)", "--var", "W=[[1, 2], [3, -4]]")
    assert "[[ 2.0,  4.0]," in result.stdout and "[ 6.0, -8.0]]" in result.stdout


@pytest.mark.slow
def test_symbolic_formulas_with_brackets_print_as_written():
    result = run("grad", "sum(w*x)", "--arg", "w=[1, 2, 3]", "--arg", "x=2", "--symbolic",
                 env={"COLUMNS": "200"})
    assert "[x, x, x]" in result.stdout, result.stdout  # rich would read a tag [x, x, x]


@pytest.mark.slow
def test_functions_table_keeps_indexing_and_variadic_brackets():
    result = run("functions")
    assert "x[i]" in result.stdout and "[x, ...]" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("columns", ["40", "80", "200"])
def test_compare_shows_every_value_at_any_width(columns):
    result = run("compare", "w*inf", "--var", "w=1", env={"COLUMNS": columns})
    assert result.returncode == 0
    assert "…" not in result.stdout
    # tape, implicit and value-grad each give the gradient; tape and value-grad the value
    assert result.stdout.count("w: inf") == 3, result.stdout
    assert "value: inf" in result.stdout or result.stdout.count(" inf ") >= 2


@pytest.mark.slow
def test_check_table_never_elides_the_numbers_it_compares():
    result = run("grad", "3*sin(x)", "--arg", "x=1.234", "--check", env={"COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout
    assert repr(3 * __import__("math").cos(1.234)) in result.stdout, result.stdout


@pytest.mark.slow
def test_precision_gives_the_same_digits_in_table_and_plain():
    args = ["value-grad", "sum(w*[2.957324302, 1.97, 79.54])", "--var", "w=[1, 1, 1]"]
    assert run(*args, "--precision", "2", "--plain").stdout == "84\n3 2 80\n"
    human = run(*args, "--precision", "2").stdout
    assert "[ 3,  2, 80]" in human, human
    assert "2.957" in run("grad", "2.957324302*x", "--arg", "x=1", "--precision", "4").stdout


@pytest.mark.slow
def test_float32_results_print_float32s_shortest_form():
    args = ["value-grad", "w*2.957324302", "--var", "w=1", "--dtype", "float32"]
    assert run(*args, "--plain").stdout == "2.9573243\n2.9573243\n"
    assert run_json(*args)["value"] == 2.9573243
    human = run(*args).stdout
    assert "2.9573243" in human and "2.957324266" not in human


@pytest.mark.slow
def test_notes_go_to_stderr_in_plain_mode_and_into_json():
    args = ["tape", "x*2", "--arg", "x=1"]
    result = run(*args, "--plain")
    assert result.stdout == "2.0\n"
    assert "note: the tape watched nothing" in result.stderr
    assert "the tape watched nothing" in run_json(*args)["notes"][0]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["tape", "grad", "implicit", "value-grad"])
def test_a_non_scalar_target_is_noted_in_every_mode(mode):
    out = run_json(mode, "softmax(w*x)", "--var", "w=[1, 2]", "--arg", "x=[3, 4]",
                   "--watch", "x") if mode == "tape" else run_json(
        mode, "softmax(w*x)", "--var", "w=[1, 2]", "--arg", "x=[3, 4]")
    assert "the target is not a scalar (shape (2,)): gradients are of its sum" in out["notes"]


def test_a_full_output_is_one_line_and_exit_2():
    with open("/dev/full", "w") as full:
        result = subprocess.run(COMMAND + ["grad", "x^2", "--arg", "x=1"], stdout=full,
                                stderr=subprocess.PIPE, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr == "error: cannot write the output: No space left on device\n"


@pytest.mark.slow
def test_a_closed_pipe_ends_quietly_with_141():
    for args in (["functions"], ["value-grad", *SEED, "--json"], ["grad", *SEED, "--plain"]):
        process = subprocess.Popen(COMMAND + args, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
        process.stdout.close()  # the reader is gone before gradcli writes (`| head -0`)
        assert process.wait(timeout=120) == 141, args
        assert process.stderr.read() == b"", args


@pytest.mark.slow
@pytest.mark.parametrize("module", ["numpy", "typer", "rich.table"])
def test_ctrl_c_during_the_imports_exits_130_without_traceback(module):
    # a KeyboardInterrupt raised exactly where the import of `module` starts (a matrix
    # gradient: scalars and vectors are printed without rich when the output is not a
    # terminal, io/writers/page.py)
    code = ("import sys\n"
            "class Interrupt:\n"
            "    def find_spec(self, name, *args):\n"
            f"        if name == {module!r}: raise KeyboardInterrupt\n"
            "sys.meta_path.insert(0, Interrupt())\n"
            "sys.argv = ['gradcli', 'grad', 'x^2', '--arg', 'x=[[1, 2], [3, 4]]']\n"
            "from gradcli.cli.app import main\n"
            "main()\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 130, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_ctrl_c_during_a_computation_exits_130_without_traceback():
    import signal
    import time
    # the check's sympy work on 144 elements takes seconds: the signal lands during it
    process = subprocess.Popen(
        COMMAND + ["grad", "sum(tanh(W @ x)**3 * sin(W @ x))", "--arg", "W=ones((12, 12))",
                   "--arg", "x=ones(12)", "--check", "--check-timeout", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "Traceback" not in err


@pytest.mark.slow
def test_an_option_typo_is_named_with_a_suggestion():
    result = run("grad", "sin(x)", "--arg", "x=1", "--chek")
    assert result.returncode == 2 and result.stdout == ""
    assert "no such option --chek (did you mean --check?)" in result.stderr
    result = run("--versoin")
    assert result.returncode == 2
    assert "no such option --versoin (did you mean --version?)" in result.stderr


@pytest.mark.slow
def test_dash_h_is_help_everywhere():
    for args in (["-h"], ["grad", "-h"], ["compare", "-h"], ["functions", "-h"]):
        result = run(*args)
        assert result.returncode == 0 and "Usage" in result.stdout, args


def test_an_option_value_may_look_like_an_option():
    result = run("grad", "-sinh(x)", "--arg", "x=0", "--plain")
    assert result.stdout == "-1.0\n", result.stderr


@pytest.mark.slow
def test_compare_accepts_check_and_symbolic():
    out = run_json("compare", *SEED, "--check", "--symbolic")
    for mode in ("tape", "grad", "implicit", "value-grad"):
        assert out[mode]["check"]["passed"] is True
        assert out[mode]["check"]["gradients"][0]["status"] == "ok"
    assert out["grad"]["gradients"][0]["symbolic"] == "w1"
    human = run("compare", *SEED, "--check", "--symbolic", env={"COLUMNS": "120"})
    assert human.returncode == 0 and "cross-check of grad" in human.stdout
    assert "symbolic: w1" in human.stdout


@pytest.mark.slow
def test_a_large_array_prints_a_summary_quickly():
    program = "sum(w)"
    shape = "(" + ", ".join(["2"] * 20) + ")"
    result = run("grad", program, "--arg", f"w=ones({shape})", "--plain")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "1.0 1.0 1.0 ... 1.0 1.0 1.0\n"
    assert "1048576 elements" in result.stderr
    human = run("grad", program, "--arg", f"w=ones({shape})")
    assert "1048576" in human.stdout.split() and "flattened:" in human.stdout
