"""The kernels' host side: launch configurations and the tuned table (`configs`), the problem's
shape and the launches (`launch`), CUDA-graph replay (`graphs`), the public functions and the
autograd Function (`flash_attn`), the float64 oracle (`reference`) and error bounds
(`tolerance`)."""
