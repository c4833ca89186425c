; Problem 3 (seed 000): the 2x2 matmul as two outer products (k = 0, 1), 6 registers.
; R2..R5 hold c00, c01, c10, c11 across both rank-1 updates; R0/R1 stream operands.
; Cost: 10 LOADs + 8 MACs + 4 STOREs = 22 cycles (inner product with 3 registers: 25).
.data a = [[1, 2], [3, 4]]
.data b = [[5, 6], [7, 8]]
; outer product k = 0: column 0 of A times row 0 of B
LOAD a[0][0], R0
LOAD b[0][0], R1
MAC_Z R0, R1, R2
LOAD b[0][1], R1
MAC_Z R0, R1, R3
LOAD a[1][0], R0
MAC_Z R0, R1, R5
LOAD b[0][0], R1
MAC_Z R0, R1, R4
; outer product k = 1: column 1 of A times row 1 of B, accumulated
LOAD a[0][1], R0
LOAD b[1][0], R1
MAC R0, R1, R2, R2
LOAD b[1][1], R1
MAC R0, R1, R3, R3
LOAD a[1][1], R0
MAC R0, R1, R5, R5
LOAD b[1][0], R1
MAC R0, R1, R4, R4
; store
STORE R2, c[0][0]
STORE R3, c[0][1]
STORE R4, c[1][0]
STORE R5, c[1][1]
