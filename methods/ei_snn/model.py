"""Spiking networks of LIF units (snntorch) in three kinds: E-I circuits (the method), plain
linear layers, and linear layers with BatchNorm (the baselines).

Every network reads the input as a constant current for T steps and returns its output
currents averaged over the steps. Depth counts weight layers: depth - 1 hidden layers of
`width` units, then the output layer.
"""
from __future__ import annotations

import math

import snntorch as snn
import torch
from snntorch import surrogate
from torch import nn

KINDS = ("ei", "ei_no_init", "ei_no_prop", "plain", "bn")
EPS = 1e-6  # the divisive term's stabiliser without E-I Prop


def lif() -> snn.Leaky:
    """tau = 2 (decay 0.5), threshold 1, soft reset, sigmoid surrogate gradient (slope 4)."""
    return snn.Leaky(beta=0.5, threshold=1.0, spike_grad=surrogate.sigmoid(slope=4))


class EICircuit(nn.Module):
    """A layer of n_e excitatory units with n_e / ratio inhibitory units beside them.

    The input drives both populations (W_EE, W_IE). The inhibitory units inhibit the excitatory
    ones through W_EI, subtracting from their current and dividing it:
        I = g_E * (W_EE x - W_EI W_IE x) / (W_EI (g_I * W_IE x)) + b_E
    Weights and gains stay non-negative (Dale's law; `clamp` after each step), b_E is free.
    The output layer is the balanced current W_EE x - W_EI W_IE x alone.

    E-I Init (`init`): the first batch's statistics set W_EE, W_IE ~ Exp(scale) with
    scale = sqrt(Var x / (n_in (E x^2 + Var x))), so excitation and inhibition start balanced
    and the current's spread is independent of depth, and g_I = sqrt(E x^2 + Var x) /
    (sqrt(n_in) E x), so the divisor starts near 1 (gain control). Without it: |Kaiming
    uniform| weights and g_I = 1.

    E-I Prop (`prop`): the backward pass is decoupled from the forward one where the forward
    pass would break it. A divisor that is exactly 0 (a silent input) is replaced by the
    sample's smallest non-zero divisor, with the gradient passed straight through; and W_EI's
    gradient, which sums over every input, is divided by n_in. Without it the divisor gets
    + 1e-6 and W_EI its raw gradient.
    """

    def __init__(self, n_in: int, n_e: int, ratio: int = 4, output: bool = False,
                 init: bool = True, prop: bool = True):
        super().__init__()
        n_i = max(1, n_e // ratio)
        self.n_in, self.output, self.prop = n_in, output, prop
        self.w_ee = nn.Parameter(_abs_kaiming(n_e, n_in))
        self.w_ie = nn.Parameter(_abs_kaiming(n_i, n_in))
        self.w_ei = nn.Parameter(torch.full((n_e, n_i), 1.0 / n_i))
        self.g_i = nn.Parameter(torch.ones(1, n_i))
        self.g_e = nn.Parameter(torch.ones(1, n_e))
        self.b_e = nn.Parameter(torch.zeros(1, n_e))
        self.pending_init = init
        self.probe: dict[str, torch.Tensor] | None = None  # set to {} to record currents
        if prop:
            self.w_ei.register_hook(lambda g: g / n_in)

    @torch.no_grad()
    def ei_init(self, x: torch.Tensor) -> None:
        """E-I Init from a batch x (N, n_in)."""
        var, square, mean = x.var(0).mean(), (x ** 2).mean(), x.mean().clamp_min(1e-6)
        scale = torch.sqrt(var / (self.n_in * (square + var)))
        self.w_ee.copy_(torch.empty_like(self.w_ee).exponential_(1.0) * scale)
        self.w_ie.copy_(torch.empty_like(self.w_ie).exponential_(1.0) * scale)
        self.g_i.fill_(float(torch.sqrt(square + var) / (math.sqrt(self.n_in) * mean)))

    @torch.no_grad()
    def clamp(self) -> None:
        for p in (self.w_ee, self.w_ie, self.w_ei, self.g_i, self.g_e):
            p.clamp_(min=0.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x (N, n_in) -> (N, n_e)
        if self.pending_init:
            self.ei_init(x)
            self.pending_init = False
        i_ie = x @ self.w_ie.T                    # (N, n_i) inhibitory units' input
        excite = x @ self.w_ee.T                  # (N, n_e)
        inhibit = i_ie @ self.w_ei.T              # (N, n_e) subtractive inhibition
        if self.probe is not None:
            self.probe.update(excite=excite.detach(), inhibit=inhibit.detach())
        balanced = excite - inhibit
        if self.output:
            return balanced
        divisor = (self.g_i * i_ie) @ self.w_ei.T  # (N, n_e) divisive inhibition
        divisor = nonzero(divisor) if self.prop else divisor + EPS
        return self.g_e * balanced / divisor + self.b_e


def nonzero(d: torch.Tensor) -> torch.Tensor:
    """Zeros replaced by the sample's smallest non-zero value; gradient straight through."""
    zero = d == 0
    if not zero.any():
        return d
    floor = torch.where(zero, torch.inf, d).amin(1, keepdim=True)
    floor = torch.where(torch.isinf(floor), torch.ones_like(floor), floor)
    return torch.where(zero, floor, d).detach() + (d - d.detach())


def _abs_kaiming(rows: int, cols: int) -> torch.Tensor:
    w = torch.empty(rows, cols)
    nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    return w.abs()


class SpikingNet(nn.Module):
    """depth weight layers of one kind, LIF units after each hidden one. Plain and BatchNorm
    layers start from Kaiming-normal weights (ReLU gain), the usual choice for deep nets."""

    def __init__(self, kind: str, n_in: int, n_out: int, depth: int, width: int, steps: int):
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"unknown network kind {kind!r}: one of {', '.join(KINDS)}")
        self.kind, self.steps = kind, steps
        sizes = [n_in] + [width] * (depth - 1) + [n_out]
        self.layers = nn.ModuleList(self._layer(a, b, i == depth - 1)
                                    for i, (a, b) in enumerate(zip(sizes, sizes[1:])))
        self.neurons = nn.ModuleList(lif() for _ in range(depth - 1))
        self.rates: list[torch.Tensor] = []  # per hidden layer: (width,) firing rates

    def _layer(self, n_in: int, n_out: int, output: bool) -> nn.Module:
        if self.kind.startswith("ei"):
            return EICircuit(n_in, n_out, output=output, init=self.kind != "ei_no_init",
                             prop=self.kind != "ei_no_prop")
        linear = nn.Linear(n_in, n_out)
        nn.init.kaiming_normal_(linear.weight, nonlinearity="relu")
        nn.init.zeros_(linear.bias)
        return nn.Sequential(linear, nn.BatchNorm1d(n_out)) if self.kind == "bn" and \
            not output else linear

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x (B, n_in) -> logits (B, n_out)
        h = x.unsqueeze(0).expand(self.steps, *x.shape)            # (T, B, n_in)
        self.rates = []
        for layer, neuron in zip(self.layers, self.neurons):
            current = layer(h.flatten(0, 1)).view(self.steps, len(x), -1)  # (T, B, width)
            mem, spikes = neuron.init_leaky(), []
            for t in range(self.steps):
                spike, mem = neuron(current[t], mem)
                spikes.append(spike)
            h = torch.stack(spikes)                                  # (T, B, width)
            self.rates.append(h.detach().mean((0, 1)))
        return self.layers[-1](h.flatten(0, 1)).view(self.steps, len(x), -1).mean(0)

    def clamp(self) -> None:
        """Dale's law after each optimiser step (E-I networks only)."""
        for layer in self.layers:
            if isinstance(layer, EICircuit):
                layer.clamp()

    def circuits(self) -> list[EICircuit]:
        return [layer for layer in self.layers if isinstance(layer, EICircuit)]
