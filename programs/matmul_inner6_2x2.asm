; Quiz (seed 000): the best inner-product matmul C = A x B (A, B 2x2) with 6 registers.
; Every output is still one complete dot product, but a row of A and a column of B stay in registers, and each sum accumulates into an operand register that is not needed again.
; Cost: 8 LOADs + 8 MACs + 4 STOREs = 20 cycles: every input loaded exactly once (the lower bound), vs 25 with 3 registers and 22 for the outer product.
.data a = [[1, 2], [3, 4]]
.data b = [[5, 6], [7, 8]]
; c00: row 0 of A in R0, R1; column 0 of B in R2, R3
LOAD a[0][0], R0
LOAD a[0][1], R1
LOAD b[0][0], R2
LOAD b[1][0], R3
MAC_Z R0, R2, R4
MAC R1, R3, R4, R4
STORE R4, c[0][0]
; c10: column 0 of B stays; row 1 of A into R4, R5 (row 0 stays for c01)
LOAD a[1][0], R4
LOAD a[1][1], R5
MAC_Z R4, R2, R2        ; b00 is not needed again: accumulate over it
MAC R5, R3, R2, R2
STORE R2, c[1][0]
; c01: column 1 of B into R2, R3; row 0 of A is still in R0, R1
LOAD b[0][1], R2
LOAD b[1][1], R3
MAC_Z R0, R2, R0        ; a00 is not needed again
MAC R1, R3, R0, R0
STORE R0, c[0][1]
; c11: row 1 of A (R4, R5) and column 1 of B (R2, R3) are both in registers: no LOAD
MAC_Z R4, R2, R4
MAC R5, R3, R4, R4
STORE R4, c[1][1]
