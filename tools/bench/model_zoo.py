"""The model zoo of the torch.compile tests, benchmark and demo: small
models of the kinds users compile, with random weights (nothing downloaded).

Each entry builds (model, example inputs) from a seed; `transformers` models
come from small configs.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    def __init__(self, width=256, depth=3, classes=10):
        super().__init__()
        layers = []
        for _ in range(depth):
            layers += [nn.Linear(width, width), nn.GELU(), nn.LayerNorm(width)]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.body(x))


class SmallCNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(32, classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim) + 0.1 * torch.randn(dim))

    def forward(self, x):
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(variance + self.eps)).to(x.dtype) * self.weight


class Attention(nn.Module):
    """Multi-head attention written out (softmax(QK^T/sqrt(d) + mask) V)."""

    def __init__(self, dim, heads, causal):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        batch, seq, dim = x.shape
        q, k, v = self.qkv(x).split(dim, dim=-1)
        shape = (batch, seq, self.heads, dim // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-1, -2) / math.sqrt(dim // self.heads)
        if self.causal:
            mask = torch.ones(seq, seq, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
        out = scores.softmax(-1) @ v
        return self.proj(out.transpose(1, 2).reshape(batch, seq, dim))


class GPT2Block(nn.Module):
    """Pre-norm decoder block: causal attention and a GELU MLP."""

    def __init__(self, dim=128, heads=4):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = Attention(dim, heads, causal=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class BertLayer(nn.Module):
    """Post-norm encoder layer: bidirectional attention and a GELU MLP."""

    def __init__(self, dim=128, heads=4):
        super().__init__()
        self.attn = Attention(dim, heads, causal=False)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))


class RMSNormMLP(nn.Module):
    """A LLaMA-style feed-forward: RMSNorm, SiLU-gated MLP, residual."""

    def __init__(self, dim=128):
        super().__init__()
        self.norm = RMSNorm(dim)
        self.gate, self.up = nn.Linear(dim, 2 * dim, bias=False), nn.Linear(dim, 2 * dim, bias=False)
        self.down = nn.Linear(2 * dim, dim, bias=False)

    def forward(self, x):
        h = self.norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def _hf_gpt2():
    from transformers import GPT2Config, GPT2Model

    config = GPT2Config(n_layer=2, n_head=4, n_embd=128, vocab_size=512, n_positions=128,
                        attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0, bos_token_id=0,
                        eos_token_id=0)
    return GPT2Model(config)


def _hf_bert():
    from transformers import BertConfig, BertModel

    config = BertConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
                        intermediate_size=256, vocab_size=512, max_position_embeddings=128,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return BertModel(config, add_pooling_layer=False)


def _tokens(batch=4, seq=64):
    return (torch.randint(0, 512, (batch, seq)),)


ZOO = {
    "mlp": (lambda: MLP(), lambda: (torch.randn(64, 256),)),
    "cnn": (lambda: SmallCNN(), lambda: (torch.randn(8, 3, 32, 32),)),
    "gpt2_block": (lambda: GPT2Block(), lambda: (torch.randn(4, 64, 128),)),
    "bert_layer": (lambda: BertLayer(), lambda: (torch.randn(4, 64, 128),)),
    "rmsnorm_mlp": (lambda: RMSNormMLP(), lambda: (torch.randn(4, 64, 128),)),
    "hf_gpt2": (_hf_gpt2, _tokens),
    "hf_bert": (_hf_bert, _tokens),
}


def entries() -> dict:
    """The small zoo and the realistic one (realistic_zoo.py, benchmarks only)."""
    from realistic_zoo import REALISTIC_ZOO

    return {**ZOO, **REALISTIC_ZOO}


def build(name: str, seed: int = 0):
    """(model in eval mode, example inputs) of a zoo entry, on the CPU."""
    make_model, make_inputs = ZOO[name] if name in ZOO else entries()[name]
    torch.manual_seed(seed)
    model = make_model().eval()
    return model, make_inputs()


def first_tensor(output):
    """The main tensor of a model's output (transformers return objects)."""
    if isinstance(output, torch.Tensor):
        return output
    if hasattr(output, "last_hidden_state"):
        return output.last_hidden_state
    return output[0]
