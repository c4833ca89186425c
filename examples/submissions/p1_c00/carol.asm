; carol (variant 1: c00): wrong, forgets the second product
LOAD a[0][0], R0
LOAD b[0][0], R1
MAC_Z R0, R1, R2
STORE R2, c[0][0]
