"""The recorder: every aten op of a step, on meta tensors, with the life of each storage.

Meta tensors have true sizes and no data, so a GPT-2 XL step records on a laptop in
seconds. A TorchDispatchMode sees every op after autograd (backward and optimizer
included); a storage is born in the op that first returns it and dies when PyTorch
frees it (its refcount reaches zero, as the caching allocator would see it). PyTorch
keeps a storage's Python object for as long as the storage lives, so a weak reference
to it calls back exactly then: a storage that dies while op t runs or before op t + 1
has [born, t + 1) as its life.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import flop_registry

# What a storage is, strongest claim first (a weight saved for backward stays a parameter).
CATEGORIES = (
    "parameter",
    "optimizer_state",
    "gradient",
    "kv_cache",
    "input",
    "activation",
    "temporary",
)
_RANK = {c: i for i, c in enumerate(CATEGORIES)}


@dataclass
class Storage:
    size: int
    lower: int
    op: int  # the op that made it; -1 when it existed before the recording
    upper: int = -1
    category: str = "temporary"
    reads: list[int] = field(default_factory=list)  # ops that take it as an argument
    writes: list[int] = field(default_factory=list)  # ops that write it in place (or make it)


@dataclass
class Recording:
    ops: list[tuple[str, int, int]] = field(default_factory=list)  # name, flops, bytes
    storages: list[Storage] = field(default_factory=list)
    seconds: float = 0.0


class Recorder(TorchDispatchMode):
    """Use as a context manager around the step; `mark` names what the step knows."""

    def __init__(self) -> None:
        super().__init__()
        self.rec = Recording()
        self._live: dict[int, tuple[int, weakref.ref]] = {}  # id(storage): index, ref
        self._saved = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._start = 0.0

    def __enter__(self) -> Recorder:
        self._start = time.perf_counter()
        self._saved.__enter__()
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        self._saved.__exit__(*exc)
        end = len(self.rec.ops)
        for index, _ in self._live.values():
            self.rec.storages[index].upper = end
        self._live.clear()
        self.rec.seconds = time.perf_counter() - self._start

    def mark(self, tensors: Any, category: str) -> None:
        """Tensors (any nesting) of a category; unknown ones are taken as alive since
        the start (parameters, optimizer state and inputs made before recording)."""
        for t in tree_leaves(tensors):
            if isinstance(t, torch.Tensor):
                index = self._track(t, lower=0, op=-1)
                s = self.rec.storages[index] if index is not None else None
                if s is not None and _RANK[category] < _RANK[s.category]:
                    s.category = category

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        kwargs = kwargs or {}
        t = len(self.rec.ops)
        self._note_arguments(func, args, kwargs, t)
        out = func(*args, **kwargs)
        flops = _flops(func, args, kwargs, out)
        moved = sum(x.nbytes for x in tree_leaves((args, kwargs, out)) if _is_tensor(x))
        self.rec.ops.append((str(func.overloadpacket.__name__), flops, moved))
        for x in tree_leaves(out):
            if _is_tensor(x):
                self._track(x, lower=t, op=t)
        return out

    def _note_arguments(self, func: Any, args: Any, kwargs: dict[str, Any], t: int) -> None:
        """Op t reads every tracked storage among its arguments and writes those its
        schema marks as written (in-place and out= arguments)."""
        written = set()
        for i, arg in enumerate(func._schema.arguments):
            value = args[i] if i < len(args) else kwargs.get(arg.name)
            if arg.alias_info is not None and arg.alias_info.is_write:
                written |= {id(x.untyped_storage()) for x in tree_leaves(value) if _is_tensor(x)}
        for x in tree_leaves((args, kwargs)):
            if _is_tensor(x) and x.device.type == "meta":
                key = id(x.untyped_storage())
                held = self._live.get(key)
                if held is not None:
                    s = self.rec.storages[held[0]]
                    ops = s.writes if key in written else s.reads
                    if not ops or ops[-1] != t:
                        ops.append(t)

    def _track(self, t: torch.Tensor, lower: int, op: int) -> int | None:
        if t.device.type != "meta":  # host scalars (Adam's step counts) are not device memory
            return None
        storage = t.untyped_storage()
        key = id(storage)
        if key in self._live:
            return self._live[key][0]
        index = len(self.rec.storages)
        self.rec.storages.append(Storage(storage.nbytes(), lower, op))
        self._live[key] = (index, weakref.ref(storage, lambda _: self._died(key)))
        return index

    def _died(self, key: int) -> None:
        held = self._live.pop(key, None)
        if held is not None:
            self.rec.storages[held[0]].upper = len(self.rec.ops)

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        if _is_tensor(t):
            self.mark(t, "activation")
        return t


def _is_tensor(x: Any) -> bool:
    return isinstance(x, torch.Tensor)


def _flops(func: Any, args: Any, kwargs: dict[str, Any], out: Any) -> int:
    if func.overloadpacket is _CPU_FLASH:  # not in PyTorch's registry
        return _attention_flops(*args[:3])
    formula = flop_registry.get(func.overloadpacket)
    return int(formula(*args, **kwargs, out_val=out)) if formula else 0


_CPU_FLASH = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu


def _attention_flops(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> int:
    """Q K^T and P V for every query head (GQA: k and v may have fewer heads); the
    causal half is counted in full, as PyTorch's own sdpa formula does."""
    *batch, lq, d = q.shape
    heads = 1
    for n in batch:
        heads *= n
    return 2 * heads * lq * k.shape[-2] * (d + v.shape[-1])
