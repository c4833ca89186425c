"""`toym systolic` shows each PE's partial sum as well as its activation (table, JSON, the animated
HTML page), checked against seed 002's own ``SystolicArray`` emulator (transcribed from the seed) and,
for the output-stationary array, against the closed form Σ_{k ≤ t−i−j} A[i,k]·B[k,j]."""

from __future__ import annotations

import json

import numpy as np
import pytest

from toymachine.render.systolic_page import systolic_frames
from toymachine.sim.systolic import systolic_matmul


class SeedSystolicArray:
    """Seed 002's ``SystolicArray`` (weight-stationary), as the seed prints it."""

    def __init__(self, num_rows, num_cols):
        self.num_rows, self.num_cols = num_rows, num_cols
        self.weights = np.zeros((num_rows, num_cols))
        self.activation_in_cell = np.full((num_rows, num_cols), np.nan)
        self.partial_sum = np.zeros((num_rows, num_cols))
        self.cycle = 0

    def start(self, A, B):
        self.weights = B.astype(np.float64).copy()
        self._A = A.astype(np.float64).copy()
        self._num_activations = A.shape[0]
        self._total_cycles = A.shape[0] + self.num_rows + self.num_cols - 2

    def tick(self):
        new_act = np.full((self.num_rows, self.num_cols), np.nan)
        new_ps = np.zeros((self.num_rows, self.num_cols))
        for row in range(self.num_rows):
            for col in range(self.num_cols):
                if col == 0:
                    idx = self.cycle - row
                    act = float(self._A[idx, row]) if 0 <= idx < self._num_activations else None
                else:
                    left = self.activation_in_cell[row, col - 1]
                    act = None if np.isnan(left) else float(left)
                incoming = 0.0 if row == 0 else float(self.partial_sum[row - 1, col])
                if act is not None:
                    new_act[row, col] = act
                    new_ps[row, col] = incoming + act * float(self.weights[row, col])
                else:
                    new_ps[row, col] = incoming
        self.activation_in_cell, self.partial_sum = new_act, new_ps
        self.cycle += 1


@pytest.mark.parametrize("m, k, n, seed", [(2, 3, 2, 0), (4, 3, 5, 1), (6, 5, 3, 2), (1, 1, 1, 3), (7, 2, 9, 4)])
def test_weight_stationary_sums_are_the_seeds(m, k, n, seed):
    rng = np.random.default_rng(seed)
    A, B = rng.integers(-9, 10, (m, k)), rng.integers(-9, 10, (k, n))
    run = systolic_matmul(A, B, dataflow="weight")
    ref = SeedSystolicArray(k, n)
    ref.start(A, B)
    for t in range(run.ticks):
        ref.tick()
        live = run.cells[t] >= 0
        assert np.array_equal(live, ~np.isnan(ref.activation_in_cell))
        assert np.array_equal(run.sums[t][live], ref.partial_sum[live])
    bottom = [run.sums[t, k - 1, c] for t in range(run.ticks) for c in range(n) if run.cells[t, k - 1, c] >= 0]
    assert sorted(bottom) == sorted((A @ B).ravel().tolist())


@pytest.mark.parametrize("m, k, n", [(3, 4, 2), (5, 2, 4)])
def test_output_stationary_sums_are_running_dot_products(m, k, n):
    rng = np.random.default_rng(7)
    A, B = rng.integers(-9, 10, (m, k)), rng.integers(-9, 10, (k, n))
    run = systolic_matmul(A, B, dataflow="output")
    for t in range(run.ticks):
        for i in range(m):
            for j in range(n):
                if run.cells[t, i, j] >= 0:
                    kk = t - i - j
                    assert run.cells[t, i, j] == kk
                    assert run.sums[t, i, j] == sum(A[i, q] * B[q, j] for q in range(kk + 1))


def test_cli_table_json_and_page_show_partial_sums(toym, tmp_path):
    a = tmp_path / "ab.yaml"
    a.write_text("A: [[1, 2, 3], [4, 5, 6]]\nB: [[1, 0], [0, 1], [1, 1]]\n")
    code, out, _ = toym("systolic", "--a", a, "--b", a, "-f", "json")
    d = json.loads(out)
    run = systolic_matmul(np.array([[1, 2, 3], [4, 5, 6]]), np.array([[1, 0], [0, 1], [1, 1]]))
    assert code == 0 and d["sums"][4][2][1] == int(run.sums[4, 2, 1]) == 11  # C[1,1] leaves at cycle 4
    assert d["sums"][0][1][0] is None  # an idle cell
    code, out, _ = toym("systolic", "--a", a, "--b", a)
    assert code == 0 and "Partial sums, cycle by cycle" in out
    page = tmp_path / "s.html"
    code, _, _ = toym("systolic", "--a", a, "--b", a, "-f", "html", "-o", page)
    text = page.read_text()
    data = text.split('id="frames">', 1)[1].split("</script>", 1)[0]
    assert code == 0 and json.loads(data) == json.loads(json.dumps(systolic_frames(run)))
    assert json.loads(data)["frames"][4][2][1] == ["A[1,2] = 6", "11"]
