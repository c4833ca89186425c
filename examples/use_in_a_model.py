"""kernels_gpu's attention inside a PyTorch model: the SDPA drop-in, torch.compile, training.

    python examples/use_in_a_model.py

A nanoGPT-style transformer block calls `attn(q, k, v, is_causal=True)`; this script builds it
once with torch's scaled_dot_product_attention and once with kernels_gpu's (same signature),
trains each three AdamW steps from the same initial weights and data, and prints the losses
side by side; it asks dynamo how torch.compile(fullgraph=True) traces the block (graphs, graph
breaks, and the custom operator in the graph); and it shows what an argument the kernel does
not compute gives. On a machine without CUDA the kernel runs in Triton's interpreter (tiny
sizes: a few seconds).
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from kernels_gpu import SDPAUnsupported, scaled_dot_product_attention

DEV = "cuda" if torch.cuda.is_available() else "cpu"


class Block(nn.Module):
    """Pre-norm causal self-attention and an MLP; `attn` has torch's SDPA signature."""

    def __init__(self, dim: int, heads: int, attn) -> None:
        super().__init__()
        self.heads, self.attn = heads, attn
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.c_attn, self.c_proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = self.attn(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c)
        x = x + self.c_proj(y)
        return x + self.mlp(self.ln2(x))


def train(attn, steps: int = 3) -> list[float]:
    torch.manual_seed(0)
    model = Block(32, 2, attn).to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(1)
    x, target = (torch.randn(2, 16, 32, generator=g).to(DEV) for _ in range(2))
    losses = []
    for _ in range(steps):
        loss = F.mse_loss(model(x), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main() -> None:
    print("step  torch SDPA  kernels_gpu")
    for i, (a, b) in enumerate(zip(train(F.scaled_dot_product_attention),
                                   train(scaled_dot_product_attention), strict=False)):
        print(f"{i:>4}  {a:10.4f}  {b:11.4f}")

    block = Block(32, 2, scaled_dot_product_attention).to(DEV)
    x = torch.randn(2, 16, 32, device=DEV)
    explained = torch._dynamo.explain(block)(x)
    ops = sorted({str(n.target) for gm in explained.graphs for n in gm.graph.nodes
                  if "kernels_gpu" in str(n.target)})
    print(f"torch.compile: {explained.graph_count} graph, "
          f"{explained.graph_break_count} graph breaks; custom op: {', '.join(ops)}")
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    print("compiled == eager:", torch.equal(compiled(x), block(x)))

    q = torch.randn(1, 2, 16, 16, device=DEV)
    try:
        scaled_dot_product_attention(q, q, q, dropout_p=0.1)
    except SDPAUnsupported as err:
        print(f"SDPAUnsupported ({err.argument}): {err.reason}")
        print(f"  {err.suggestion}")


if __name__ == "__main__":
    main()
