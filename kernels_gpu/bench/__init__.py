"""Measurement on the GPU: the benchmark (`run`; `python -m kernels_gpu.bench`), its
correctness check (`check`) and tables (`tables`), the time model's alarm (`alarm`), host-time
probe (`hostprobe`), the offline sm_90 compile check (`compile_check`) and `toym verify-gpu`'s
comparison of the kernel with the tile simulator (`verify`)."""
