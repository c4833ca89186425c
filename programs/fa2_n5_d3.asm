; FlashAttention-2 on seed 001's machine and blocks (N = 5, d = 3, SRAM M = 59 words, Br = 3, Bc = 4); reference solution of examples/problems/fa2_tile.yaml. Run with --machine toysram-paper.
; Generated: toym gen attention --level tile --algo fa2 --n 5 --d 3 --sram 59 --sram-rule paper --block-m 3 --block-n 4 --scale 1
; Cost: 75 HBM words read, 20 written (O and L once); SRAM peak 42 of 59 words as the paper counts.
; machine: toysram-paper
; Tiled attention on the SRAM/HBM machine: FlashAttention-2 (Q_i outer; O_i, l_i, m_i stay in SRAM; O and L written once), forward pass.
; Computes O = softmax(τ·Q·Kᵀ)·V, L = rowmax + log(rowsum) (log-sum-exp), per head (1 head(s)).
; Parameters: n = 5, d = 3, batch = 1, heads = 1, causal = False; arrays [n][d] and [n] statistics.
; Scale τ = 1: no multiply (the seed's convention: fold 1/√d into Q ahead of time).
; Blocks: Br = 3 query rows (block_m), Bc = 4 key rows (block_n); Tr = 2, Tc = 2 (given).
; Registers (SRAM): T0 Q_i (Br×d) · T1 K_j, T2 V_j (Bc×d) · T3 S_ij → P̃_ij (Br×Bc) · T4 O_i accumulator (Br×d) · T5 l_i · T6/T7 m_i, old and new, alternating (Br×1) · T8 rowmax, rowsum (Br×1) · T9 α = e^(m−m_new).
; SRAM peak: 42 words of M = 59; a machine with fewer sram_words stops with a MachineLimitError — use smaller blocks (--block-m/--block-n) or --sram to size them.
; SRAM rule paper: 42 words are the blocks of HBM matrices (Q_i, K_j, V_j, O_i …: what the paper's Bc = ⌈M/4d⌉ sizes); the exact working set (S_ij, m, ℓ, temporaries too) is 69 words > M: run it on a machine with sram_rule: paper (--machine toysram-paper).
; Seed 001 (N = 5, d = 3, M = 59) prints Bc = ⌈M/4d⌉ = 4, but ⌈59/12⌉ = 5 (59/12 = 4.92 rounds up); its Br = 3, Bc = 4 blocks need 42 words counted as the paper does (Q_i, K_j, V_j, O_i) and 69 counted exactly: they fit M only under the paper's rule (toym gen attention --level tile --sram-rule paper --sram 59 --block-m 3 --block-n 4 plays its 2 × 2 walk).
; HBM per head: reads n·d + 2·d·PC (Q once; K, V once per pair: non-causal n·d + 2·Tr·n·d), writes n·d + n (O, L).
; Cost: 75 words read, 20 written; 275 matmul FLOPs, 185 other; 74 instructions (toymachine.cost.tile).
; Regenerate: toym gen attention --level tile --algo fa2 --n 5 --d 3 --block-m 3 --block-n 4 --sram-rule paper --sram 59 --scale 1.0
.array Q[5][3]
.array K[5][3]
.array V[5][3]
.array O[5][3]
.array L[5]
LOAD Q[0:3, :], T0
FILL 0, 3, 3, T4
FILL 0, 3, 1, T5
FILL -inf, 3, 1, T6
LOAD K[0:4, :], T1
LOAD V[0:4, :], T2
MAC_Z T0, T1.T, T3
ROWMAX T3, T8
MAX T6, T8, T7
SUB T3, T7, T3
EXP T3, T3
SUB T6, T7, T9
EXP T9, T9
ROWSUM T3, T8
MUL T5, T9, T5
ADD T5, T8, T5
MUL T4, T9, T4
MAC T3, T2, T4, T4
LOAD K[4:5, :], T1
LOAD V[4:5, :], T2
MAC_Z T0, T1.T, T3
ROWMAX T3, T8
MAX T7, T8, T6
SUB T3, T6, T3
EXP T3, T3
SUB T7, T6, T9
EXP T9, T9
ROWSUM T3, T8
MUL T5, T9, T5
ADD T5, T8, T5
MUL T4, T9, T4
MAC T3, T2, T4, T4
DIV T4, T5, T4
STORE T4, O[0:3, :]
LOG T5, T5
ADD T6, T5, T5
STORE T5, L[0:3]
LOAD Q[3:5, :], T0
FILL 0, 2, 3, T4
FILL 0, 2, 1, T5
FILL -inf, 2, 1, T6
LOAD K[0:4, :], T1
LOAD V[0:4, :], T2
MAC_Z T0, T1.T, T3
ROWMAX T3, T8
MAX T6, T8, T7
SUB T3, T7, T3
EXP T3, T3
SUB T6, T7, T9
EXP T9, T9
ROWSUM T3, T8
MUL T5, T9, T5
ADD T5, T8, T5
MUL T4, T9, T4
MAC T3, T2, T4, T4
LOAD K[4:5, :], T1
LOAD V[4:5, :], T2
MAC_Z T0, T1.T, T3
ROWMAX T3, T8
MAX T7, T8, T6
SUB T3, T6, T3
EXP T3, T3
SUB T7, T6, T9
EXP T9, T9
ROWSUM T3, T8
MUL T5, T9, T5
ADD T5, T8, T5
MUL T4, T9, T4
MAC T3, T2, T4, T4
DIV T4, T5, T4
STORE T4, O[3:5, :]
LOG T5, T5
ADD T6, T5, T5
STORE T5, L[3:5]
