"""The GPU's measured rates the time model runs on (model/predict.py): the stored calibration
(model/calibrate.py's output) and the tile machine's preset set from it."""
from __future__ import annotations

import json

from toymachine import resolve_machine

from . import data

__all__ = ["calibration", "calibration_file", "l2_rate", "machine_for", "CALIBRATION_FILE"]

CALIBRATION_FILE = data.path("calibration_h200.json")


def calibration_file(gpu_name: str) -> str:
    """The declared calibration of the GPU named (data/calibration_h100.json for an H100),
    else the H200's."""
    return data.path("calibration_h100.json" if "H100" in gpu_name.upper()
                     else "calibration_h200.json")


def calibration(path: str = CALIBRATION_FILE) -> dict:
    """The measured rates (kernels_gpu.model.calibrate's output) the h200 preset was set from."""
    with open(path) as f:
        return json.load(f)


def l2_rate(calib: dict) -> float:
    """Bytes per second the SMs read from L2: the tile-read measurement (calibrate's
    l2_read_Bps), else the back-to-back copies (l2_copy_Bps, an underestimate)."""
    return calib.get("l2_read_Bps") or calib["l2_copy_Bps"]


def _same_gpu(a: str, b: str) -> bool:
    """Both names of the same card (H100 or H200)."""
    return any(k in a.upper() and k in b.upper() for k in ("H100", "H200"))


def machine_for(gpu_name: str, elem_bytes: int = 2, calib: dict | None = None):
    """The preset matching a GPU name, for inputs of elem_bytes (fp8: 1 byte per word and the
    measured fp8 matrix rate, when the calibration has one); an H100 with a calibration of an
    H100 gets that calibration's measured rates instead of the preset's datasheet ones."""
    m = resolve_machine("h200" if "H200" in gpu_name.upper() else "h100")
    if calib and _same_gpu(calib.get("gpu", ""), gpu_name) and "H200" not in gpu_name.upper():
        # the h100 preset holds the datasheet's rates; a calibration of that GPU replaces them
        # (the h200 preset holds its calibration's rates already: test_kernels_gpu_bench)
        hz = m.clock_hz
        m = m.with_(tensor_flops_per_cycle=calib["fp16_mm_flops"] / hz,
                    hbm_bytes_per_cycle=calib["dram_copy_Bps"] / hz,
                    vector_flops_per_cycle=calib["fma_flops"] / hz,
                    sfu_ops_per_cycle=calib["exp2_per_s"] / hz)
    if elem_bytes == 1 and calib and "fp8_mm_flops" in calib:
        m = m.with_(word_bytes=1, tensor_flops_per_cycle=calib["fp8_mm_flops"] / m.clock_hz)
    elif elem_bytes != m.word_bytes:
        m = m.with_(word_bytes=elem_bytes)
    return m
