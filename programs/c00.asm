; Problem 1 (seed 000): compute c00 = a00*b00 + a01*b10 of C = A x B, A, B 2x2.
; Machine: 3 registers (two operands, one accumulator: the minimum, as the seed argues).
; Cost: 4 LOADs + 2 MACs + 1 STORE = 7 cycles; 4 DRAM reads, 1 write.
.data a = [[1, 2], [3, 4]]
.data b = [[5, 6], [7, 8]]
LOAD a[0][0], R0
LOAD b[0][0], R1
MAC_Z R0, R1, R2        ; the first product: no partial sum yet
LOAD a[0][1], R0
LOAD b[1][0], R1
MAC R0, R1, R2, R2      ; accumulate into R2
STORE R2, c[0][0]
