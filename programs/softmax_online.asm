; Problem 5 (seed 000): online softmax of x[0..5] with 4 registers, two passes.
; Pass 1 keeps the running max m (R1) and the running sum s (R2), rescaling s by
; e^(m - m') whenever the max grows (R3 saves the old max).  Pass 2 normalises.
; Cost: 2n = 12 DRAM reads, n = 6 writes (one pass and n reads fewer than safe softmax).
.data x = [1, 2, 3, 4, 5, 6]
; initialisation: m = x0, s = 1
LOAD x[0], R0
MOV R0, R1
SUB R0, R1, R0
EXP R0, R0
MOV R0, R2
; element 1
LOAD x[1], R0
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
; element 2
LOAD x[2], R0
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
; element 3
LOAD x[3], R0
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
; element 4
LOAD x[4], R0
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
; element 5
LOAD x[5], R0
MOV R1, R3
MAX R1, R0, R1
SUB R3, R1, R3
SUB R0, R1, R0
EXP R3, R3
EXP R0, R0
MUL R2, R3, R2
ADD R2, R0, R2
; pass 2: normalise
LOAD x[0], R0
SUB R0, R1, R0
EXP R0, R0
DIV R0, R2, R0
STORE R0, out[0]
LOAD x[1], R0
SUB R0, R1, R0
EXP R0, R0
DIV R0, R2, R0
STORE R0, out[1]
LOAD x[2], R0
SUB R0, R1, R0
EXP R0, R0
DIV R0, R2, R0
STORE R0, out[2]
LOAD x[3], R0
SUB R0, R1, R0
EXP R0, R0
DIV R0, R2, R0
STORE R0, out[3]
LOAD x[4], R0
SUB R0, R1, R0
EXP R0, R0
DIV R0, R2, R0
STORE R0, out[4]
LOAD x[5], R0
SUB R0, R1, R0
EXP R0, R0
DIV R0, R2, R0
STORE R0, out[5]
