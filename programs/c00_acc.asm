; Problem 1 (c00) on a machine whose MAC unit keeps its own accumulator ACC (seed 000, "Minimum
; registers and modern GPUs"): two registers supply the operands, ACC holds the partial sum.
; Cost: 4 LOADs + 2 MACs + 1 STORE = 7 cycles with 2 registers + ACC (3 registers without ACC).
; machine: toy2acc
.data a = [[1, 2], [3, 4]]
.data b = [[5, 6], [7, 8]]
LOAD a[0][0], R0
LOAD b[0][0], R1
MAC_Z R0, R1, ACC
LOAD a[0][1], R0
LOAD b[1][0], R1
MAC R0, R1, ACC, ACC
STORE ACC, c[0][0]
