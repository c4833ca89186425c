; Seed 000 'Inner vs. outer product in attention': the outer-product order (KV loop outside), reference solution of examples/problems/attention_outer.yaml.
; Generated: toym gen attention --n 3 --d 2 --order outer --output-slots 0
; Cost: 228 cycles; DRAM 66 reads, 30 writes: K and V read once, each output row loaded and stored once per KV row.
; attention O = softmax(Q·Kᵀ)·V on the scalar machine, Q, K, V 3×2 (seed 000, 'Inner Product vs. Outer Product in Attention'): outer order, exact
; toym gen attention --n 3 --d 2 --order outer --registers 9 --output-slots 0 --variant exact
; KV loop outside: k and v rows resident, every query streams; 0 output slot(s) resident
; registers: 9 (cost.attention_registers); state starts in DRAM: row_max = −inf, row_sum = 0, acc = 0
; rows moved: Q 9, KV 3, O loads 9, O stores 9   (outer: n², n, n² − K(n−1), n² − K(n−1))
; cost: 228 cycles at 1 cycle per instruction; DRAM 66 reads, 30 writes (words); lower bound 24 words (every input read once, every output written once)
.data q = [[1.23, -1.52], [0.27, 1.33], [-0.45, -0.05]]
.data k = [[-0.14, -1.4], [-1.02, -0.06], [-0.92, -0.16]]
.data v = [[0.42, -0.7], [0.29, -0.02], [-0.11, 0.31]]
.array row_max[3] = -inf
.array row_sum[3] = 0
.array acc[3][2] = 0
LOAD k[0][0], R5
LOAD k[0][1], R6
LOAD v[0][0], R7
LOAD v[0][1], R8
LOAD q[0][0], R4
MAC_Z R4, R5, R0
LOAD q[0][1], R4
MAC R4, R6, R0, R0
LOAD row_max[0], R1
LOAD row_sum[0], R2
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
STORE R1, row_max[0]
STORE R2, row_sum[0]
LOAD acc[0][0], R4
MUL R4, R3, R4
MAC R0, R7, R4, R4
STORE R4, acc[0][0]
LOAD acc[0][1], R4
MUL R4, R3, R4
MAC R0, R8, R4, R4
STORE R4, acc[0][1]
LOAD q[1][0], R4
MAC_Z R4, R5, R0
LOAD q[1][1], R4
MAC R4, R6, R0, R0
LOAD row_max[1], R1
LOAD row_sum[1], R2
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
STORE R1, row_max[1]
STORE R2, row_sum[1]
LOAD acc[1][0], R4
MUL R4, R3, R4
MAC R0, R7, R4, R4
STORE R4, acc[1][0]
LOAD acc[1][1], R4
MUL R4, R3, R4
MAC R0, R8, R4, R4
STORE R4, acc[1][1]
LOAD q[2][0], R4
MAC_Z R4, R5, R0
LOAD q[2][1], R4
MAC R4, R6, R0, R0
LOAD row_max[2], R1
LOAD row_sum[2], R2
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
STORE R1, row_max[2]
STORE R2, row_sum[2]
LOAD acc[2][0], R4
MUL R4, R3, R4
MAC R0, R7, R4, R4
STORE R4, acc[2][0]
LOAD acc[2][1], R4
MUL R4, R3, R4
MAC R0, R8, R4, R4
STORE R4, acc[2][1]
LOAD k[1][0], R5
LOAD k[1][1], R6
LOAD v[1][0], R7
LOAD v[1][1], R8
LOAD q[0][0], R4
MAC_Z R4, R5, R0
LOAD q[0][1], R4
MAC R4, R6, R0, R0
LOAD row_max[0], R1
LOAD row_sum[0], R2
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
STORE R1, row_max[0]
STORE R2, row_sum[0]
LOAD acc[0][0], R4
MUL R4, R3, R4
MAC R0, R7, R4, R4
STORE R4, acc[0][0]
LOAD acc[0][1], R4
MUL R4, R3, R4
MAC R0, R8, R4, R4
STORE R4, acc[0][1]
LOAD q[1][0], R4
MAC_Z R4, R5, R0
LOAD q[1][1], R4
MAC R4, R6, R0, R0
LOAD row_max[1], R1
LOAD row_sum[1], R2
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
STORE R1, row_max[1]
STORE R2, row_sum[1]
LOAD acc[1][0], R4
MUL R4, R3, R4
MAC R0, R7, R4, R4
STORE R4, acc[1][0]
LOAD acc[1][1], R4
MUL R4, R3, R4
MAC R0, R8, R4, R4
STORE R4, acc[1][1]
LOAD q[2][0], R4
MAC_Z R4, R5, R0
LOAD q[2][1], R4
MAC R4, R6, R0, R0
LOAD row_max[2], R1
LOAD row_sum[2], R2
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
STORE R1, row_max[2]
STORE R2, row_sum[2]
LOAD acc[2][0], R4
MUL R4, R3, R4
MAC R0, R7, R4, R4
STORE R4, acc[2][0]
LOAD acc[2][1], R4
MUL R4, R3, R4
MAC R0, R8, R4, R4
STORE R4, acc[2][1]
LOAD k[2][0], R5
LOAD k[2][1], R6
LOAD v[2][0], R7
LOAD v[2][1], R8
LOAD q[0][0], R4
MAC_Z R4, R5, R0
LOAD q[0][1], R4
MAC R4, R6, R0, R0
LOAD row_max[0], R1
LOAD row_sum[0], R2
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
LOAD acc[0][0], R4
MUL R4, R3, R4
MAC R0, R7, R4, R4
DIV R4, R2, R4
STORE R4, o[0][0]
LOAD acc[0][1], R4
MUL R4, R3, R4
MAC R0, R8, R4, R4
DIV R4, R2, R4
STORE R4, o[0][1]
LOAD q[1][0], R4
MAC_Z R4, R5, R0
LOAD q[1][1], R4
MAC R4, R6, R0, R0
LOAD row_max[1], R1
LOAD row_sum[1], R2
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
LOAD acc[1][0], R4
MUL R4, R3, R4
MAC R0, R7, R4, R4
DIV R4, R2, R4
STORE R4, o[1][0]
LOAD acc[1][1], R4
MUL R4, R3, R4
MAC R0, R8, R4, R4
DIV R4, R2, R4
STORE R4, o[1][1]
LOAD q[2][0], R4
MAC_Z R4, R5, R0
LOAD q[2][1], R4
MAC R4, R6, R0, R0
LOAD row_max[2], R1
LOAD row_sum[2], R2
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
LOAD acc[2][0], R4
MUL R4, R3, R4
MAC R0, R7, R4, R4
DIV R4, R2, R4
STORE R4, o[2][0]
LOAD acc[2][1], R4
MUL R4, R3, R4
MAC R0, R8, R4, R4
DIV R4, R2, R4
STORE R4, o[2][1]
