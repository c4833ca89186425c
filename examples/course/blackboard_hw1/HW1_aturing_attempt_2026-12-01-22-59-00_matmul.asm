; Alan Turing, homework 1
.data a = [[1, 2], [3, 4]]
.data b = [[5, 6], [7, 8]]
LOAD a[0][0], R2
LOAD b[0][0], R0
MAC_Z R2, R0, R1
LOAD a[0][1], R2
LOAD b[1][0], R0
MAC R2, R0, R1, R1
STORE R1, c[0][0]
LOAD b[1][1], R0
MAC_Z R2, R0, R1
LOAD a[0][0], R2
LOAD b[0][1], R0
MAC R2, R0, R1, R1
STORE R1, c[0][1]
LOAD a[1][0], R2
MAC_Z R2, R0, R1
LOAD a[1][1], R2
LOAD b[1][1], R0
MAC R2, R0, R1, R1
STORE R1, c[1][1]
LOAD b[1][0], R0
MAC_Z R2, R0, R1
LOAD a[1][0], R2
LOAD b[0][0], R0
MAC R2, R0, R1, R1
STORE R1, c[1][0]
