; Problem 7 (seed 000): attention O = softmax(q·kᵀ)·v, inner-product order (query loop outside), reference solution of examples/problems/p7_attention_inner.yaml.
; Generated: toym gen attention --n 3 --d 2 --order inner
; Cost: 192 cycles; DRAM 54 reads, 6 writes: every output row stored once (rows moved: Q n, KV n², O n).
; attention O = softmax(Q·Kᵀ)·V on the scalar machine, Q, K, V 3×2 (seed 000, 'Inner Product vs. Outer Product in Attention'): inner order, exact
; toym gen attention --n 3 --d 2 --order inner --registers 9 --variant exact
; query loop outside: q row and running state (m, l, numerator) resident, every KV row streams
; registers: 9 (cost.attention_registers); state starts in DRAM: row_max = −inf, row_sum = 0, acc = 0
; rows moved: Q 3, KV 9, O loads 3, O stores 3   (inner: n, n², n, n)
; cost: 192 cycles at 1 cycle per instruction; DRAM 54 reads, 6 writes (words); lower bound 24 words (every input read once, every output written once)
.data q = [[1.23, -1.52], [0.27, 1.33], [-0.45, -0.05]]
.data k = [[-0.14, -1.4], [-1.02, -0.06], [-0.92, -0.16]]
.data v = [[0.42, -0.7], [0.29, -0.02], [-0.11, 0.31]]
.array row_max[3] = -inf
.array row_sum[3] = 0
.array acc[3][2] = 0
LOAD q[0][0], R5
LOAD q[0][1], R6
LOAD row_max[0], R1
LOAD row_sum[0], R2
LOAD acc[0][0], R7
LOAD acc[0][1], R8
LOAD k[0][0], R4
MAC_Z R5, R4, R0
LOAD k[0][1], R4
MAC R6, R4, R0, R0
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
LOAD v[0][0], R4
MUL R7, R3, R7
MAC R0, R4, R7, R7
LOAD v[0][1], R4
MUL R8, R3, R8
MAC R0, R4, R8, R8
LOAD k[1][0], R4
MAC_Z R5, R4, R0
LOAD k[1][1], R4
MAC R6, R4, R0, R0
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
LOAD v[1][0], R4
MUL R7, R3, R7
MAC R0, R4, R7, R7
LOAD v[1][1], R4
MUL R8, R3, R8
MAC R0, R4, R8, R8
LOAD k[2][0], R4
MAC_Z R5, R4, R0
LOAD k[2][1], R4
MAC R6, R4, R0, R0
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
LOAD v[2][0], R4
MUL R7, R3, R7
MAC R0, R4, R7, R7
LOAD v[2][1], R4
MUL R8, R3, R8
MAC R0, R4, R8, R8
DIV R7, R2, R7
STORE R7, o[0][0]
DIV R8, R2, R8
STORE R8, o[0][1]
LOAD q[1][0], R5
LOAD q[1][1], R6
LOAD row_max[1], R1
LOAD row_sum[1], R2
LOAD acc[1][0], R7
LOAD acc[1][1], R8
LOAD k[0][0], R4
MAC_Z R5, R4, R0
LOAD k[0][1], R4
MAC R6, R4, R0, R0
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
LOAD v[0][0], R4
MUL R7, R3, R7
MAC R0, R4, R7, R7
LOAD v[0][1], R4
MUL R8, R3, R8
MAC R0, R4, R8, R8
LOAD k[1][0], R4
MAC_Z R5, R4, R0
LOAD k[1][1], R4
MAC R6, R4, R0, R0
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
LOAD v[1][0], R4
MUL R7, R3, R7
MAC R0, R4, R7, R7
LOAD v[1][1], R4
MUL R8, R3, R8
MAC R0, R4, R8, R8
LOAD k[2][0], R4
MAC_Z R5, R4, R0
LOAD k[2][1], R4
MAC R6, R4, R0, R0
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
LOAD v[2][0], R4
MUL R7, R3, R7
MAC R0, R4, R7, R7
LOAD v[2][1], R4
MUL R8, R3, R8
MAC R0, R4, R8, R8
DIV R7, R2, R7
STORE R7, o[1][0]
DIV R8, R2, R8
STORE R8, o[1][1]
LOAD q[2][0], R5
LOAD q[2][1], R6
LOAD row_max[2], R1
LOAD row_sum[2], R2
LOAD acc[2][0], R7
LOAD acc[2][1], R8
LOAD k[0][0], R4
MAC_Z R5, R4, R0
LOAD k[0][1], R4
MAC R6, R4, R0, R0
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
LOAD v[0][0], R4
MUL R7, R3, R7
MAC R0, R4, R7, R7
LOAD v[0][1], R4
MUL R8, R3, R8
MAC R0, R4, R8, R8
LOAD k[1][0], R4
MAC_Z R5, R4, R0
LOAD k[1][1], R4
MAC R6, R4, R0, R0
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
LOAD v[1][0], R4
MUL R7, R3, R7
MAC R0, R4, R7, R7
LOAD v[1][1], R4
MUL R8, R3, R8
MAC R0, R4, R8, R8
LOAD k[2][0], R4
MAC_Z R5, R4, R0
LOAD k[2][1], R4
MAC R6, R4, R0, R0
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
LOAD v[2][0], R4
MUL R7, R3, R7
MAC R0, R4, R7, R7
LOAD v[2][1], R4
MUL R8, R3, R8
MAC R0, R4, R8, R8
DIV R7, R2, R7
STORE R7, o[2][0]
DIV R8, R2, R8
STORE R8, o[2][1]
