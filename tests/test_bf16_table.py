"""`toym numerics --table bf16`: seed 002's bf16 error table (n = 257, 513, 777) as a model — bf16
matmul operands, fp32 accumulation — checked against the seed's code transcribed to torch, and the
simulator column against float64 numpy."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from toymachine.dtypes import DTYPES
from toymachine.experiments import bf16 as B
from toymachine.gen.tile import attention_reference


def _torch_tpu(q, k, v, block_m, block_n):
    """The seed's flash_attention_tiled and standard_causal_attention in torch, matmuls on bf16
    operands accumulated in float32 (a TPU at default precision): max |flash − standard|."""
    q, k, v = (torch.tensor(x, dtype=torch.float32) for x in (q, k, v))
    mm = lambda a, b: a.to(torch.bfloat16).float() @ b.to(torch.bfloat16).float()  # noqa: E731
    n, d = q.shape
    scale = torch.tensor(1.0 / math.sqrt(d), dtype=torch.float32)
    scores = mm(q, k.T) * scale
    scores = scores.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), -math.inf)
    standard = mm(torch.softmax(scores, -1), v)
    out = torch.zeros(n, d)
    for i0 in range(0, n, block_m):
        qi = q[i0:i0 + block_m]
        r = qi.shape[0]
        m, l, acc = torch.full((r,), -math.inf), torch.zeros(r), torch.zeros(r, d)
        for j0 in range(0, n, block_n):
            kj, vj = k[j0:j0 + block_n], v[j0:j0 + block_n]
            s = mm(qi, kj.T) * scale
            valid = torch.arange(i0, i0 + r)[:, None] >= torch.arange(j0, j0 + kj.shape[0])[None, :]
            s = torch.where(valid, s, torch.tensor(-math.inf))
            new = torch.maximum(m, s.max(1).values)
            rescale = torch.where(torch.isfinite(m), torch.exp(m - new), torch.zeros(()))
            w = torch.where(torch.isfinite(new)[:, None], torch.exp(s - new[:, None]), torch.zeros(()))
            l = rescale * l + w.sum(1)
            acc = rescale[:, None] * acc + mm(w, vj)
            m = new
        out[i0:i0 + r] = acc / l[:, None]
    return float((out - standard).abs().max())


def test_bf16_rounding_is_torchs():
    x = np.random.default_rng(0).standard_normal(10_000) * 3
    want = torch.tensor(x, dtype=torch.float32).to(torch.bfloat16).double().numpy()
    assert np.array_equal(DTYPES["bf16"].round_array(DTYPES["fp32"].round_array(x)), want)


def test_tpu_flash_is_attention_without_rounding(monkeypatch):
    """With exact arithmetic the transcription of the seed's flash loop is causal attention."""
    q, k, v = B._inputs(37, 8, 3)
    exact = type("Exact", (), {"round_array": staticmethod(lambda a: np.asarray(a, dtype=np.float64))})()
    monkeypatch.setattr(B, "_F32", exact)
    monkeypatch.setattr(B, "_BF16", exact)
    ref = attention_reference(q, k, v, causal=True)["O"]
    np.testing.assert_allclose(B.tpu_flash(q, k, v, 16, 8), ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(B.tpu_standard(q, k, v), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [(257, 64, 64, 64), (777, 80, 128, 64)])
def test_model_column_equals_the_seeds_code_in_torch(shape):
    n, d, bm, bn = shape
    got = B._model(n, d, bm, bn, 0)
    want = _torch_tpu(*B._inputs(n, d, 0), bm, bn)
    assert got == pytest.approx(want, rel=0.02)
    assert 1e-3 < got < 1e-2  # the seed's order of magnitude: ~1e-3 (its 0.0035 … 0.0050)


def test_simulator_column_is_bf16_inputs_against_float64():
    q, k, v = B._inputs(257, 64, 0)
    bf = DTYPES["bf16"].round_array
    want = np.abs(attention_reference(bf(q), bf(k), bf(v), causal=True)["O"]
                  - attention_reference(q, k, v, causal=True)["O"]).max()
    assert B._sim(257, 64, 64, 64, 0) == pytest.approx(want, rel=1e-3)


@pytest.mark.slow
def test_cli_table(toym):
    code, out, _ = toym("numerics", "--table", "bf16", "--trials", 1, "-f", "json")
    rows = json.loads(out)["seed 002's bf16 error table"]
    assert code == 0 and [r["seed 002 max_abs"] for r in rows] == ["0.004399", "0.003483", "0.005013"]
    assert [r["match"] for r in rows] == ["True"] * 3
    code, _, err = toym("numerics", "--table", "nope")
    assert code == 2 and "--table must be" in err
    code, _, err = toym("numerics", "--table", "bf16", "--trials", 0)
    assert code == 2
