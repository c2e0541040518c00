"""A DCGAN (Radford et al., 2016) on synthetic 16x16 images, written the way many training
scripts are: top-level code with no ``if __name__ == "__main__":`` guard, and a ``DataLoader``
that fetches batches in two worker processes.

On Linux, PyTorch starts workers by forking, so such a script works; ember's DataLoader does the
same (and keeps its parallel kernels fork-safe). Each sample reports the worker that made it,
and the script prints which workers served its batches. The images (a bright disc of random
position and size on a dark background) are drawn in the dataset's ``__getitem__``, as a real
dataset decodes files there.

Written against ember's names; the body runs unchanged on PyTorch when the imports at the top are
switched back (``import torch``, ``from torch.utils.data import DataLoader, ...``).

    python examples/dcgan_workers.py --steps 60
"""

import argparse
import time

import ember.nn as nn
import ember.optim as optim
import ember.tensor as torch
from ember.autograd import no_grad
from ember.data import DataLoader, Dataset, get_worker_info

parser = argparse.ArgumentParser(
    description="Train a DCGAN on synthetic discs with a two-worker DataLoader, from a script "
    "with no __main__ guard.",
    formatter_class=argparse.ArgumentDefaultsHelpFormatter)
parser.add_argument("--steps", type=int, default=60, help="training steps (batches)")
parser.add_argument("--batch-size", type=int, default=32, help="images per batch")
parser.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
parser.add_argument("--nz", type=int, default=16, help="size of the latent vector")
parser.add_argument("--ngf", type=int, default=16, help="generator feature maps")
parser.add_argument("--ndf", type=int, default=16, help="discriminator feature maps")
parser.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate")
parser.add_argument("--log-every", type=int, default=10, help="print every N steps")
parser.add_argument("--seed", type=int, default=0, help="random seed")
args = parser.parse_args()
if args.steps < 1:
    parser.error("--steps must be at least 1")
if args.workers < 0:
    parser.error("--workers must be non-negative")


class Discs(Dataset):
    """Image ``i`` is a disc drawn from a generator seeded with ``i``, scaled to [-1, 1]."""

    def __init__(self, size: int, length: int) -> None:
        coords = torch.arange(size, dtype=torch.float32)
        self.yy, self.xx = coords.view(size, 1), coords.view(1, size)
        self.size, self.length = size, length

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        g = torch.Generator().manual_seed(int(index))
        cy, cx = (3 + torch.rand(2, generator=g) * (self.size - 6)).tolist()
        radius = 2 + 3 * torch.rand(1, generator=g).item()
        dist2 = (self.yy - cy) ** 2 + (self.xx - cx) ** 2
        image = torch.sigmoid(2.0 * (radius ** 2 - dist2) / radius) * 2 - 1
        info = get_worker_info()
        return image.unsqueeze(0), -1 if info is None else info.id


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


class Generator(nn.Module):
    def __init__(self, nz, ngf):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),          # 4x4
            nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),     # 8x8
            nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, 1, 4, 2, 1, bias=False),           # 16x16
            nn.Tanh())

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, ndf):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(1, ndf, 4, 2, 1, bias=False),                         # 8x8
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),                   # 4x4
            nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),                     # 1x1
            nn.Sigmoid())

    def forward(self, x):
        return self.main(x).view(-1)


torch.manual_seed(args.seed)
dataset = Discs(16, args.steps * args.batch_size)
loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                    num_workers=args.workers, drop_last=True)
netG, netD = Generator(args.nz, args.ngf), Discriminator(args.ndf)
netG.apply(weights_init)
netD.apply(weights_init)
criterion = nn.BCELoss()
optimizerD = optim.Adam(netD.parameters(), lr=args.lr, betas=(0.5, 0.999))
optimizerG = optim.Adam(netG.parameters(), lr=args.lr, betas=(0.5, 0.999))
fixed_noise = torch.randn(64, args.nz, 1, 1)
real_label, fake_label = 1.0, 0.0
print(f"{len(dataset)} images of 16x16, {args.workers} DataLoader workers, "
      f"G {sum(p.numel() for p in netG.parameters()):,} / "
      f"D {sum(p.numel() for p in netD.parameters()):,} parameters")

workers_seen = set()
history = []
started = time.perf_counter()
for step, (real, worker_ids) in enumerate(loader, start=1):
    if step == 1:
        print(f"first batch after {time.perf_counter() - started:.2f} s")
    workers_seen.update(worker_ids.tolist())
    b = real.size(0)
    # (1) update D: maximize log(D(x)) + log(1 - D(G(z)))
    netD.zero_grad()
    label = torch.full((b,), real_label)
    output = netD(real)
    errD_real = criterion(output, label)
    errD_real.backward()
    D_x = output.mean().item()
    fake = netG(torch.randn(b, args.nz, 1, 1))
    label.fill_(fake_label)
    output = netD(fake.detach())
    errD_fake = criterion(output, label)
    errD_fake.backward()
    D_G_z1 = output.mean().item()
    errD = errD_real + errD_fake
    optimizerD.step()
    # (2) update G: maximize log(D(G(z)))
    netG.zero_grad()
    label.fill_(real_label)
    output = netD(fake)
    errG = criterion(output, label)
    errG.backward()
    D_G_z2 = output.mean().item()
    optimizerG.step()
    history.append((errD.item(), errG.item()))
    if step % args.log_every == 0 or step == args.steps:
        print(f"[{step}/{args.steps}] Loss_D: {errD.item():.4f} Loss_G: {errG.item():.4f} "
              f"D(x): {D_x:.4f} D(G(z)): {D_G_z1:.4f} / {D_G_z2:.4f}", flush=True)

netG.eval()
with no_grad():
    samples = netG(fixed_noise)
    real_batch = torch.stack([dataset[i][0] for i in range(64)])
print(f"batches came from workers {sorted(workers_seen)}")
bright_fake = (samples > 0).float().mean().item()
bright_real = (real_batch > 0).float().mean().item()
print(f"pixel mean of generated images {samples.mean().item():+.3f} "
      f"(real images {real_batch.mean().item():+.3f}), share of bright pixels "
      f"{bright_fake:.3f} (real {bright_real:.3f})")
print(f"trained {len(history)} steps in {time.perf_counter() - started:.1f} s")
