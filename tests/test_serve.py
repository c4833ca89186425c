"""``toym serve``'s HTTP API against the CLI it mirrors: the same bytes for every bundled program,
problem and a sweep; errors as the CLI's JSON error object; the limits; no path reaching open().

Skipped where Starlette (the ``serve`` extra) is not installed."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import replace

import pytest
import yaml

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from conftest import PROGRAMS, ROOT, need_tool  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from toymachine.serve.app import STATIC_FILES, create_app  # noqa: E402
from toymachine.serve.limits import LIMITS  # noqa: E402

PROBLEMS = ROOT / "examples" / "problems"
ALL_PROGRAMS = sorted(PROGRAMS.glob("*.asm"))
ALL_PROBLEMS = sorted(PROBLEMS.glob("*.yaml"))
LOCAL = "http://127.0.0.1"


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(), base_url=LOCAL) as c:
        yield c


def header_machine(text: str):
    m = re.search(r"^;\s*machine:\s*([\w-]+)", text, re.M)
    return m.group(1) if m else None


def cli_args(path, machine):
    return ["-m", machine] if machine else []


@pytest.mark.parametrize("path", ALL_PROGRAMS, ids=lambda p: p.name)
def test_run_returns_the_clis_json_byte_for_byte(client, toym, path):
    text = path.read_text(encoding="utf-8")
    machine = header_machine(text)
    code, out, _ = toym("run", path, "-f", "json", *cli_args(path, machine))
    r = client.post("/api/run", json={"trace": text, "machine": machine, "options": {"file": str(path)}})
    assert (r.status_code, r.text) == ({0: 200, 2: 422}[code], out)
    assert r.headers["content-type"].startswith("application/json")


@pytest.mark.parametrize("fmt", ["markdown", "csv", "latex", "html", "html-fragment"])
@pytest.mark.parametrize("name", ["matmul_inner_2x2.asm", "fa1_n5_d3.asm"])
def test_every_export_format_is_the_clis(client, toym, fmt, name):
    path = PROGRAMS / name
    text = path.read_text(encoding="utf-8")
    machine = header_machine(text)
    code, out, _ = toym("run", path, "-f", fmt, *cli_args(path, machine))
    assert code == 0
    r = client.post("/api/run", json={"trace": text, "machine": machine, "options": {"file": str(path), "format": fmt}})
    assert r.status_code == 200 and r.text == out


def test_options_are_the_clis_flags(client, toym, tmp_path):
    path = PROGRAMS / "softmax_safe.asm"
    text = path.read_text(encoding="utf-8")
    data = (ROOT / "examples" / "data" / "x6.yaml").read_text(encoding="utf-8")
    cases = [
        ({"registers": 9, "seed": 3, "json_fields": "cycles,dram.reads"}, ["-r", "9", "--seed", "3", "--json-fields", "cycles,dram.reads"], None),
        ({"symbolic": True, "no_memory": True}, ["--symbolic", "--no-memory"], None),
        ({"dtype": "fp16", "steps": False}, ["--dtype", "fp16", "--no-steps"], None),
        ({"memory_max": 2}, ["--memory-max", "2"], None),
        ({}, ["--data", str(ROOT / "examples" / "data" / "x6.yaml")], data),
    ]
    for opts, flags, data_text in cases:
        code, out, _ = toym("run", path, "-f", "json", *flags)
        r = client.post("/api/run", json={"trace": text, "data": data_text, "options": {"file": str(path), **opts}})
        assert code == 0 and r.status_code == 200 and r.text == out, flags
    # a machine typed as YAML is the machine file
    yaml_text = "name: mine\nregisters: 4\nword_bytes: 2\ncycles: {LOAD: 3}\n"
    (tmp_path / "mine.yaml").write_text(yaml_text, encoding="utf-8")
    code, out, _ = toym("run", path, "-f", "json", "-m", tmp_path / "mine.yaml")
    r = client.post("/api/run", json={"trace": text, "machine": {"yaml": yaml_text, "name": str(tmp_path / "mine.yaml")},
                                      "options": {"file": str(path)}})
    assert (r.status_code, r.text) == ({0: 200, 2: 422}[code], out) and '"LOAD": 3' in out


def test_an_assembly_error_is_the_clis_error_object_at_its_line(client, toym, tmp_path):
    bad = tmp_path / "bad.asm"
    bad.write_text("LOAD a[0], R0\nLOAD a[1], R1\nMULT R0, R1, R2\n", encoding="utf-8")
    code, out, _ = toym("run", bad, "-f", "json")
    r = client.post("/api/run", json={"trace": bad.read_text(), "options": {"file": str(bad)}})
    assert code == 2 and r.status_code == 422 and r.text == out
    err = r.json()["error"]
    assert (err["line"], err["column"], err["kind"]) == (3, 1, "assembly") and "MULT" in err["message"]


def test_malformed_requests_are_400_with_the_error_object(client):
    for body, words in [({}, "'trace' is required"), ({"trace": 5}, "'trace' must be a string"),
                        ({"trace": "x", "options": {"colour": 1}}, "unknown key 'colour'"),
                        ({"trace": "x", "options": {"registers": True}}, "'registers' must be a whole number"),
                        ({"trace": "x", "options": {"format": "pdf"}}, "format 'pdf'"), ([1, 2], "JSON object")]:
        r = client.post("/api/run", json=body)
        assert r.status_code == 400 and words in r.json()["error"]["message"], body
    r = client.post("/api/run", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and "not JSON" in r.json()["error"]["message"]
    r = client.post("/api/run", content=json.dumps({"trace": "x"}), headers={"content-type": "text/plain"})
    assert r.status_code == 415  # a cross-site form cannot post JSON without a preflight


@pytest.mark.parametrize("problem", ALL_PROBLEMS, ids=lambda p: p.stem)
def test_check_is_the_clis_grade(client, toym, problem):
    ref = (problem.parent / yaml.safe_load(problem.read_text(encoding="utf-8"))["reference"]).resolve()
    code, out, _ = toym("check", ref, "--problem", problem, "-f", "json")
    r = client.post("/api/check", json={"trace": ref.read_text(encoding="utf-8"), "problem": problem.stem,
                                        "options": {"file": str(ref)}})
    assert code == 0 and r.status_code == 200
    assert r.json() == {**json.loads(out), "problem_file": problem.name}  # the bundled name, not a server path
    assert r.json()["passed"] is True


def test_a_grade_shows_no_server_path(client):
    """The table and the JSON name the bundled problem by its file name: nothing of the server's folders."""
    from toymachine.serve.examples import problem_path

    folder = os.path.dirname(problem_path("p1_c00"))
    for fmt in ("table", "json", "markdown"):
        r = client.post("/api/check", json={"trace": "LOAD a[0][0], R0\nSTORE R0, c[0][0]\n", "problem": "p1_c00",
                                            "options": {"format": fmt}})
        assert r.status_code == 200 and "p1_c00.yaml" in r.text and folder not in r.text, fmt


def test_check_reports_a_wrong_trace_and_refuses_unbundled_problems(client):
    r = client.post("/api/check", json={"trace": "LOAD a[0][0], R0\nSTORE R0, c[0][0]\n", "problem": "p1_c00"})
    assert r.status_code == 200 and r.json()["passed"] is False
    for name in ("../../etc/passwd", "/etc/passwd", "p1_c00.yaml", "nope"):
        r = client.post("/api/check", json={"trace": "LOAD a[0], R0\n", "problem": name})
        assert r.status_code == 422 and "no bundled problem" in r.json()["error"]["message"]


def test_sweep_is_the_clis_and_its_size_is_bounded(client, toym):
    code, out, _ = toym("sweep", "matmul", "--n", "2", "--registers", "3..6", "--schedule", "inner,outer", "-f", "json",
                        "-j", "1")
    r = client.post("/api/sweep", json={"generator": "matmul", "params": {"n": "2", "registers": "3..6",
                                                                          "schedule": "inner,outer"}})
    assert code == 0 and r.status_code == 200 and r.text == out
    reads = [row["dram_reads"] for row in r.json()["sweep"] if row["schedule"] == "inner"]
    assert reads == sorted(reads, reverse=True) and reads[0] > reads[-1]  # more registers, fewer reads
    r = client.post("/api/sweep", json={"generator": "matmul", "params": {"n": "1..100"}})
    assert r.status_code == 422 and "limit" in r.json()["error"]["message"]
    r = client.post("/api/sweep", json={"generator": "matmul", "params": {"bogus": "1"}})
    assert r.status_code == 400


def test_live_is_one_run_as_json_page_and_warnings(client, toym):
    path = PROGRAMS / "c00.asm"
    text = path.read_text(encoding="utf-8")
    r = client.post("/api/live", json={"trace": text, "options": {"file": str(path)}})
    assert r.status_code == 200
    body = r.json()
    assert body["json"] == toym("run", path, "-f", "json", "--no-steps")[1]
    assert body["page"] == toym("run", path, "-f", "html")[1]
    assert body["warnings"] == []
    r = client.post("/api/live", json={"trace": "LOAD q[0], R0\n"})
    assert [w["kind"] for w in r.json()["warnings"]] == ["data"] and r.json()["warnings"][0]["line"] == 1


@pytest.mark.slow
def test_limits_refuse_big_bodies_long_traces_and_slow_runs():
    limits = replace(LIMITS, run_seconds=1.0, trace_lines=100, body_bytes=10_000, workers=1)
    with TestClient(create_app(limits), base_url=LOCAL) as c:
        r = c.post("/api/run", json={"trace": "LOAD x[0], R0\n" * 2000})
        assert r.status_code == 413 and "10,000 bytes" in r.json()["error"]["message"]
        r = c.post("/api/run", json={"trace": "LOAD x[0], R0\n" * 150})
        assert r.status_code == 422 and r.json()["error"]["line"] == 101 and "150 lines" in r.json()["error"]["message"]
        assert c.post("/api/run", json={"trace": "LOAD x[0], R0\n" * 100}).status_code == 200  # at the limit
        start = time.perf_counter()
        r = c.post("/api/run", json={"trace": ".array x[100000][100000]\nLOAD x[0][0], R0\n"})
        took = time.perf_counter() - start
        message = r.json()["error"]["message"]  # refused by the time limit, or first by the worker's memory cap
        # refused up front by the array limit (toymachine.limits), else by the time limit or the memory cap
        assert r.status_code == 422 and ("limit of 1 s" in message or "memory" in message or "the limit is" in message) \
            and took < 30
        r = c.post("/api/run", json={"trace": "LOAD x[0], R0\n"})  # the killed worker was replaced
        assert r.status_code == 200 and r.json()["cycles"] == 1


def test_examples_are_the_bundled_folders_by_name_only(client):
    meta = client.get("/api/meta").json()
    assert [p["name"] for p in meta["examples"]["programs"]] == [p.stem for p in ALL_PROGRAMS]
    assert [p["name"] for p in meta["examples"]["problems"]] == [p.stem for p in ALL_PROBLEMS]
    assert set(meta["presets"]) >= {"toy", "toy6", "toysram-paper"} and "LOAD" in meta["opcodes"]
    for p in ALL_PROGRAMS[:3]:
        assert client.get(f"/api/examples/programs/{p.stem}").text == p.read_text(encoding="utf-8")
    for bad in ("programs/..%2F..%2Fsetup", "programs/c00.asm", "secrets/c00", "problems/..", "programs/%2Fetc%2Fpasswd"):
        assert client.get(f"/api/examples/{bad}").status_code in (404, 422)
    for machine in ("../../etc/passwd", "/etc/passwd", "toy.yaml"):
        r = client.post("/api/run", json={"trace": "LOAD x[0], R0\n", "machine": machine})
        assert r.status_code == 422 and "no machine preset" in r.json()["error"]["message"]


def test_the_page_and_bundle_are_served_offline(client):
    for name, media in STATIC_FILES.items():
        r = client.get(f"/static/{name}")
        assert r.status_code == 200 and r.headers["content-type"] == media and len(r.content) > 100
    page = client.get("/")
    assert page.status_code == 200 and "default-src 'self'" in page.headers["content-security-policy"]
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page.text)  # nothing from elsewhere
    assert client.get("/static/app.py").status_code == 404
    assert client.get("/", headers={"host": "attacker.example"}).status_code == 400  # DNS rebinding


def test_toym_help_does_not_import_the_web_stack():
    code = "import sys; from toymachine.cli.app import app; print(sorted(m for m in ('starlette', 'uvicorn') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"


def test_serve_binds_localhost_and_warns_for_any_other_host(toym, monkeypatch):
    import uvicorn

    seen = {}

    def fake_run(self):  # no socket: what toym serve asked uvicorn for
        seen.update(host=self.config.host, port=self.config.port)
        self.should_exit = True

    monkeypatch.setattr(uvicorn.Server, "run", fake_run)
    code, _, err = toym("serve", "--port", "8123")
    assert code == 0 and seen == {"host": "127.0.0.1", "port": 8123} and "warning" not in err
    code, _, err = toym("serve", "--host", "0.0.0.0")
    assert code == 0 and seen["host"] == "0.0.0.0" and "warning: serving on 0.0.0.0" in err


def test_a_port_in_use_is_a_located_error(toym):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        code, out, err = toym("serve", "--port", busy.getsockname()[1])
    assert code == 2 and "cannot listen on 127.0.0.1:" in err and "--port 0" in err and "Traceback" not in err


@pytest.mark.slow
def test_odd_text_is_an_error_and_never_kills_the_server(client):
    r = client.post("/api/run", content=b'{"trace": "LOAD x[0], R\\ud800\\n"}', headers={"content-type": "application/json"})
    assert r.status_code == 400 and "not JSON" in r.json()["error"]["message"]
    r = client.post("/api/run", json={"trace": "LOAD x[0], R0\x00\n"})
    assert r.status_code == 422 and r.json()["error"]["line"] == 1
    r = client.post("/api/run", json={"trace": "\r\nLOAD x[0], R0\r\n", "options": {"json_fields": "cycles"}})
    assert r.status_code == 200 and r.json() == {"cycles": 1}
    r = client.post("/api/run", json={"trace": "LOAD x[0], R0\n"})
    assert r.status_code == 200


FRONTEND = ROOT / "toymachine" / "serve" / "frontend"


@pytest.mark.slow
def test_the_committed_bundle_is_built_from_its_sources(tmp_path):
    need_tool((FRONTEND / "node_modules").is_dir() and shutil.which("node"), "the page's npm packages",
              "cd toymachine/serve/frontend && npm ci")
    env = dict(os.environ, TOYM_BUNDLE_OUT=str(tmp_path))
    subprocess.run(["node", "build.mjs"], cwd=FRONTEND, env=env, check=True, capture_output=True, timeout=300)
    static = ROOT / "toymachine" / "serve" / "static"
    for name in ("playground.js", "THIRD_PARTY_LICENSES.txt"):
        assert (tmp_path / name).read_bytes() == (static / name).read_bytes(), f"rebuild: node build.mjs ({name})"


# -- one path: the playground and the command line decide through the same functions ---------------
@pytest.mark.parametrize("columns", ["registers,reads,cycles", "registers,DRAM reads (words),sim = formula"])
def test_sweep_columns_are_read_as_the_cli_reads_them(client, toym, columns):
    """Column aliases (the plot's ``reads``, a header) name the same columns in both (``api.sweep_table``)."""
    code, out, _ = toym("sweep", "matmul", "--n", "2", "--registers", "3..4", "--columns", columns, "-f", "csv",
                        "-j", "1")
    r = client.post("/api/sweep", json={"generator": "matmul", "params": {"n": "2", "registers": "3..4"},
                                        "options": {"format": "csv", "columns": columns}})
    assert code == 0 and r.status_code == 200 and r.text == out
    assert "DRAM reads (words)" in out.splitlines()[0]


@pytest.mark.parametrize("fmt", ["table", "json", "html"])
@pytest.mark.parametrize("flags, options", [
    (["--registers", "7", "--dtype", "fp16", "--no-steps"], {"registers": 7, "dtype": "fp16", "steps": False}),
    (["--symbolic", "--seed", "3"], {"symbolic": True, "seed": 3}),
    (["--json-fields", "cycles,dram", "--no-memory"], {"json_fields": "cycles,dram", "no_memory": True}),
])
def test_run_options_give_the_clis_bytes(client, toym, fmt, flags, options):
    """Every run option, given as a flag or as a request key, gives the same bytes (``api.RunOptions``)."""
    path = PROGRAMS / "softmax_online.asm"
    code, out, _ = toym("run", path, "-f", fmt, *flags)
    r = client.post("/api/run", json={"trace": path.read_text(encoding="utf-8"),
                                      "options": {"file": str(path), "format": fmt, **options}})
    assert (code, r.status_code, r.text) == (0, 200, out)


def test_a_registers_error_is_the_same_error_both_ways(client, toym):
    path = PROGRAMS / "c00.asm"
    code, out, _ = toym("run", path, "-f", "json", "--registers", "2")
    r = client.post("/api/run", json={"trace": path.read_text(encoding="utf-8"),
                                      "options": {"file": str(path), "registers": 2}})
    assert (code, r.status_code) == (2, 422)
    cli, served = json.loads(out)["error"], r.json()["error"]
    assert cli.keys() == served.keys() >= {"message", "file", "line", "column", "hint", "kind", "key", "suggestion",
                                           "code"}
    assert {k: v for k, v in cli.items() if k != "hint"} == {k: v for k, v in served.items() if k != "hint"}
    assert (cli["kind"], cli["key"], cli["suggestion"], cli["line"]) == ("machine-limit", "registers", 3, 8)
    # the hint says the parameter as each front names it: the CLI's flag, the playground's option
    assert cli["hint"] == "use --registers 3 or a machine file with more registers"
    assert served["hint"] == "use registers = 3 or a machine file with more registers"


@pytest.mark.parametrize("cli_args,options", [(("--registers", "0"), {"registers": 0}),
                                              (("--memory-max", "-1"), {"memory_max": -1})])
def test_a_bad_option_is_the_same_error_both_ways(client, toym, cli_args, options):
    """The command line refuses it while parsing, the playground in the library: one key, one kind, one reason."""
    path = PROGRAMS / "c00.asm"
    code, out, _ = toym("run", path, "-f", "json", *cli_args)
    r = client.post("/api/run", json={"trace": path.read_text(encoding="utf-8"), "options": options})
    cli, served = json.loads(out)["error"], r.json()["error"]
    assert (code, r.status_code) == (2, 422)
    fields = ("kind", "key", "suggestion", "code")
    assert [cli[f] for f in fields] == [served[f] for f in fields] == ["config", next(iter(options)), None, None]
    value = next(iter(options.values()))
    reason = f"must be at least {value + 1}, got {value}"
    assert cli["message"].endswith(reason) and served["message"].endswith(reason)


@pytest.mark.slow
def test_the_pickers_offer_the_clis_choices(client):
    """One declaration each: the formats and dtypes /api/meta offers are the CLI's choices."""
    from toymachine.cli.common import DType, Format
    from toymachine.dtypes import DTYPES
    from toymachine.render import FORMATS

    meta = client.get("/api/meta").json()
    assert meta["formats"] == [f.value for f in Format] == list(FORMATS)
    assert meta["dtypes"] == [d.value for d in DType] == list(DTYPES)
