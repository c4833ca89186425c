; heidi (variant 1: c00): right, but with MUL and ADD instead of the MAC unit
LOAD a[0][0], R0
LOAD b[0][0], R1
MUL R0, R1, R2
LOAD a[0][1], R0
LOAD b[1][0], R1
MUL R0, R1, R0
ADD R0, R2, R2
STORE R2, c[0][0]
