; Problem 4 (seed 000): safe softmax of x[0..5] with 3 registers, three passes.
; Pass 1: m = max(x) (R1).  Pass 2: S = sum e^(x_i - m) (R2).  Pass 3: out_i = e^(x_i - m) / S.
; Cost: 3n = 18 DRAM reads, n = 6 writes; the exponents are recomputed, never stored.
.data x = [1, 2, 3, 4, 5, 6]
; pass 1: running max in R1
LOAD x[0], R1
LOAD x[1], R0
MAX R0, R1, R1
LOAD x[2], R0
MAX R0, R1, R1
LOAD x[3], R0
MAX R0, R1, R1
LOAD x[4], R0
MAX R0, R1, R1
LOAD x[5], R0
MAX R0, R1, R1
; pass 2: sum of exponents in R2
LOAD x[0], R0
SUB R0, R1, R0
EXP R0, R0
MOV R0, R2
LOAD x[1], R0
SUB R0, R1, R0
EXP R0, R0
ADD R2, R0, R2
LOAD x[2], R0
SUB R0, R1, R0
EXP R0, R0
ADD R2, R0, R2
LOAD x[3], R0
SUB R0, R1, R0
EXP R0, R0
ADD R2, R0, R2
LOAD x[4], R0
SUB R0, R1, R0
EXP R0, R0
ADD R2, R0, R2
LOAD x[5], R0
SUB R0, R1, R0
EXP R0, R0
ADD R2, R0, R2
; pass 3: normalise
LOAD x[0], R0
SUB R0, R1, R0
EXP R0, R0
DIV R0, R2, R0
STORE R0, out[0]
LOAD x[1], R0
SUB R0, R1, R0
EXP R0, R0
DIV R0, R2, R0
STORE R0, out[1]
LOAD x[2], R0
SUB R0, R1, R0
EXP R0, R0
DIV R0, R2, R0
STORE R0, out[2]
LOAD x[3], R0
SUB R0, R1, R0
EXP R0, R0
DIV R0, R2, R0
STORE R0, out[3]
LOAD x[4], R0
SUB R0, R1, R0
EXP R0, R0
DIV R0, R2, R0
STORE R0, out[4]
LOAD x[5], R0
SUB R0, R1, R0
EXP R0, R0
DIV R0, R2, R0
STORE R0, out[5]
