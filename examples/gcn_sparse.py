"""A two-layer graph convolutional network (Kipf & Welling, 2017) for semi-supervised node
classification, with the normalized adjacency matrix held as a sparse COO tensor.

The graph is a synthetic stochastic block model (``--classes`` communities, dense inside a
community, sparse across), so nothing is downloaded. Node features are noisy: on their own they
classify poorly, and the graph has to carry the label information. Only ``--labels-per-class``
nodes per class are labelled; the rest are held out.

The propagation rule is ``H' = A_hat @ H @ W`` with ``A_hat = D^-1/2 (A + I) D^-1/2`` built by
``sparse_coo_tensor(...).coalesce()`` and multiplied with ``torch.sparse.mm`` (sparse @ dense,
with gradients flowing into the dense side).

Written against ember's names; the body runs unchanged on PyTorch when the imports at the top are
switched back (``import torch``, ``import torch.nn as nn``, ...).

    python examples/gcn_sparse.py --epochs 100
"""

from __future__ import annotations

import argparse
import sys

import ember.nn as nn
import ember.nn.functional as F
import ember.optim as optim
import ember.tensor as torch
from ember.autograd import no_grad


def block_model_graph(nodes: int, classes: int, p_in: float, p_out: float, generator):
    """Community labels and the undirected edge list (both directions) of a stochastic block
    model."""
    labels = torch.arange(nodes) % classes
    labels = labels[torch.randperm(nodes, generator=generator)]
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    prob = torch.where(same, torch.full((nodes, nodes), p_in), torch.full((nodes, nodes), p_out))
    upper = torch.triu(torch.rand(nodes, nodes, generator=generator) < prob, diagonal=1)
    src, dst = upper.nonzero(as_tuple=True)
    edges = torch.stack([torch.cat([src, dst]), torch.cat([dst, src])])
    return labels, edges


def normalized_adjacency(edges, nodes: int):
    """``D^-1/2 (A + I) D^-1/2`` as a coalesced sparse COO tensor."""
    loops = torch.arange(nodes).unsqueeze(0).repeat(2, 1)
    indices = torch.cat([edges, loops], dim=1)
    values = torch.ones(indices.size(1))
    adj = torch.sparse_coo_tensor(indices, values, (nodes, nodes)).coalesce()
    degree = torch.sparse.sum(adj, dim=1).to_dense()
    inv_sqrt = degree.pow(-0.5)
    row, col = adj.indices()
    norm_values = inv_sqrt[row] * adj.values() * inv_sqrt[col]
    return torch.sparse_coo_tensor(adj.indices(), norm_values, (nodes, nodes)).coalesce()


class GraphConvolution(nn.Module):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x, adj):
        return torch.sparse.mm(adj, self.linear(x)) + self.bias


class GCN(nn.Module):
    def __init__(self, in_features: int, hidden: int, classes: int, dropout: float) -> None:
        super().__init__()
        self.gc1 = GraphConvolution(in_features, hidden)
        self.gc2 = GraphConvolution(hidden, classes)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.dropout(x, self.dropout, training=self.training)
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        return F.log_softmax(self.gc2(x, adj), dim=1)


def accuracy(log_probs, labels) -> float:
    return (log_probs.argmax(1) == labels).float().mean().item()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Train a GCN on a synthetic graph with a sparse adjacency matrix.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--epochs", type=int, default=100, help="full-graph training epochs")
    parser.add_argument("--nodes", type=int, default=300, help="nodes in the graph")
    parser.add_argument("--classes", type=int, default=3, help="communities / classes")
    parser.add_argument("--features", type=int, default=32, help="node feature size")
    parser.add_argument("--hidden", type=int, default=16, help="hidden units")
    parser.add_argument("--labels-per-class", type=int, default=5,
                        help="labelled training nodes per class")
    parser.add_argument("--p-in", type=float, default=0.08, help="edge probability inside a class")
    parser.add_argument("--p-out", type=float, default=0.01, help="edge probability across")
    parser.add_argument("--dropout", type=float, default=0.5, help="dropout probability")
    parser.add_argument("--lr", type=float, default=0.01, help="Adam learning rate")
    parser.add_argument("--weight-decay", type=float, default=5e-4, help="L2 penalty")
    parser.add_argument("--log-every", type=int, default=20, help="print every N epochs")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error("--epochs must be at least 1")
    if args.labels_per_class * args.classes >= args.nodes:
        parser.error("--labels-per-class * --classes must be below --nodes")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    labels, edges = block_model_graph(args.nodes, args.classes, args.p_in, args.p_out, gen)
    adj = normalized_adjacency(edges, args.nodes)
    # weak features: a faint class signal buried in noise
    centers = torch.randn(args.classes, args.features, generator=gen)
    features = 0.2 * centers[labels] + torch.randn(args.nodes, args.features, generator=gen)

    train_mask = torch.zeros(args.nodes, dtype=torch.bool)
    for c in range(args.classes):
        members = (labels == c).nonzero(as_tuple=True)[0]
        train_mask[members[: args.labels_per_class]] = True
    test_mask = ~train_mask
    print(f"graph: {args.nodes} nodes, {edges.size(1) // 2} edges, adjacency is_sparse="
          f"{adj.is_sparse} with {adj.values().numel()} stored entries; "
          f"{int(train_mask.sum())} labelled nodes")

    model = GCN(args.features, args.hidden, args.classes, args.dropout)
    optimizer = optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    losses = []
    for epoch in range(1, args.epochs + 1):
        model.train()
        optimizer.zero_grad()
        out = model(features, adj)
        loss = F.nll_loss(out[train_mask], labels[train_mask])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if epoch % args.log_every == 0 or epoch == args.epochs:
            model.eval()
            with no_grad():
                out = model(features, adj)
            print(f"epoch {epoch:4d}  loss {loss.item():.4f}  "
                  f"test accuracy {100 * accuracy(out[test_mask], labels[test_mask]):.1f}%",
                  flush=True)

    model.eval()
    with no_grad():
        out = model(features, adj)
        gcn_acc = accuracy(out[test_mask], labels[test_mask])
        # the same network with the graph taken away (identity adjacency): features alone
        eye = torch.sparse_coo_tensor(torch.arange(args.nodes).unsqueeze(0).repeat(2, 1),
                                      torch.ones(args.nodes), (args.nodes, args.nodes))
        no_graph_acc = accuracy(model(features, eye)[test_mask], labels[test_mask])
    print(f"loss went from {losses[0]:.4f} to {losses[-1]:.4f}")
    print(f"test accuracy {100 * gcn_acc:.1f}% with the graph, "
          f"{100 * no_graph_acc:.1f}% with the identity in its place")
    return 0


if __name__ == "__main__":
    sys.exit(main())
