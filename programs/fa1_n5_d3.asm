; Seed 001's FlashAttention walk-through exactly (N = 5, d = 3, SRAM M = 59 words, Br = 3, Bc = 4: its 2 x 2 walk), FlashAttention-1; reference solution of examples/problems/fa1_tile.yaml. Run with --machine toysram-paper.
; Generated: toym gen attention --level tile --algo fa1 --n 5 --d 3 --sram 59 --sram-rule paper --block-m 3 --block-n 4 --scale 1
; Cost: 110 HBM words read (K, V once), 50 written; SRAM peak 42 of 59 words as the paper counts (Q_i, K_j, V_j, O_i).
; machine: toysram-paper
; Tiled attention on the SRAM/HBM machine: FlashAttention-1 (Algorithm 1: K_j, V_j outer; O, l, m updated in HBM per block pair), forward pass.
; Computes O = softmax(τ·Q·Kᵀ)·V, l = rowsum, m = rowmax, per head (1 head(s)).
; Parameters: n = 5, d = 3, batch = 1, heads = 1, causal = False; arrays [n][d] and [n] statistics.
; Scale τ = 1: no multiply (the seed's convention: fold 1/√d into Q ahead of time).
; Blocks: Br = 3 query rows (block_m), Bc = 4 key rows (block_n); Tr = 2, Tc = 2 (given).
; Registers (SRAM): T0 Q_i (Br×d) · T1 K_j, T2 V_j (Bc×d) · T3 S_ij → P̃_ij (Br×Bc) · T4 O_i (Br×d) · T5 l_i · T6 m_i → α → α·l_i · T7 m̃_ij → β · T8 l̃_ij → l_new · T9 m_new (Br×1) · T10 P̃_ij·V_j (Br×d).
; SRAM peak: 42 words of M = 59; a machine with fewer sram_words stops with a MachineLimitError — use smaller blocks (--block-m/--block-n) or --sram to size them.
; SRAM rule paper: 42 words are the blocks of HBM matrices (Q_i, K_j, V_j, O_i …: what the paper's Bc = ⌈M/4d⌉ sizes); the exact working set (S_ij, m, ℓ, temporaries too) is 78 words > M: run it on a machine with sram_rule: paper (--machine toysram-paper).
; Seed 001 (N = 5, d = 3, M = 59) prints Bc = ⌈M/4d⌉ = 4, but ⌈59/12⌉ = 5 (59/12 = 4.92 rounds up); its Br = 3, Bc = 4 blocks need 42 words counted as the paper does (Q_i, K_j, V_j, O_i) and 78 counted exactly: they fit M only under the paper's rule (toym gen attention --level tile --sram-rule paper --sram 59 --block-m 3 --block-n 4 plays its 2 × 2 walk).
; HBM per head: reads 2·n·d + (2d + 2)·PR (K, V once; Q, O, l, m per pair: non-causal PR = n·Tc), writes (d + 2)·PR.
; Cost: 110 words read, 50 written; 245 matmul FLOPs, 280 other; 104 instructions (toymachine.cost.tile).
; Regenerate: toym gen attention --level tile --algo fa1 --n 5 --d 3 --block-m 3 --block-n 4 --sram-rule paper --sram 59 --scale 1.0
.array Q[5][3]
.array K[5][3]
.array V[5][3]
.array O[5][3] = 0
.array l[5] = 0
.array m[5] = -inf
LOAD K[0:4, :], T1
LOAD V[0:4, :], T2
LOAD Q[0:3, :], T0
LOAD O[0:3, :], T4
LOAD l[0:3], T5
LOAD m[0:3], T6
MAC_Z T0, T1.T, T3
ROWMAX T3, T7
SUB T3, T7, T3
EXP T3, T3
ROWSUM T3, T8
MAX T6, T7, T9
SUB T6, T9, T6
EXP T6, T6
SUB T7, T9, T7
EXP T7, T7
MUL T5, T6, T6
MUL T8, T7, T8
ADD T6, T8, T8
MUL T4, T6, T4
MAC_Z T3, T2, T10
MUL T10, T7, T10
ADD T4, T10, T4
DIV T4, T8, T4
STORE T4, O[0:3, :]
STORE T8, l[0:3]
STORE T9, m[0:3]
LOAD Q[3:5, :], T0
LOAD O[3:5, :], T4
LOAD l[3:5], T5
LOAD m[3:5], T6
MAC_Z T0, T1.T, T3
ROWMAX T3, T7
SUB T3, T7, T3
EXP T3, T3
ROWSUM T3, T8
MAX T6, T7, T9
SUB T6, T9, T6
EXP T6, T6
SUB T7, T9, T7
EXP T7, T7
MUL T5, T6, T6
MUL T8, T7, T8
ADD T6, T8, T8
MUL T4, T6, T4
MAC_Z T3, T2, T10
MUL T10, T7, T10
ADD T4, T10, T4
DIV T4, T8, T4
STORE T4, O[3:5, :]
STORE T8, l[3:5]
STORE T9, m[3:5]
LOAD K[4:5, :], T1
LOAD V[4:5, :], T2
LOAD Q[0:3, :], T0
LOAD O[0:3, :], T4
LOAD l[0:3], T5
LOAD m[0:3], T6
MAC_Z T0, T1.T, T3
ROWMAX T3, T7
SUB T3, T7, T3
EXP T3, T3
ROWSUM T3, T8
MAX T6, T7, T9
SUB T6, T9, T6
EXP T6, T6
SUB T7, T9, T7
EXP T7, T7
MUL T5, T6, T6
MUL T8, T7, T8
ADD T6, T8, T8
MUL T4, T6, T4
MAC_Z T3, T2, T10
MUL T10, T7, T10
ADD T4, T10, T4
DIV T4, T8, T4
STORE T4, O[0:3, :]
STORE T8, l[0:3]
STORE T9, m[0:3]
LOAD Q[3:5, :], T0
LOAD O[3:5, :], T4
LOAD l[3:5], T5
LOAD m[3:5], T6
MAC_Z T0, T1.T, T3
ROWMAX T3, T7
SUB T3, T7, T3
EXP T3, T3
ROWSUM T3, T8
MAX T6, T7, T9
SUB T6, T9, T6
EXP T6, T6
SUB T7, T9, T7
EXP T7, T7
MUL T5, T6, T6
MUL T8, T7, T8
ADD T6, T8, T8
MUL T4, T6, T4
MAC_Z T3, T2, T10
MUL T10, T7, T10
ADD T4, T10, T4
DIV T4, T8, T4
STORE T4, O[3:5, :]
STORE T8, l[3:5]
STORE T9, m[3:5]
