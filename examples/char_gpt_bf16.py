"""A character-level GPT (decoder-only Transformer, in the spirit of minGPT / nanoGPT) trained
under bfloat16 mixed precision on the CPU.

The forward pass and the loss run inside ``autocast("cpu", dtype=bfloat16)``: matrix products
and linear layers compute in bfloat16 while the parameters, the optimizer and the reductions
stay in float32. ``--grad-scaler`` adds a ``GradScaler`` (not needed for bfloat16, whose range is
float32's, but the same loop then works for float16 on a GPU). The corpus is a few lines of text
kept in this file; after training the model samples a continuation of a prompt.

Written against ember's names; the body runs unchanged on PyTorch when the imports at the top are
switched back (``import torch``, ``import torch.nn as nn``, ...).

    python examples/char_gpt_bf16.py --steps 200
"""

from __future__ import annotations

import argparse
import math
import sys

import ember.nn as nn
import ember.nn.functional as F
import ember.optim as optim
import ember.tensor as torch
from ember.autograd import no_grad

CORPUS = """\
the quick brown fox jumps over the lazy dog.
a small model learns the shape of the words it reads.
the dog sleeps in the sun and the fox runs in the wood.
to be or not to be, that is the question.
all that glitters is not gold; all who wander are not lost.
the rain in spain stays mainly in the plain.
"""


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_head: int, dropout: float) -> None:
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.dropout = dropout

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))


class Block(nn.Module):
    def __init__(self, d_model: int, n_head: int, dropout: float) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, dropout)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                 nn.Linear(4 * d_model, d_model), nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab: int, block_size: int, d_model: int, n_head: int, n_layer: int,
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.block_size = block_size
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(block_size, d_model)
        self.blocks = nn.Sequential(*[Block(d_model, n_head, dropout) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.tok.weight = self.head.weight            # weight tying
        self.apply(self._init)

    @staticmethod
    def _init(module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx):
        t = idx.size(1)
        x = self.tok(idx) + self.pos(torch.arange(t))
        return self.head(self.ln_f(self.blocks(x)))

    @no_grad()
    def generate(self, idx, new_tokens: int, temperature: float = 1.0, generator=None):
        for _ in range(new_tokens):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = self(idx[:, -self.block_size:])[:, -1]
            probs = F.softmax(logits.float() / temperature, dim=-1)
            idx = torch.cat([idx, torch.multinomial(probs, 1, generator=generator)], dim=1)
        return idx


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Train a character-level GPT under bfloat16 autocast on the CPU.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--steps", type=int, default=200, help="training steps")
    parser.add_argument("--batch-size", type=int, default=16, help="sequences per step")
    parser.add_argument("--block-size", type=int, default=32, help="context length")
    parser.add_argument("--d-model", type=int, default=64, help="model width")
    parser.add_argument("--n-head", type=int, default=4, help="attention heads")
    parser.add_argument("--n-layer", type=int, default=2, help="transformer blocks")
    parser.add_argument("--lr", type=float, default=3e-3, help="AdamW learning rate")
    parser.add_argument("--grad-scaler", action="store_true",
                        help="scale the loss with amp.GradScaler (for float16; no-op need here)")
    parser.add_argument("--sample-chars", type=int, default=80, help="characters to sample")
    parser.add_argument("--log-every", type=int, default=50, help="print every N steps")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    if args.d_model % args.n_head:
        parser.error("--d-model must be a multiple of --n-head")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    chars = sorted(set(CORPUS))
    stoi = {ch: i for i, ch in enumerate(chars)}
    data = torch.tensor([stoi[ch] for ch in CORPUS], dtype=torch.long)

    def get_batch():
        starts = torch.randint(len(data) - args.block_size - 1, (args.batch_size,),
                               generator=gen)
        x = torch.stack([data[s:s + args.block_size] for s in starts.tolist()])
        y = torch.stack([data[s + 1:s + 1 + args.block_size] for s in starts.tolist()])
        return x, y

    model = GPT(len(chars), args.block_size, args.d_model, args.n_head, args.n_layer)
    optimizer = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    scaler = torch.amp.GradScaler("cpu", enabled=args.grad_scaler)
    print(f"GPT: {sum(p.numel() for p in model.parameters()):,} parameters, vocabulary "
          f"{len(chars)} characters, corpus {len(data)} characters; uniform loss "
          f"{math.log(len(chars)):.3f}")

    losses = []
    for step in range(1, args.steps + 1):
        x, y = get_batch()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        if step == 1:
            print(f"under autocast: logits {logits.dtype}, loss {loss.dtype}, "
                  f"parameters {model.head.weight.dtype}")
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
        if step % args.log_every == 0 or step == args.steps:
            print(f"step {step:5d}  loss {loss.item():.4f}", flush=True)

    model.eval()
    prompt = "the "
    idx = torch.tensor([[stoi[ch] for ch in prompt]], dtype=torch.long)
    out = model.generate(idx, args.sample_chars, temperature=0.8, generator=gen)
    text = "".join(chars[i] for i in out[0].tolist())
    window = max(1, min(10, len(losses) // 2))
    first, last = sum(losses[:window]) / window, sum(losses[-window:]) / window
    print(f"loss went from {first:.4f} to {last:.4f}")
    print("sample: " + repr(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
