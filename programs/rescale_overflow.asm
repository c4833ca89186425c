; Seed 000, "Numerical safety": the online softmax's rescale factor two ways, for three
; (old max m, new max m') pairs: safe[i] = e^(m - m') and naive[i] = e^m / e^m'.
; The exponent m - m' is <= 0, so the safe form never overflows; e^m alone can.
; Cost: 27 cycles (9 per pair), 3 registers; DRAM 6 reads, 6 writes.
;
; Each pair sits where one number format runs out: e^x overflows above x = 11.09 in fp16,
; 88.72 in fp32 and bf16, 709.78 in fp64. Run it with --dtype fp16, fp32 or fp64:
;   pair (m, m')   fp64            fp32            fp16
;   (11, 12)       naive = e^-1    naive = e^-1    naive = 0   (e^12 = inf: 59874/inf)
;   (88, 89)       naive = e^-1    naive = 0       naive = nan (inf/inf)
;   (709, 710)     naive = 0       naive = nan     naive = nan
; safe = e^-1 = 0.3679 in every row and format; the machine raises an overflow alarm at
; the first EXP that gives inf, and a NaN alarm at the first inf/inf. (bf16 behaves as fp32
; on the first two pairs; it cannot hold 709 and 710 — they round to 708 and 712.)
.data m_old = [11, 88, 709]
.data m_new = [12, 89, 710]
; pair 0
LOAD m_old[0], R0
LOAD m_new[0], R1
SUB R0, R1, R2
EXP R2, R2
STORE R2, safe[0]
EXP R0, R0
EXP R1, R1
DIV R0, R1, R2
STORE R2, naive[0]
; pair 1
LOAD m_old[1], R0
LOAD m_new[1], R1
SUB R0, R1, R2
EXP R2, R2
STORE R2, safe[1]
EXP R0, R0
EXP R1, R1
DIV R0, R1, R2
STORE R2, naive[1]
; pair 2
LOAD m_old[2], R0
LOAD m_new[2], R1
SUB R0, R1, R2
EXP R2, R2
STORE R2, safe[2]
EXP R0, R0
EXP R1, R1
DIV R0, R1, R2
STORE R2, naive[2]
