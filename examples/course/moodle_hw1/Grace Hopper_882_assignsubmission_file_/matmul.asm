; Problem 2 (seed 000): the full 2x2 matmul C = A x B, inner-product order, 3 registers.
; Outputs in the order c00, c01, c11, c10 so each one starts with an operand that the
; previous one left in a register (a01, then b01, then a11): 4 + 3 + 3 + 3 LOADs.
; Cost: 13 LOADs + 8 MACs + 4 STOREs = 25 cycles (naively 4 x 7 = 28).
.data a = [[1, 2], [3, 4]]
.data b = [[5, 6], [7, 8]]
; c00 = a00*b00 + a01*b10
LOAD a[0][0], R0
LOAD b[0][0], R1
MAC_Z R0, R1, R2
LOAD a[0][1], R0
LOAD b[1][0], R1
MAC R0, R1, R2, R2
STORE R2, c[0][0]
; c01 = a01*b11 + a00*b01   (R0 still holds a01)
LOAD b[1][1], R1
MAC_Z R0, R1, R2
LOAD a[0][0], R0
LOAD b[0][1], R1
MAC R0, R1, R2, R2
STORE R2, c[0][1]
; c11 = a10*b01 + a11*b11   (R1 still holds b01)
LOAD a[1][0], R0
MAC_Z R0, R1, R2
LOAD a[1][1], R0
LOAD b[1][1], R1
MAC R0, R1, R2, R2
STORE R2, c[1][1]
; c10 = a11*b10 + a10*b00   (R0 still holds a11)
LOAD b[1][0], R1
MAC_Z R0, R1, R2
LOAD a[1][0], R0
LOAD b[0][0], R1
MAC R0, R1, R2, R2
STORE R2, c[1][0]
