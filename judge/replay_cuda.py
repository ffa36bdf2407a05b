"""Timing an `offload` plan on a CUDA device (cupy): the plan executed for real.

One compute stream runs a spin kernel of each step's duration; a device-to-host
and a host-to-device stream carry the copies between a device arena of the
case's capacity and pinned host buffers, with CUDA events for every dependency
the plan states (a step waits for its copy-ins and for the bytes of the tensors
it produces; a copy-in waits for its tensor's copy-out and for the bytes it
overwrites). Reports the measured makespan and link bandwidth beside the
simulated ones. Correctness is the cell replay's job (judge.replay with cupy);
this measures. Needs cupy and a device; never imported by the tests.
"""

from __future__ import annotations

from typing import Any

from judge.types.offload.verifier import ByteOwners, group_by_step, lay_out, simulate

SPIN = r"""
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""


def _uses_v2(case: Any, plan: Any) -> bool:
    v2_case = any(
        x is not None for x in (case.writes, case.start, case.end, case.recompute_cost,
                                case.csize, case.host_capacity, case.nvme)
    ) or case.h2d_latency or case.d2h_latency  # fmt: skip
    v2_plan = plan.out is not None and bool((plan.out >= 0).any() or (plan.priority > 0).any())
    return bool(v2_case or v2_plan or (plan.mode is not None and (plan.mode == 2).any()))


def time_offload(case: Any, plan: Any, host_limit_bytes: int = 48 * 2**30) -> dict[str, Any]:
    import cupy as cp
    import cupyx

    if _uses_v2(case, plan):
        return {"skipped": "the CUDA timing covers v1 cases and plans only (no tiers, "
                "drops, recompute, compression or latencies yet)"}  # fmt: skip
    lay = lay_out(case, plan)
    tensor, offset = plan.tensor.tolist(), plan.offset.tolist()
    size = case.size.tolist()
    offloaded = {tensor[r] for r in range(len(plan)) if not lay.final[r]}
    host_bytes = sum(size[t] for t in offloaded)
    if host_bytes > host_limit_bytes or case.capacity > cp.cuda.Device().mem_info[0] * 0.9:
        return {"skipped": f"needs {case.capacity} device and {host_bytes} pinned host bytes"}
    arena = cp.zeros(case.capacity, dtype=cp.uint8)
    host = {t: cupyx.empty_pinned((size[t],), dtype="uint8") for t in offloaded}
    kernel = cp.RawKernel(SPIN, "spin")
    cycles_per_us = cp.cuda.Device().attributes["ClockRate"] / 1000  # kHz -> cycles per µs
    compute, d2h, h2d = (cp.cuda.Stream(non_blocking=True) for _ in range(3))
    n = len(plan)
    done = [None] * n  # event after which a residency's bytes are free
    copied_in: list[Any] = [None] * n
    copied_out: list[Any] = [None] * n
    copies: list[tuple[Any, Any, int]] = []  # (start, end, bytes)
    groups = group_by_step(plan, lay, len(case.steps))
    owners = ByteOwners()
    start_all = cp.cuda.Event()
    start_all.record(compute)
    for s in range(len(case.steps)):
        for r in groups.produced[s]:
            for q in owners.take(offset[r], offset[r] + size[tensor[r]], r):
                if done[q] is not None:
                    compute.wait_event(done[q])
        for r in groups.fetched[s]:
            compute.wait_event(copied_in[r])
        with compute:
            kernel((1,), (1,), (int(case.steps[s] * cycles_per_us),))
        step_end = cp.cuda.Event()
        step_end.record(compute)
        for r in groups.released[s]:
            done[r] = step_end
        for r in groups.copied_out[s]:
            d2h.wait_event(step_end)
            t = tensor[r]
            device = arena[offset[r] :].data
            copied_out[r] = done[r] = _copy(
                copies, d2h, size[t], device.copy_to_host_async, host[t].ctypes.data
            )
        for r in groups.copied_in[s]:
            t = tensor[r]
            h2d.wait_event(step_end)
            h2d.wait_event(copied_out[r - 1])
            for q in owners.take(offset[r], offset[r] + size[t], r):
                if done[q] is not None:
                    h2d.wait_event(done[q])
            device = arena[offset[r] :].data
            copied_in[r] = _copy(
                copies, h2d, size[t], device.copy_from_host_async, host[t].ctypes.data
            )
    compute.synchronize()
    d2h.synchronize()
    h2d.synchronize()
    measured_ms = cp.cuda.get_elapsed_time(start_all, step_end)
    moved = sum(b for _, _, b in copies)
    busy_ms = sum(cp.cuda.get_elapsed_time(a, b) for a, b, _ in copies)
    simulated = simulate(case, plan, lay).makespan_us
    return {
        "measured_makespan_us": measured_ms * 1000,
        "simulated_makespan_us": simulated,
        "copies": len(copies),
        "bytes_moved": moved,
        "measured_link_gbps": moved / busy_ms / 1e6 if busy_ms else None,
        "stated_link_gbps": [case.h2d / 1000, case.d2h / 1000],
    }


def _copy(
    copies: list[tuple[Any, Any, int]], stream: Any, nbytes: int, method: Any, host_ptr: int
) -> Any:
    """Issue one async copy (`method` of a device pointer) between two timing events."""
    import cupy as cp

    begin, end = cp.cuda.Event(), cp.cuda.Event()
    begin.record(stream)
    method(host_ptr, nbytes, stream)
    end.record(stream)
    copies.append((begin, end, nbytes))
    return end
