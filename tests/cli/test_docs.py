"""The documentation says what the program does, and the README's examples run.

- Every command ``gradcli --help`` lists has a section in docs/commands.md, and every
  option its ``--help`` lists is named in that section (or in the section of options
  every gradient command takes, which the command's section links to).
- Every entry and alias of the function table (``gradcli functions --json``) is named
  in docs/language.md.
- Every ``gradcli ...`` line of a ```sh block of the README runs with the exit code the
  README gives it (``# exit N``, else 0), and where a ```text block follows a block of one
  command, that is its standard output.
- The README stays a README (at most 300 lines, linking every file of docs/), and every
  relative link of the README and docs/ leads to a file and heading that exist.

The truth is the installed program itself (its ``--help`` and ``functions --json``), run
as a user runs it (``tests/cli_process.py``), never a list copied into the test.
"""
import json
import re
import shlex
from pathlib import Path

import pytest

from cli_process import run

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
COMMON = "options-every-gradient-command-takes"
# Human output fixed as the README shows it: no colour, a known terminal width.
ENV = {"NO_COLOR": "1", "COLUMNS": "100"}


# ---------------------------------------------------------------------------------------
# Reading help texts and markdown
# ---------------------------------------------------------------------------------------
def help_section(text: str, title: str) -> list[str]:
    """The lines of one section of a click help text (``Options:``, ``Commands:``), up to
    the blank line that ends it (the epilog follows)."""
    lines, inside = [], False
    for line in text.splitlines():
        if not line.strip():
            inside = False
        elif not line[0].isspace():
            inside = line.strip() == title
        elif inside:
            lines.append(line)
    return lines


def option_names(help_text: str) -> set[str]:
    """Every option name of a help text: the first column of its ``Options:`` lines."""
    names = set()
    for line in help_section(help_text, "Options:"):
        if line.startswith("  -"):
            first_column = re.split(r"\s{2,}", line.strip())[0]
            names.update(re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", first_column))
    return names


def command_names(help_text: str) -> list[str]:
    return [line.split()[0] for line in help_section(help_text, "Commands:")
            if not line.startswith("   ")]


def sections(markdown: str, level: str = "## ") -> dict[str, str]:
    """Heading text -> the text under it, up to the next heading of the same level."""
    found, title, body = {}, None, []
    for line in markdown.splitlines():
        if line.startswith(level):
            if title is not None:
                found[title] = "\n".join(body)
            title, body = line[len(level):].strip(), []
        elif title is not None:
            body.append(line)
    if title is not None:
        found[title] = "\n".join(body)
    return found


def names(text: str, word: str) -> bool:
    """Whether ``word`` is named in ``text`` as a whole word (``--seed``, not ``--seeds``)."""
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation other than - and _ dropped,
    spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def fenced_blocks(markdown: str) -> list[tuple[str, list[str]]]:
    """The fenced code blocks in order: (language, lines)."""
    blocks, language, lines = [], None, []
    for line in markdown.splitlines():
        if line.startswith("```"):
            if language is None:
                language, lines = line[3:].strip(), []
            else:
                blocks.append((language, lines))
                language = None
        elif language is not None:
            lines.append(line)
    return blocks


def commands_of(block: list[str]) -> list[str]:
    """The ``gradcli ...`` commands of a shell block, continuation lines joined."""
    commands, pending = [], ""
    for line in block:
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        if pending.startswith("gradcli "):
            commands.append(pending)
        pending = ""
    return commands


def readme_examples() -> list[tuple[str, int, str | None]]:
    """(command, expected exit code, expected standard output or None) for every
    ``gradcli`` line of the README's ```sh blocks. A block of one command directly
    followed by a ```text block shows that command's standard output."""
    text = README.read_text(encoding="utf-8")
    blocks = fenced_blocks(text)
    examples = []
    for i, (language, lines) in enumerate(blocks):
        if language != "sh":
            continue
        commands = commands_of(lines)
        beneath = "```sh\n" + "\n".join(lines) + "\n```\n```text\n"
        shown = ("\n".join(blocks[i + 1][1]) if len(commands) == 1 and beneath in text
                 else None)
        for command in commands:
            code = re.search(r"#\s*exit (\d+)\s*$", command)
            examples.append((command, int(code.group(1)) if code else 0, shown))
    return examples


def trimmed(text: str) -> str:
    """Text without trailing spaces on its lines (markdown does not keep them) and
    without trailing blank lines."""
    return "\n".join(line.rstrip() for line in text.splitlines()).rstrip("\n")


# ---------------------------------------------------------------------------------------
# The program's own lists, one subprocess each
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def help_texts() -> dict[str, str]:
    """``gradcli --help`` (key "") and every command's ``--help``."""
    top = run("--help", env=ENV)
    assert top.returncode == 0, top.stderr
    texts = {"": top.stdout}
    for name in command_names(top.stdout):
        result = run(name, "--help", env=ENV)
        assert result.returncode == 0, (name, result.stderr)
        texts[name] = result.stdout
    return texts


@pytest.mark.slow
def test_every_command_and_option_is_in_commands_md(help_texts):
    commands_md = (DOCS / "commands.md").read_text(encoding="utf-8")
    by_title = sections(commands_md)
    common = by_title["Options every gradient command takes"]
    assert len(help_texts) > 10, "gradcli --help lists the commands"
    missing = [f"gradcli {option}" for option in option_names(help_texts[""])
               if not names(commands_md, option)]
    for command, text in help_texts.items():
        if not command:
            continue
        section = by_title.get(f"`gradcli {command}`")
        if section is None:
            missing.append(f"a section '## `gradcli {command}`'")
            continue
        documented = section + (common if f"#{COMMON}" in section else "")
        missing += [f"gradcli {command} {option}" for option in sorted(option_names(text))
                    if not names(documented, option)]
    assert not missing, "not documented in docs/commands.md: " + ", ".join(missing)


def test_help_parsing_finds_the_options():
    """The parser above reads click's layout: an option with a short form, a flag pair, a
    metavar that wraps onto the next line."""
    text = ("Usage: gradcli x [OPTIONS]\n\nOptions:\n"
            "  --var NAME=VALUE             A trainable variable (repeatable). VALUE: 2,\n"
            "                               --not-an-option in the description.\n"
            "  --shuffle / --no-shuffle     Shuffle.\n"
            "  --mode tape|grad|implicit|value-grad\n"
            "                               Plot the gradients.\n"
            "  -o, --output PATH.png        Write an image.\n"
            "  -h, --help                   Show this message and exit.\n\n"
            "  Example: gradcli x --var a=1\n")
    assert option_names(text) == {"--var", "--shuffle", "--no-shuffle", "--mode", "-o",
                                  "--output", "-h", "--help"}


@pytest.mark.slow
def test_every_table_entry_is_named_in_language_md():
    result = run("functions", "--json", env=ENV)
    assert result.returncode == 0, result.stderr
    entries = json.loads(result.stdout)["functions"]
    assert len(entries) > 100
    language = (DOCS / "language.md").read_text(encoding="utf-8")
    table = {name for entry in entries for name in [entry["name"], *entry["aliases"]]}
    missing = sorted(name for name in table if not names(language, name))
    assert not missing, "table entries not named in docs/language.md: " + ", ".join(missing)
    # ...and its list of functions names nothing that is not one (a renamed entry).
    start = language.index("Functions come from the table")
    paragraph = language[start:language.index("\n\n", start)]
    listed = set(re.findall(r"[A-Za-z_]\w*", " ".join(re.findall(r"`([^`]*)`", paragraph))))
    words = {"x", "y", "axis", "keepdims", "ddof", "weights", "None", "pi", "e", "inf",
             "gradcli", "functions"}
    unknown = sorted(listed - table - words)
    assert not unknown, f"docs/language.md lists {unknown}, which are not in the table"


@pytest.mark.slow
@pytest.mark.parametrize("command, code, shown", [
    pytest.param(*example, id=example[0][:70]) for example in readme_examples()])
def test_readme_example_runs(command, code, shown):
    args = shlex.split(command, comments=True)
    assert args[0] == "gradcli"
    result = run(*args[1:], env=ENV, cwd=ROOT)
    assert result.returncode == code, (command, result.stderr)
    if code == 2:
        assert result.stderr.startswith("error: ") and not result.stdout, command
    if shown is not None:
        assert trimmed(result.stdout) == trimmed(shown), command


@pytest.mark.slow
def test_readme_examples_cover_every_command(help_texts):
    """A task-first tour: every command, and grad --order and --at, has an example."""
    ran = [shlex.split(command, comments=True) for command, _, _ in readme_examples()]
    used = {args[1] for args in ran}
    assert used >= set(command_names(help_texts[""])), sorted(used)
    assert any("--order" in args for args in ran) and any("--at" in args for args in ran)
    assert sum(shown is not None for _, _, shown in readme_examples()) >= 10


def test_readme_python_example_runs():
    """The library example of the README runs and gives the numbers its comments say."""
    code = next(lines for language, lines in fenced_blocks(README.read_text(encoding="utf-8"))
                if language == "python")
    namespace: dict = {}
    exec("\n".join(code), namespace)  # the README's own example, not user input
    assert float(namespace["w1_grad"]) == 5.0
    assert [float(namespace["x1_grad"]), float(namespace["x2_grad"])] == [2.0, 3.0]
    assert float(namespace["s"]) == 31.0 and namespace["v1"] is namespace["w1"]


def test_readme_is_short_and_links_every_doc():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    for doc in sorted(DOCS.glob("*.md")):
        assert f"(docs/{doc.name}" in text, f"README does not link docs/{doc.name}"


def test_relative_links_lead_somewhere():
    broken = []
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", prose):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, fragment = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.name}: {target}")
            elif fragment and linked.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", re.sub(
                    r"```.*?```", "", linked.read_text(encoding="utf-8"), flags=re.S),
                    flags=re.M)
                if fragment not in {anchor(h) for h in headings}:
                    broken.append(f"{page.name}: {target}")
    assert not broken, "broken links: " + ", ".join(broken)
