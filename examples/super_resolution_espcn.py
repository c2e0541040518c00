"""ESPCN super-resolution (Shi et al., 2016): convolutions on the low-resolution image, then
``nn.PixelShuffle`` rearranges ``r*r`` channels into an image ``r`` times larger.

The images are synthetic and smooth (random sums of Gaussian blobs and sinusoids, generated
here, nothing downloaded). Each high-resolution image is shrunk by ``--upscale`` with
``F.interpolate(mode="area")``; the network learns to undo that. Its PSNR on held-out images is
compared with the classic baseline, bicubic upsampling by ``F.interpolate(mode="bicubic")``.

Written against ember's names; the body runs unchanged on PyTorch when the imports at the top are
switched back (``import torch``, ``import torch.nn as nn``, ...).

    python examples/super_resolution_espcn.py --steps 300
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


def synthetic_images(n: int, size: int, generator):
    """``n`` smooth 1-channel images in [0, 1]: a few Gaussian blobs plus a plane wave."""
    coords = torch.linspace(-1.0, 1.0, size)
    yy = coords.view(1, size, 1)
    xx = coords.view(1, 1, size)
    images = torch.zeros(n, size, size)
    for _ in range(4):
        cy, cx = torch.rand(2, n, 1, 1, generator=generator) * 2 - 1
        width = 0.15 + 0.35 * torch.rand(n, 1, 1, generator=generator)
        weight = torch.rand(n, 1, 1, generator=generator) * 2 - 1
        images = images + weight * torch.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / width ** 2)
    freq = 2 + 6 * torch.rand(2, n, 1, 1, generator=generator)
    images = images + 0.3 * torch.sin(math.pi * (freq[0] * xx + freq[1] * yy))
    lo = images.amin(dim=(1, 2), keepdim=True)
    hi = images.amax(dim=(1, 2), keepdim=True)
    return ((images - lo) / (hi - lo)).unsqueeze(1)


class ESPCN(nn.Module):
    """conv5x5 - tanh - conv3x3 - tanh - conv3x3 (r*r channels) - PixelShuffle(r)."""

    def __init__(self, upscale: int, channels: int = 1, width: int = 32) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels, width, kernel_size=5, padding=2),
            nn.Tanh(),
            nn.Conv2d(width, width // 2, kernel_size=3, padding=1),
            nn.Tanh(),
            nn.Conv2d(width // 2, channels * upscale ** 2, kernel_size=3, padding=1),
        )
        self.shuffle = nn.PixelShuffle(upscale)

    def forward(self, x):
        return self.shuffle(self.body(x)).clamp(0.0, 1.0)


def psnr(pred, target) -> float:
    mse = F.mse_loss(pred, target).item()
    return 10 * math.log10(1.0 / max(mse, 1e-12))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Train an ESPCN super-resolution net on synthetic images.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--steps", type=int, default=300, help="training steps")
    parser.add_argument("--upscale", type=int, default=2, help="upscaling factor r")
    parser.add_argument("--size", type=int, default=32, help="high-resolution image side")
    parser.add_argument("--batch-size", type=int, default=16, help="images per step")
    parser.add_argument("--width", type=int, default=32, help="channels of the first conv")
    parser.add_argument("--lr", type=float, default=3e-3, help="Adam learning rate")
    parser.add_argument("--log-every", type=int, default=50, help="print every N steps")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    if args.upscale < 2 or args.size % args.upscale:
        parser.error("--upscale must be at least 2 and divide --size")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    r = args.upscale
    model = ESPCN(r, width=args.width)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    print(f"ESPCN x{r}: {sum(p.numel() for p in model.parameters()):,} parameters, "
          f"{args.size // r}x{args.size // r} -> {args.size}x{args.size}")

    with no_grad():
        test_hr = synthetic_images(64, args.size, gen)
        test_lr = F.interpolate(test_hr, scale_factor=1 / r, mode="area")
        bicubic = F.interpolate(test_lr, scale_factor=r, mode="bicubic",
                                align_corners=False).clamp(0.0, 1.0)
        print(f"bicubic baseline: PSNR {psnr(bicubic, test_hr):.2f} dB")

    losses = []
    for step in range(1, args.steps + 1):
        model.train()
        hr = synthetic_images(args.batch_size, args.size, gen)
        lr_images = F.interpolate(hr, size=(args.size // r, args.size // r), mode="area")
        loss = F.mse_loss(model(lr_images), hr)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % args.log_every == 0 or step == args.steps:
            print(f"step {step:5d}  loss {loss.item():.5f}", flush=True)

    model.eval()
    with no_grad():
        sr = model(test_lr)
        espcn_psnr, bicubic_psnr = psnr(sr, test_hr), psnr(bicubic, test_hr)
    first, last = sum(losses[:5]) / len(losses[:5]), sum(losses[-5:]) / len(losses[-5:])
    print(f"loss went from {first:.5f} to {last:.5f}")
    print(f"held-out PSNR: ESPCN {espcn_psnr:.2f} dB, bicubic {bicubic_psnr:.2f} dB "
          f"({espcn_psnr - bicubic_psnr:+.2f} dB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
