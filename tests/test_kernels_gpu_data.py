"""kernels_gpu's declared data (kernels_gpu/data/manifest.json, kernels_gpu.model.data) and the
performance page generated from it (kernels_gpu/PERFORMANCE.md, kernels_gpu.bench.page)."""
from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from kernels_gpu.model import data  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_data_file_is_declared_and_every_declared_file_is_there():
    """The folder holds exactly the manifest's files (and the manifest), at most 30; each entry
    names a role, a GPU, software versions and a command."""
    on_disk = set(os.listdir(data.DATA_DIR)) - {"manifest.json"}
    declared = data.manifest()
    assert on_disk == set(declared)
    assert len(on_disk) <= 30
    for e in declared.values():
        assert e.role in data.ROLES and e.gpu and e.software and e.command and e.what, e
    assert data.files_with_role("published table")


def test_a_bundle_declares_its_parts_and_holds_each():
    """Each part a bundle declares (one run, by name, with its own command) is in the file,
    and the file holds no undeclared part."""
    for name, e in data.manifest().items():
        if e.parts:
            content = data.load_json(name)
            body = content.get("studies", content.get("runs"))
            assert set(body) == set(e.parts), name
            assert all(data.part(name, p)["rows"] for p in e.parts)


def test_an_undeclared_or_missing_file_is_an_error_naming_it(tmp_path, monkeypatch):
    with pytest.raises(data.DataError) as e:
        data.path("frontier_nowhere.json")
    assert e.value.name == "frontier_nowhere.json" and "not declared" in e.value.reason
    with pytest.raises(data.DataError) as e:
        data.part("gluon_studies_h100.json", "hopper_nowhere")
    assert e.value.name == "gluon_studies_h100.json"
    raw = json.loads(open(data.MANIFEST).read())
    raw["files"]["gone.json"] = dict(raw["files"]["bench_h200.json"])
    (tmp_path / "manifest.json").write_text(json.dumps(raw))
    monkeypatch.setattr(data, "DATA_DIR", str(tmp_path))
    monkeypatch.setattr(data, "MANIFEST", str(tmp_path / "manifest.json"))
    with pytest.raises(data.DataError) as e:
        data.path("gone.json")
    assert e.value.name == "gone.json" and "missing" in e.value.reason


def test_the_performance_page_is_the_generators_output():
    """kernels_gpu/PERFORMANCE.md is `python -m kernels_gpu.bench.page`'s output on the
    declared data, byte for byte; every figure of it comes from there."""
    from kernels_gpu.bench import page

    with open(os.path.join(ROOT, "kernels_gpu", "PERFORMANCE.md")) as f:
        assert f.read() == page.render()


def test_the_page_counts_the_points_below_flash_from_the_data():
    """The frontier tables' summary line counts every point slower than SDPA-flash in the
    declared runs (computed here from the rows, not read from the page)."""
    from kernels_gpu.bench import frontier_table, page

    rows = frontier_table.load([data.path(n) for n in page.FRONTIER])
    below = sum(1 for r in rows for p in ("fwd", "bwd")
                if r["flash"][f"{p}_ms"] < r["ours"][f"{p}_ms"])
    assert frontier_table.render(rows).rstrip().endswith(f"**{below} below 1.0 × flash**")
