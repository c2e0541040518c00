"""A sequence-to-sequence ``nn.Transformer`` that learns to translate a digit string into its
reverse (``3 1 4 1 5`` -> ``5 1 4 1 3``), a toy translation task.

Source and target sentences have different lengths within a batch, so the script uses every
mask a translation model needs: ``src_key_padding_mask`` / ``tgt_key_padding_mask`` /
``memory_key_padding_mask`` for the padding, and ``nn.Transformer.generate_square_subsequent_mask``
as the causal ``tgt_mask`` of the decoder (teacher forcing). After training it translates
held-out sentences greedily, one token at a time, and prints the exact-match accuracy.

Written against ember's names; the body runs unchanged on PyTorch when the imports at the top are
switched back (``import torch``, ``import torch.nn as nn``, ...).

    python examples/transformer_translation.py --steps 300
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

PAD, BOS, EOS = 0, 1, 2
N_DIGITS = 10                       # tokens 3..12 are the digits 0..9
VOCAB = 3 + N_DIGITS


def make_batch(batch_size: int, min_len: int, max_len: int, generator):
    """Random digit sentences and their reverses, padded: (src, tgt_in, tgt_out)."""
    lengths = torch.randint(min_len, max_len + 1, (batch_size,), generator=generator).tolist()
    src = torch.full((batch_size, max_len), PAD, dtype=torch.long)
    tgt_in = torch.full((batch_size, max_len + 1), PAD, dtype=torch.long)
    tgt_out = torch.full((batch_size, max_len + 1), PAD, dtype=torch.long)
    for i, n in enumerate(lengths):
        words = torch.randint(3, VOCAB, (n,), generator=generator)
        src[i, :n] = words
        reverse = words.flip(0)
        tgt_in[i, 0] = BOS
        tgt_in[i, 1:n + 1] = reverse
        tgt_out[i, :n] = reverse
        tgt_out[i, n] = EOS
    return src, tgt_in, tgt_out


class PositionalEncoding(nn.Module):
    """The sinusoidal position code of "Attention is all you need", added to the embeddings."""

    def __init__(self, d_model: int, max_len: int = 64, dropout: float = 0.0) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
        div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32)
                        * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div)
        pe[:, 1::2] = torch.cos(position * div)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return self.dropout(x + self.pe[: x.size(1)])


class Translator(nn.Module):
    def __init__(self, d_model: int, nhead: int, layers: int, ff: int, dropout: float) -> None:
        super().__init__()
        self.d_model = d_model
        self.src_embed = nn.Embedding(VOCAB, d_model, padding_idx=PAD)
        self.tgt_embed = nn.Embedding(VOCAB, d_model, padding_idx=PAD)
        self.position = PositionalEncoding(d_model, dropout=dropout)
        self.transformer = nn.Transformer(
            d_model=d_model, nhead=nhead, num_encoder_layers=layers,
            num_decoder_layers=layers, dim_feedforward=ff, dropout=dropout,
            activation="gelu", batch_first=True, norm_first=True)
        self.generator = nn.Linear(d_model, VOCAB)

    def embed(self, embedding, tokens):
        return self.position(embedding(tokens) * math.sqrt(self.d_model))

    def encode(self, src):
        src_pad = src == PAD
        memory = self.transformer.encoder(self.embed(self.src_embed, src),
                                          src_key_padding_mask=src_pad)
        return memory, src_pad

    def decode(self, tgt_in, memory, src_pad):
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt_in.size(1))
        out = self.transformer.decoder(
            self.embed(self.tgt_embed, tgt_in), memory, tgt_mask=tgt_mask,
            tgt_key_padding_mask=tgt_in == PAD, memory_key_padding_mask=src_pad,
            tgt_is_causal=True)
        return self.generator(out)

    def forward(self, src, tgt_in):
        src_pad = src == PAD
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt_in.size(1))
        out = self.transformer(
            self.embed(self.src_embed, src), self.embed(self.tgt_embed, tgt_in),
            tgt_mask=tgt_mask, src_key_padding_mask=src_pad,
            tgt_key_padding_mask=tgt_in == PAD, memory_key_padding_mask=src_pad,
            tgt_is_causal=True)
        return self.generator(out)

    def greedy_translate(self, src, max_len: int):
        memory, src_pad = self.encode(src)
        ys = torch.full((src.size(0), 1), BOS, dtype=torch.long)
        for _ in range(max_len + 1):
            logits = self.decode(ys, memory, src_pad)
            next_token = logits[:, -1].argmax(-1, keepdim=True)
            ys = torch.cat([ys, next_token], dim=1)
        return ys[:, 1:]


def exact_match(pred, tgt_out) -> float:
    """Share of sentences whose every token up to and including EOS is right."""
    mask = tgt_out != PAD
    correct = ((pred[:, : tgt_out.size(1)] == tgt_out) | ~mask).all(dim=1)
    return correct.float().mean().item()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Train nn.Transformer to reverse digit strings (toy translation).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--steps", type=int, default=300, help="training steps")
    parser.add_argument("--batch-size", type=int, default=32, help="sentences per step")
    parser.add_argument("--min-len", type=int, default=3, help="shortest sentence")
    parser.add_argument("--max-len", type=int, default=7, help="longest sentence")
    parser.add_argument("--d-model", type=int, default=32, help="model width")
    parser.add_argument("--nhead", type=int, default=4, help="attention heads")
    parser.add_argument("--layers", type=int, default=2, help="encoder and decoder layers")
    parser.add_argument("--lr", type=float, default=3e-3, help="Adam learning rate")
    parser.add_argument("--eval-size", type=int, default=200,
                        help="held-out sentences translated greedily at the end")
    parser.add_argument("--log-every", type=int, default=50, help="print every N steps")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    if not 1 <= args.min_len <= args.max_len:
        parser.error("need 1 <= --min-len <= --max-len")
    if args.eval_size < 1:
        parser.error("--eval-size must be at least 1")
    if args.d_model % args.nhead:
        parser.error("--d-model must be a multiple of --nhead")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    model = Translator(args.d_model, args.nhead, args.layers, 2 * args.d_model, dropout=0.0)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    print(f"model: {sum(p.numel() for p in model.parameters()):,} parameters, "
          f"task: reverse {args.min_len}-{args.max_len} digits")

    losses = []
    for step in range(1, args.steps + 1):
        model.train()
        src, tgt_in, tgt_out = make_batch(args.batch_size, args.min_len, args.max_len, gen)
        logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt_out.reshape(-1),
                               ignore_index=PAD)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        if step % args.log_every == 0 or step == args.steps:
            print(f"step {step:5d}  loss {loss.item():.4f}", flush=True)

    model.eval()
    with no_grad():
        src, _, tgt_out = make_batch(args.eval_size, args.min_len, args.max_len, gen)
        pred = model.greedy_translate(src, args.max_len)
        accuracy = exact_match(pred, tgt_out)
        example = src[0][src[0] != PAD].tolist()
        translated = pred[0].tolist()
    digits = [t - 3 for t in example]
    out = [t - 3 for t in translated[: translated.index(EOS)]] if EOS in translated else [
        t - 3 for t in translated]
    print(f"example: {digits} -> {out}")
    first, last = sum(losses[:5]) / len(losses[:5]), sum(losses[-5:]) / len(losses[-5:])
    print(f"loss went from {first:.4f} to {last:.4f}")
    print(f"greedy exact-match accuracy on {args.eval_size} held-out sentences: "
          f"{100 * accuracy:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
