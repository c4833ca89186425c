"""LaTeX that compiles: every `--format latex` output of the commands of the README and the docs pages
and of the bundled programs goes through pdflatex and lualatex in one document per engine, and any TeX error
fails the test. The outputs are made once per test run and shared by both engines; the pages' come from
the pages' shared runs (tests/page_runs.py), which tests/test_docs.py and tests/test_readme.py read too.
Skipped where an engine is absent (CI installs texlive-latex-base and texlive-luatex: .ci/run)."""

import json
import re
import shutil
import subprocess
import sys

import pytest
from conftest import PROGRAMS, ROOT, built_once, cli_runner, need_tool, program_machine
from page_runs import latex_variant

sys.path.insert(0, str(ROOT / "docs"))
from docgen.pages import english_pages  # noqa: E402

pytestmark = pytest.mark.latex


def _program_fragments(toym) -> list[tuple[str, str]]:
    """(what, LaTeX) for every bundled program (and its symbolic table, on the scalar machine)."""
    found = []
    for program in sorted(PROGRAMS.glob("*.asm")):
        tile = re.search(r"\bT\d+\b", program.read_text(encoding="utf-8")) is not None
        for extra in ((),) if tile else ((), ("--symbolic",)):  # symbolic values are the scalar machine's
            code, out, err = toym("run", program, "-f", "latex", *extra, *program_machine(program))
            assert code == 0, err
            found.append((f"toym run {program.name} {' '.join(extra)}", out))
    return found


def _compile(engine: str, fragments: list[tuple[str, str]], folder) -> None:
    body = []
    for i, (_, tex) in enumerate(fragments):
        (folder / f"f{i}.tex").write_text(tex, encoding="utf-8")
        body.append(f"\\typeout{{FRAGMENT {i}}}\\input{{f{i}}}\\clearpage")
    from toymachine.render.tex import FIT_PACKAGES_LINE

    # LaTeX's own commands only, but for --latex-fit fragments: their first line asks for graphicx
    fit = any(tex.startswith(FIT_PACKAGES_LINE) for _, tex in fragments)
    doc = ("\\documentclass{article}\n" + ("\\usepackage{graphicx}\n" if fit else "") + "\\begin{document}\n"
           + "\n".join(body) + "\n\\end{document}\n")
    (folder / "all.tex").write_text(doc, encoding="utf-8")
    proc = subprocess.run([engine, "-interaction=nonstopmode", "-halt-on-error", "all.tex"], cwd=folder,
                          capture_output=True, text=True, timeout=600, errors="replace")
    log = (folder / "all.log").read_text(encoding="utf-8", errors="replace") if (folder / "all.log").exists() \
        else proc.stdout
    errors = [line for line in log.splitlines() if line.startswith("!")]
    missing = [line for line in log.splitlines() if "Missing character" in line]
    if proc.returncode != 0 or errors or missing:
        at = re.findall(r"FRAGMENT (\d+)", log)
        culprit = fragments[int(at[-1])] if at else ("?", "")
        pytest.fail(f"{engine}: {errors[:5] or missing[:5]} in the output of `{culprit[0]}`:\n{culprit[1][:3000]}")


@pytest.fixture(scope="session")
def latex_fragments(tmp_path_factory, page_runs) -> list[tuple[str, str]]:
    """(what, LaTeX) for every command of the README and the English docs pages that prints a report
    (each page's shared run holds them: tests/page_runs.py), and every bundled program; made once for
    both engines and every pytest-xdist worker."""

    def build(folder):
        found = []
        for page in [ROOT / "README.md", *english_pages()]:
            run = page_runs(page)
            failed = [f"toym {step.text} exited {code}: {err[-800:]}" for step, code, _, err in run.results
                      if step.kind != "error" and step.exit_status == 0 and code != 0
                      and latex_variant(step.text) is not None]
            assert not failed, f"{page.name}: " + "\n".join(failed)
            found += run.latex
        found += _program_fragments(cli_runner())
        (folder / "fragments.json").write_text(json.dumps(found), encoding="utf-8")

    folder = built_once(tmp_path_factory, "latex-fragments", build)
    return [tuple(f) for f in json.loads((folder / "fragments.json").read_text(encoding="utf-8"))]


@pytest.mark.parametrize("engine", ["pdflatex", "lualatex"])
def test_every_latex_output_compiles(engine, latex_fragments, tmp_path):
    need_tool(shutil.which(engine), engine,
              f"apt-get install -y texlive-latex-base{' texlive-luatex' if engine == 'lualatex' else ''}")
    assert len(latex_fragments) >= 25
    assert any("--symbolic" in what and "softmax_safe" in what for what, _ in latex_fragments)
    assert any(what.startswith("toym sweep") for what, _ in latex_fragments)  # the pages' commands are in
    build = tmp_path / "build"
    build.mkdir()
    _compile(engine, latex_fragments, build)


BEAMER = "\\documentclass{beamer}\n\\begin{document}\n\\begin{frame}{The cost table}\n\\input{table.tex}\n" \
         "\\end{frame}\n\\end{document}\n"
LECTURE_SWEEP = ("sweep", "matmul", "--n", "2", "--registers", "3..6", "--schedule", "inner,outer,best", "-f", "latex")


def _overfull_in_a_beamer_frame(toym, folder, *extra: str) -> list[str]:
    code, out, err = toym(*LECTURE_SWEEP, *extra)
    assert code == 0, err
    (folder / "table.tex").write_text(out, encoding="utf-8")
    (folder / "frame.tex").write_text(BEAMER, encoding="utf-8")
    res = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "frame.tex"], cwd=folder,
                         capture_output=True, text=True, timeout=300, check=False)
    log = (folder / "frame.log").read_text(encoding="utf-8", errors="replace")
    assert res.returncode == 0, log[-3000:]
    return re.findall(r"^Overfull \\[hv]box \(([\d.]+)pt too \w+\)", log, flags=re.MULTILINE)


@pytest.mark.latex
@pytest.mark.slow
def test_latex_fit_puts_the_lecture_sweep_in_a_beamer_frame(toym, tmp_path):
    """The lecturer tutorial's cost table in a beamer frame, compiled with pdflatex: as it is, it runs off the
    slide (an overfull box); with --latex-fit, no box is overfull."""
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex not installed (CI installs TeX: .ci/run)")
    if subprocess.run(["kpsewhich", "beamer.cls"], capture_output=True, text=True, check=False).stdout.strip() == "":
        pytest.skip("beamer not installed (texlive-latex-recommended: .ci/run)")
    (tmp_path / "plain").mkdir()
    (tmp_path / "fit").mkdir()
    assert _overfull_in_a_beamer_frame(toym, tmp_path / "plain") != []
    assert _overfull_in_a_beamer_frame(toym, tmp_path / "fit", "--latex-fit") == []


def test_latex_fit_is_for_latex_only(toym):
    code, out, err = toym(*LECTURE_SWEEP[:-2], "--latex-fit")
    assert code == 2 and out == "" and "--latex-fit" in err and "--format latex" in err
