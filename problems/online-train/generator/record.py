#!/usr/bin/env python3
"""Records the training steps with activation recomputation that online-train adds to
gpt2-train's traces (needs PyTorch: the `trace` extra).

    python problems/online-train/generator/record.py            # every trace below
    python problems/online-train/generator/record.py NAME...    # some

The step is tracer.steps.record_train's with recompute=True (one pipeline stage of
GPT-2, 1F1B over the micro-batches, Adam, every transformer block wrapped in
torch.utils.checkpoint). Written as
`memorace trace train` writes (tracer/trace_file.py, tracer/TRACE_FORMAT.md) into
traces/<name>.json.xz, the provenance's step saying `"recompute": true`.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # tracer


from tracer.models import GPT2
from tracer.steps import TrainStep, describe, record_train
from tracer.trace_file import trace_doc, write_trace

ROOT = Path(__file__).resolve().parents[3]

# The same model stages and micro-batch plans as gpt2-train's traces of these names.
TRACES = {
    "r01-small-pp4-stage1-mb8x4-recompute": TrainStep("gpt2-small", 4, 1, 8, 4, 1024, 112),
    "r02-small-pp4-mb8x2-recompute": TrainStep("gpt2-small", 4, 0, 8, 2, 1024, None),
    "r03-medium-pp4-stage1-mb8x4-recompute": TrainStep("gpt2-medium", 4, 1, 8, 4, 1024, 307),
}


def main(names: list[str]) -> None:
    for name in names or list(TRACES):
        step = TRACES[name]
        rec = record_train(step, recompute=True)
        out = Path(__file__).resolve().parent / "traces" / f"{name}.json.xz"
        command = "python " + shlex.join([str(Path(__file__).resolve().relative_to(ROOT)), name])
        doc = trace_doc(
            rec, {**describe(step), "recompute": True}, asdict(GPT2[step.model]), command
        )
        size = write_trace(out, doc)
        print(f"{name}: {len(rec.ops)} ops, {len(doc['tensors']['size'])} tensors, {size} bytes")


if __name__ == "__main__":
    main(sys.argv[1:])
