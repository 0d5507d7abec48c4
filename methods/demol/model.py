"""DeMol and the models it is compared with, all with the same geometry head.

- `demol`: an atom channel and a bond channel, fused by Double-Helix blocks.
- `atom_only`: GINE layers (torch-geometric) over the atom graph, with bond features on the
  edges and no bond states; the usual atom-centric GNN.
- `bond_only`: the bond channel alone over the line graph, each bond starting from its own
  features plus its two atoms'.

Every model also predicts each bond's length from the length it is given (noisy while
training): this is the geometry that the covalent-radius regulariser keeps chemically
plausible.
"""
from __future__ import annotations

import torch
from torch import nn
from torch_geometric.nn import GINEConv, global_mean_pool

from edgert.methods.demol.graphs import ANGLE_RBF, ATOM_DIM, BOND_DIM, RBF, rbf

KINDS = ("demol", "no_reg", "atom_only", "bond_only")


def mlp(n_in: int, n_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, n_out), nn.SiLU(), nn.Linear(n_out, n_out))


def length_features(length: torch.Tensor) -> torch.Tensor:
    """(bonds,) lengths in A -> (bonds, RBF) Gaussian expansion over 0.9-2.0 A."""
    return torch.as_tensor(rbf(length.detach().numpy(), 0.9, 2.0, RBF), dtype=torch.float32)


class DoubleHelix(nn.Module):
    """One block, four kinds of message:
    atom -> bond: each bond reads its two atoms (sum and product: order-free);
    bond - bond: bonds sharing an atom, with the angle between them (the line graph);
    bond -> atom - atom: atoms exchange messages along bonds, each carried by the bond's state;
    and atom - atom at larger scales: atoms 2 and 3 bonds apart (with their 3-D distance) and
    the whole molecule (a virtual node)."""

    def __init__(self, d: int):
        super().__init__()
        self.atom_bond = mlp(3 * d, d)
        self.bond_bond = GINEConv(mlp(d, d), edge_dim=ANGLE_RBF)
        self.atom_atom = GINEConv(mlp(d, d), edge_dim=d)
        self.hops = nn.ModuleList(GINEConv(mlp(d, d), edge_dim=RBF) for _ in (2, 3))
        self.molecule = mlp(d, d)
        self.norm_a, self.norm_b = nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, h_a: torch.Tensor, h_b: torch.Tensor, g) -> tuple[torch.Tensor,
                                                                        torch.Tensor]:
        u, v = g.bond_atoms
        h_b = h_b + self.atom_bond(torch.cat([h_b, h_a[u] + h_a[v], h_a[u] * h_a[v]], -1))
        h_b = self.norm_b(h_b + self.bond_bond(h_b, g.line_index, g.line_attr))
        m = self.atom_atom(h_a, g.edge_index, h_b[g.edge_bond])
        for conv, k in zip(self.hops, (2, 3)):
            m = m + conv(h_a, g[f"hop{k}_index"], g[f"hop{k}_attr"])
        m = m + self.molecule(global_mean_pool(h_a, g.batch))[g.batch]
        return self.norm_a(h_a + m), h_b


class Net(nn.Module):
    """`forward(g, length)` -> (property (B,), predicted bond lengths (bonds,))."""

    def __init__(self, kind: str, hidden: int, layers: int):
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"unknown model {kind!r}: one of {', '.join(KINDS)}")
        self.kind = "demol" if kind == "no_reg" else kind
        d = hidden
        self.atom_in = nn.Linear(ATOM_DIM, d)
        self.bond_in = nn.Linear(BOND_DIM + RBF, d)
        if self.kind == "demol":
            self.blocks = nn.ModuleList(DoubleHelix(d) for _ in range(layers))
        elif self.kind == "atom_only":
            self.blocks = nn.ModuleList(GINEConv(mlp(d, d), edge_dim=d) for _ in range(layers))
        else:
            self.blocks = nn.ModuleList(GINEConv(mlp(d, d), edge_dim=ANGLE_RBF)
                                        for _ in range(layers))
        self.norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
        self.pair = mlp(d, d) if self.kind == "atom_only" else None  # a bond from its atoms
        self.head = mlp(2 * d if self.kind == "demol" else d, d)
        self.out = nn.Linear(d, 1)
        self.geometry = mlp(d, d)
        self.length_out = nn.Linear(d, 1)

    def forward(self, g, length: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h_b = self.bond_in(torch.cat([g.bond_attr, length_features(length)], -1))
        n_graphs = g.num_graphs
        bond_batch = g.batch[g.bond_atoms[0]]
        u, v = g.bond_atoms
        if self.kind == "demol":
            h_a = self.atom_in(g.x)
            for block in self.blocks:
                h_a, h_b = block(h_a, h_b, g)
            pooled = torch.cat([global_mean_pool(h_a, g.batch, n_graphs),
                                global_mean_pool(h_b, bond_batch, n_graphs)], -1)
        elif self.kind == "atom_only":
            h_a, edges = self.atom_in(g.x), h_b[g.edge_bond]
            for conv, norm in zip(self.blocks, self.norms):
                h_a = norm(h_a + conv(h_a, g.edge_index, edges))
            pooled = global_mean_pool(h_a, g.batch, n_graphs)
            h_b = self.pair(h_a[u] + h_a[v])
        else:
            a = self.atom_in(g.x)
            h_b = h_b + a[u] + a[v]
            for conv, norm in zip(self.blocks, self.norms):
                h_b = norm(h_b + conv(h_b, g.line_index, g.line_attr))
            pooled = global_mean_pool(h_b, bond_batch, n_graphs)
        prop = self.out(self.head(pooled)).squeeze(-1)
        bond_length = length + self.length_out(self.geometry(h_b)).squeeze(-1)
        return prop, bond_length


def params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def matched_hidden(kind: str, reference: int, layers: int) -> int:
    """The hidden width that gives `kind` about `reference` parameters."""
    return min(range(8, 513, 4), key=lambda d: abs(params(Net(kind, d, layers)) - reference))
