; grace (variant 4: c11): needs a fourth register
LOAD a[1][0], R0
LOAD b[0][1], R1
LOAD a[1][1], R2
LOAD b[1][1], R3
MAC_Z R0, R1, R0
MAC R2, R3, R0, R0
STORE R0, c[1][1]
