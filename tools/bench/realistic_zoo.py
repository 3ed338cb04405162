"""Models at the sizes users compile (issue 18's "zoo at realistic sizes"),
with random weights and nothing downloaded. The small zoo (model_zoo.ZOO)
stays what the tests run; these are for the benchmarks (compile_bench.py
--zoo realistic), which take minutes each on 2 cores.

Attention uses F.scaled_dot_product_attention, as transformers models do.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from model_zoo import RMSNorm


class SelfAttention(nn.Module):
    """Multi-head self-attention through SDPA; kv_heads < heads is grouped-query
    attention; rope applies rotary position embeddings to q and k."""

    def __init__(self, dim, heads, causal, kv_heads=None, rope=False, bias=True):
        super().__init__()
        self.heads, self.kv_heads = heads, kv_heads or heads
        self.head_dim = dim // heads
        self.causal, self.rope = causal, rope
        self.q = nn.Linear(dim, dim, bias=bias)
        self.kv = nn.Linear(dim, 2 * self.kv_heads * self.head_dim, bias=bias)
        self.out = nn.Linear(dim, dim, bias=bias)

    def forward(self, x):
        batch, seq, dim = x.shape
        q = self.q(x).view(batch, seq, self.heads, self.head_dim).transpose(1, 2)
        k, v = (t.view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
                for t in self.kv(x).chunk(2, dim=-1))
        if self.rope:
            q, k = rotary(q), rotary(k)
        if self.kv_heads != self.heads:
            repeat = self.heads // self.kv_heads
            k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.out(y.transpose(1, 2).reshape(batch, seq, dim))


def rotary(x, base=10000.0):
    """Rotary position embedding over the last dimension of (b, h, seq, d)."""
    seq, dim = x.shape[-2], x.shape[-1]
    inv_freq = 1.0 / base ** (torch.arange(0, dim, 2, device=x.device, dtype=torch.float32) / dim)
    angles = torch.arange(seq, device=x.device, dtype=torch.float32)[:, None] * inv_freq
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class GPT2Decoder(nn.Module):
    """Pre-norm decoder blocks (causal attention, tanh-GELU MLP), final norm."""

    def __init__(self, dim=768, heads=12, layers=4):
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.ModuleDict({
                "ln1": nn.LayerNorm(dim), "attn": SelfAttention(dim, heads, causal=True),
                "ln2": nn.LayerNorm(dim),
                "mlp": nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"),
                                     nn.Linear(4 * dim, dim))})
            for _ in range(layers))
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        for b in self.blocks:
            x = x + b["attn"](b["ln1"](x))
            x = x + b["mlp"](b["ln2"](x))
        return self.norm(x)


class BertEncoder(nn.Module):
    """Post-norm encoder layers (bidirectional attention, GELU MLP)."""

    def __init__(self, dim=768, heads=12, layers=4):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.ModuleDict({
                "attn": SelfAttention(dim, heads, causal=False), "ln1": nn.LayerNorm(dim),
                "mlp": nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(),
                                     nn.Linear(4 * dim, dim)),
                "ln2": nn.LayerNorm(dim)})
            for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = layer["ln1"](x + layer["attn"](x))
            x = layer["ln2"](x + layer["mlp"](x))
        return x


class LlamaDecoder(nn.Module):
    """RMSNorm, rotary embeddings, grouped-query attention, SwiGLU MLP."""

    def __init__(self, dim=1024, heads=16, kv_heads=4, layers=2, hidden=2816):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.ModuleDict({
                "norm1": RMSNorm(dim),
                "attn": SelfAttention(dim, heads, causal=True, kv_heads=kv_heads, rope=True,
                                      bias=False),
                "norm2": RMSNorm(dim),
                "gate": nn.Linear(dim, hidden, bias=False), "up": nn.Linear(dim, hidden, bias=False),
                "down": nn.Linear(hidden, dim, bias=False)})
            for _ in range(layers))
        self.norm = RMSNorm(dim)

    def forward(self, x):
        for layer in self.layers:
            x = x + layer["attn"](layer["norm1"](x))
            h = layer["norm2"](x)
            x = x + layer["down"](F.silu(layer["gate"](h)) * layer["up"](h))
        return self.norm(x)


class BasicBlock(nn.Module):
    def __init__(self, inputs, outputs, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.down = None
        if stride != 1 or inputs != outputs:
            self.down = nn.Sequential(nn.Conv2d(inputs, outputs, 1, stride, bias=False),
                                      nn.BatchNorm2d(outputs))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    """torchvision's resnet18 architecture (BasicBlock, [2, 2, 2, 2])."""

    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        stages, inputs = [], 64
        for outputs, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            stages += [BasicBlock(inputs, outputs, stride), BasicBlock(outputs, outputs, 1)]
            inputs = outputs
        self.stages = nn.Sequential(*stages)
        self.head = nn.Linear(512, classes)

    def forward(self, x):
        x = self.stages(self.stem(x))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


REALISTIC_ZOO = {
    "gpt2_small4": (lambda: GPT2Decoder(), lambda: (torch.randn(2, 256, 768),)),
    "bert_base4": (lambda: BertEncoder(), lambda: (torch.randn(8, 128, 768),)),
    "resnet18": (lambda: ResNet18(), lambda: (torch.randn(4, 3, 224, 224),)),
    "llama2l": (lambda: LlamaDecoder(), lambda: (torch.randn(1, 256, 1024),)),
}
