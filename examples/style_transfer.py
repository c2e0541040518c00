"""Fast neural style transfer (Johnson et al., 2016) in miniature: an image transformation
network (strided convolutions down, residual blocks, ``nn.Upsample`` + convolution up, every
convolution followed by ``nn.InstanceNorm2d``) is trained so that its output keeps the content of
its input while taking the texture statistics (Gram matrices) of a style image.

The perceptual loss needs a feature extractor; a pretrained VGG would mean a download, so a
small fixed convolutional network with random weights stands in (random features carry texture
statistics well enough for a demo). The content images are synthetic shapes and the style image
is a pattern of coloured stripes, all generated here.

Written against ember's names; the body runs unchanged on PyTorch when the imports at the top are
switched back (``import torch``, ``import torch.nn as nn``, ...).

    python examples/style_transfer.py --steps 40
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


def content_images(n: int, size: int, generator):
    """Random discs and rectangles on a gradient background, RGB in [0, 1]."""
    coords = torch.linspace(0.0, 1.0, size)
    yy, xx = coords.view(size, 1), coords.view(1, size)
    images = []
    for _ in range(n):
        base = torch.rand(3, 1, 1, generator=generator)
        img = (0.3 + 0.4 * base) * (0.6 + 0.4 * yy)
        cy, cx, rad = (torch.rand(3, generator=generator) * torch.tensor([0.6, 0.6, 0.2])
                       + torch.tensor([0.2, 0.2, 0.1])).tolist()
        disc = (((yy - cy) ** 2 + (xx - cx) ** 2) < rad ** 2).float()
        colour = torch.rand(3, 1, 1, generator=generator)
        img = img * (1 - disc) + colour * disc
        y0, x0 = (torch.rand(2, generator=generator) * 0.5).tolist()
        rect = ((yy > y0) & (yy < y0 + 0.3) & (xx > x0) & (xx < x0 + 0.4)).float()
        img = img * (1 - rect) + torch.rand(3, 1, 1, generator=generator) * rect
        images.append(img.expand(3, size, size))
    return torch.stack(images)


def style_image(size: int):
    """Diagonal stripes in three colours."""
    coords = torch.arange(size, dtype=torch.float32)
    phase = (coords.view(size, 1) + coords.view(1, size)) * (2 * math.pi / 8)
    return torch.stack([0.5 + 0.5 * torch.sin(phase),
                        0.5 + 0.5 * torch.sin(phase + 2.0),
                        0.5 + 0.5 * torch.sin(phase + 4.0)]).unsqueeze(0)


class ConvLayer(nn.Sequential):
    def __init__(self, cin: int, cout: int, kernel: int, stride: int = 1) -> None:
        super().__init__(nn.ReflectionPad2d(kernel // 2), nn.Conv2d(cin, cout, kernel, stride))


class ResidualBlock(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.block = nn.Sequential(
            ConvLayer(channels, channels, 3), nn.InstanceNorm2d(channels, affine=True), nn.ReLU(),
            ConvLayer(channels, channels, 3), nn.InstanceNorm2d(channels, affine=True))

    def forward(self, x):
        return x + self.block(x)


class UpsampleConv(nn.Sequential):
    """Nearest-neighbour upsampling then a convolution (no checkerboard artefacts)."""

    def __init__(self, cin: int, cout: int, kernel: int, scale: int) -> None:
        super().__init__(nn.Upsample(scale_factor=scale, mode="nearest"),
                         ConvLayer(cin, cout, kernel))


class TransformerNet(nn.Module):
    def __init__(self, width: int = 16, residual_blocks: int = 2) -> None:
        super().__init__()
        self.down = nn.Sequential(
            ConvLayer(3, width, 5), nn.InstanceNorm2d(width, affine=True), nn.ReLU(),
            ConvLayer(width, 2 * width, 3, stride=2), nn.InstanceNorm2d(2 * width, affine=True),
            nn.ReLU())
        self.res = nn.Sequential(*[ResidualBlock(2 * width) for _ in range(residual_blocks)])
        self.up = nn.Sequential(
            UpsampleConv(2 * width, width, 3, scale=2), nn.InstanceNorm2d(width, affine=True),
            nn.ReLU(), ConvLayer(width, 3, 5))

    def forward(self, x):
        return torch.sigmoid(self.up(self.res(self.down(x))))


class Features(nn.Module):
    """A frozen random conv net standing in for VGG: returns the activations of each stage."""

    def __init__(self) -> None:
        super().__init__()
        self.stages = nn.ModuleList([
            nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU()),
            nn.Sequential(nn.AvgPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU()),
            nn.Sequential(nn.AvgPool2d(2), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU()),
        ])
        for p in self.parameters():
            p.requires_grad_(False)

    def forward(self, x):
        outs = []
        for stage in self.stages:
            x = stage(x)
            outs.append(x)
        return outs


def gram_matrix(y):
    b, c, h, w = y.size()
    features = y.view(b, c, h * w)
    return features.bmm(features.transpose(1, 2)) / (c * h * w)


def relative_mse(x, target):
    """Mean squared error relative to the target's mean square, so that the random feature
    network's small activations and every layer weigh alike."""
    return F.mse_loss(x, target) / target.detach().pow(2).mean().clamp(min=1e-12)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Train a small fast-style-transfer network on synthetic images.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--steps", type=int, default=40, help="optimization steps")
    parser.add_argument("--size", type=int, default=32, help="image side")
    parser.add_argument("--batch-size", type=int, default=4, help="content images per step")
    parser.add_argument("--width", type=int, default=16, help="channels of the first conv")
    parser.add_argument("--content-weight", type=float, default=1.0, help="content loss weight")
    parser.add_argument("--style-weight", type=float, default=5.0, help="style loss weight")
    parser.add_argument("--lr", type=float, default=3e-3, help="Adam learning rate")
    parser.add_argument("--log-every", type=int, default=10, help="print every N steps")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    if args.size % 4:
        parser.error("--size must be a multiple of 4")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    net = TransformerNet(args.width)
    features = Features().eval()
    optimizer = optim.Adam(net.parameters(), lr=args.lr)
    with no_grad():
        style_grams = [gram_matrix(f) for f in features(style_image(args.size))]
    print(f"transformer net: {sum(p.numel() for p in net.parameters()):,} parameters; "
          f"style: stripes, {args.size}x{args.size}")

    history = []
    for step in range(1, args.steps + 1):
        x = content_images(args.batch_size, args.size, gen)
        y = net(x)
        feats_y, feats_x = features(y), features(x)
        content_loss = args.content_weight * relative_mse(feats_y[1], feats_x[1])
        style_loss = args.style_weight * sum(
            relative_mse(gram_matrix(fy), gs.expand(fy.size(0), -1, -1))
            for fy, gs in zip(feats_y, style_grams)) / len(style_grams)
        loss = content_loss + style_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append((content_loss.item(), style_loss.item(), loss.item()))
        if step % args.log_every == 0 or step == args.steps:
            print(f"step {step:4d}  content {content_loss.item():.4f}  "
                  f"style {style_loss.item():.4f}  total {loss.item():.4f}", flush=True)

    with no_grad():
        x = content_images(2, args.size, gen)
        stylized = net(x)
        before = sum(relative_mse(gram_matrix(f), g.expand(2, -1, -1))
                     for f, g in zip(features(x), style_grams)) / len(style_grams)
        after = sum(relative_mse(gram_matrix(f), g.expand(2, -1, -1))
                    for f, g in zip(features(stylized), style_grams)) / len(style_grams)
    print(f"output {tuple(stylized.shape)} in [{stylized.min().item():.2f}, "
          f"{stylized.max().item():.2f}]")
    print(f"style distance of held-out images: {before.item():.4f} before, "
          f"{after.item():.4f} after stylization")
    window = max(1, min(5, len(history) // 3))
    first = sum(h[2] for h in history[:window]) / window
    last = sum(h[2] for h in history[-window:]) / window
    print(f"loss went from {first:.4f} to {last:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
