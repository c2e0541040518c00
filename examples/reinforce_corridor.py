"""REINFORCE (Williams, 1992) with a ``Categorical`` policy on a tiny self-written environment.

The corridor: cells ``0 .. length-1``, the agent starts in a random cell of the left half and
steps left or right; reaching the right end pays +1 and ends the episode, every step costs 0.01,
and an episode is cut off after ``2 * length`` steps. The policy is a small MLP over the one-hot
position; actions are drawn from ``Categorical(logits=...)``, and the loss is
``-sum(log_prob(a_t) * G_t)`` with normalized discounted returns, as in PyTorch's
``reinforce.py`` example.

Written against ember's names; the body runs unchanged on PyTorch when the imports at the top are
switched back (``import torch``, ``from torch.distributions import Categorical``, ...).

    python examples/reinforce_corridor.py --episodes 300
"""

from __future__ import annotations

import argparse
import random
import sys

import ember.nn as nn
import ember.nn.functional as F
import ember.optim as optim
import ember.tensor as torch
from ember.autograd import no_grad
from ember.distributions import Categorical


class Corridor:
    """A 1-D gridworld with the goal at the right end; actions 0 = left, 1 = right."""

    def __init__(self, length: int, rng: random.Random) -> None:
        self.length = length
        self.max_steps = 2 * length
        self.rng = rng
        self.position = 0
        self.steps = 0

    def reset(self) -> int:
        self.position = self.rng.randrange(0, self.length // 2)
        self.steps = 0
        return self.position

    def step(self, action: int):
        self.position = max(0, min(self.length - 1, self.position + (1 if action == 1 else -1)))
        self.steps += 1
        if self.position == self.length - 1:
            return self.position, 1.0, True
        return self.position, -0.01, self.steps >= self.max_steps


class Policy(nn.Module):
    def __init__(self, length: int, hidden: int = 32) -> None:
        super().__init__()
        self.length = length
        self.net = nn.Sequential(nn.Linear(length, hidden), nn.Tanh(), nn.Linear(hidden, 2))

    def forward(self, position: int):
        x = F.one_hot(torch.tensor(position), self.length).float()
        return Categorical(logits=self.net(x))


def discounted_returns(rewards: list[float], gamma: float):
    returns, g = [], 0.0
    for r in reversed(rewards):
        g = r + gamma * g
        returns.insert(0, g)
    returns = torch.tensor(returns)
    if len(returns) > 1:
        returns = (returns - returns.mean()) / (returns.std() + 1e-8)
    return returns


def run_episode(env: Corridor, policy: Policy, greedy: bool = False):
    position, done = env.reset(), False
    log_probs, rewards, entropies = [], [], []
    while not done:
        dist = policy(position)
        action = dist.probs.argmax() if greedy else dist.sample()
        log_probs.append(dist.log_prob(action))
        entropies.append(dist.entropy())
        position, reward, done = env.step(action.item())
        rewards.append(reward)
    return log_probs, rewards, entropies


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="REINFORCE with a Categorical policy on a corridor environment.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--episodes", "--steps", type=int, default=300, dest="episodes",
                        help="training episodes (one policy update each)")
    parser.add_argument("--length", type=int, default=8, help="corridor length")
    parser.add_argument("--gamma", type=float, default=0.99, help="discount factor")
    parser.add_argument("--lr", type=float, default=1e-2, help="Adam learning rate")
    parser.add_argument("--eval-episodes", type=int, default=20,
                        help="greedy episodes run at the end")
    parser.add_argument("--log-every", type=int, default=50, help="print every N episodes")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error("--episodes must be at least 1")
    if args.length < 3:
        parser.error("--length must be at least 3")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    env = Corridor(args.length, random.Random(args.seed))
    policy = Policy(args.length)
    optimizer = optim.Adam(policy.parameters(), lr=args.lr)
    lengths = []
    running = None
    for episode in range(1, args.episodes + 1):
        log_probs, rewards, entropies = run_episode(env, policy)
        returns = discounted_returns(rewards, args.gamma)
        loss = -(torch.stack(log_probs) * returns).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total = sum(rewards)
        running = total if running is None else 0.95 * running + 0.05 * total
        lengths.append(len(rewards))
        if episode % args.log_every == 0 or episode == args.episodes:
            entropy = torch.stack(entropies).mean().item()
            print(f"episode {episode:5d}  steps {len(rewards):3d}  return {total:+.2f}  "
                  f"running return {running:+.3f}  policy entropy {entropy:.3f}", flush=True)

    with no_grad():
        greedy = [run_episode(env, policy, greedy=True)[1] for _ in range(args.eval_episodes)]
    solved = sum(1 for rewards in greedy if rewards[-1] == 1.0)
    window = max(1, min(20, len(lengths) // 2))
    first = sum(lengths[:window]) / window
    last = sum(lengths[-window:]) / window
    print(f"episode length went from {first:.1f} to {last:.1f} steps")
    print(f"greedy policy reaches the goal in {solved}/{args.eval_episodes} episodes, "
          f"{sum(len(r) for r in greedy) / len(greedy):.1f} steps on average")
    return 0


if __name__ == "__main__":
    sys.exit(main())
