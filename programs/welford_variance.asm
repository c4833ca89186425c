; Quiz (seed 000, 'Online variance'): Welford's one-pass sample variance of x[0..5], reference solution of examples/problems/quiz_welford.yaml.
; Generated: toym gen variance --n 6
; Cost: 7n + 2 = 44 cycles; DRAM n = 6 reads (one pass), 2 writes; 6 registers.
; Welford's online variance of x[0..5], one pass, 6 registers (seed 000, quiz 'Online variance'): mean[0] and the sample variance[0] (divides by n − 1)
; toym gen variance --n 6
; registers: R0 x, R1 mean, R2 M2 = (N−1)·S², R3 N, R4 the constant 1, R5 δ = x − mean
; cost: 7n + 2 = 44 cycles at 1 cycle per instruction; DRAM n = 6 reads, 2 writes (mean, variance); lower bound 8 words (every input read once, every output written once)
.data x = [0.51, 0.63, 0.97, -0.46, -0.47, -0.96]
LOAD x[0], R0
MOV R0, R1
SUB R0, R1, R2
EXP R2, R4
MOV R4, R3
LOAD x[1], R0
ADD R3, R4, R3
SUB R0, R1, R5
DIV R5, R3, R0
ADD R1, R0, R1
SUB R5, R0, R0
MAC R5, R0, R2, R2
LOAD x[2], R0
ADD R3, R4, R3
SUB R0, R1, R5
DIV R5, R3, R0
ADD R1, R0, R1
SUB R5, R0, R0
MAC R5, R0, R2, R2
LOAD x[3], R0
ADD R3, R4, R3
SUB R0, R1, R5
DIV R5, R3, R0
ADD R1, R0, R1
SUB R5, R0, R0
MAC R5, R0, R2, R2
LOAD x[4], R0
ADD R3, R4, R3
SUB R0, R1, R5
DIV R5, R3, R0
ADD R1, R0, R1
SUB R5, R0, R0
MAC R5, R0, R2, R2
LOAD x[5], R0
ADD R3, R4, R3
SUB R0, R1, R5
DIV R5, R3, R0
ADD R1, R0, R1
SUB R5, R0, R0
MAC R5, R0, R2, R2
SUB R3, R4, R3
DIV R2, R3, R2
STORE R1, mean[0]
STORE R2, variance[0]
