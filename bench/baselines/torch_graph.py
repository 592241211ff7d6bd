"""A PyTorch replica of the paper's Algorithm 1 (`alg:iteration`) over cfrjax's compiled arrays.

CFR+ (regret matching+), simultaneous updates, linear averaging (`w_t = t`), float32, folded
chance, run over the NumPy arrays of `cfrjax.compile.compile_arrays(spec)`:

  * regret matching: flat over the S slots, per-information-set sums with `index_add_`
    over `slot_infoset`, uniform where no regret is positive;
  * forward pass, per depth level `b`, both lanes at once (dual-lane reach buffer `[2N]`):
    `reach[C2(b)] = reach[P2(b)] * sigma_ext[S2(b)]` (indexed assignment, no zeroing);
  * backward pass: `vals = template`, then per level from the deepest up
    `vals.index_add_(0, P_val(b), sigma_ext[S_val(b)] * vals[C_val(b)])`;
  * instantaneous regrets flat over the M decision edges (the paper's realization of
    line `alg:regretline`): `regret.index_add_(0, S_reg, s * reach[O_reg] * (vals[C_reg] - vals[P_reg]))`;
  * CFR+ floor `regret.clamp_(min=0)` and the average strategy. Two averaging modes:
    `"mean"` (cfrjax's running weighted mean `M_t = M_{t-1} + (t / W_t)(y_t - M_{t-1})`,
    float32, the same arithmetic as `cfrjax.iteration.running_mean_update`) and `"sum64"`
    (the paper's float64 accumulator `S_t = S_{t-1} + t y_t`). Either normalizes per
    information set to the same average policy.

Execution: eager (any device) or CUDA-graph replay (`mode="graph"`, CUDA only): the
iteration index `t` and the averaging weight `W_t` are 0-d device tensors that the
captured body updates in place, so replay `k` uses exactly `t = t_0 + k`; the graph is
captured after warm-up iterations on a side stream, which are genuine iterations and
count toward the iteration budget. All persistent buffers are allocated once; their data
pointers are checked before each replay batch.

`check_against_cfrjax(spec, iterations)` runs both solvers and returns the largest
differences of the regrets and average policies (the iterates), for the CPU test
`tests/test_torch_replica.py` and for the GPU run of `bench/matrix.py`.
"""

from __future__ import annotations

import time

import numpy as np
import torch


class TorchCFRPlus:
    """Algorithm 1 over compiled arrays. `arrays, static` from `compile_arrays(spec)` (folded)."""

    def __init__(self, arrays: dict, static: dict, device="cpu", averaging: str = "mean", dtype: str = "float32"):
        if not static.get("chance_folded", True):
            raise ValueError("the replica implements folded chance only (compile_arrays(spec, 'folded'))")
        if averaging not in ("mean", "sum64"):
            raise ValueError(f"averaging must be 'mean' or 'sum64', got {averaging!r}")
        if dtype not in ("float32", "float64"):
            raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
        self.device = torch.device(device)
        self.averaging = averaging
        dev, f32 = self.device, getattr(torch, dtype)  # f32: the working float type

        def idx(a):
            return torch.as_tensor(np.ascontiguousarray(a, np.int64), device=dev)

        n, s, ni = static["num_nodes"], static["num_slots"], static["num_infosets"]
        self.num_nodes, self.num_slots, self.num_infosets = n, s, ni
        ls = static["level_start"]
        self.level_start = tuple(ls)
        self.depth = len(ls) - 2
        parent = np.asarray(arrays["parent"], np.int64)
        lane_slot = np.asarray(arrays["lane_slot"], np.int64)
        val_slot = np.asarray(arrays["val_slot"], np.int64)

        # Per-level blocks (edges grouped by parent depth).
        self.fwd_blocks, self.bwd_blocks = [], []
        for d in range(1, len(ls) - 1):
            c = np.arange(ls[d], ls[d + 1])
            p = parent[c]
            self.fwd_blocks.append((idx(np.concatenate([c, n + c])), idx(np.concatenate([p, n + p])),
                                    idx(np.concatenate([lane_slot[0, c], lane_slot[1, c]]))))
            self.bwd_blocks.append((idx(p), idx(c), idx(val_slot[c])))
        self.bwd_blocks.reverse()  # deepest block first

        # Decision edges (flat), slots.
        self.dec_child = idx(arrays["dec_child"])
        self.dec_parent = idx(arrays["dec_parent"])
        self.dec_slot = idx(arrays["dec_slot"])
        self.dec_opp = idx(arrays["dec_opp"])
        self.dec_sign = torch.as_tensor(np.asarray(arrays["dec_sign"]), dtype=f32, device=dev)
        self.slot_infoset = idx(arrays["slot_infoset"])
        self.slot_own_reach = idx(arrays["slot_own_reach"])
        self.slot_uniform = torch.as_tensor(np.asarray(arrays["slot_uniform"]), dtype=f32, device=dev)
        self.template = torch.as_tensor(np.asarray(arrays["template"]), dtype=f32, device=dev)

        # Persistent buffers (fixed addresses for graph replay).
        self.regret = torch.zeros(s, dtype=f32, device=dev)
        self.avg = torch.zeros(s, dtype=torch.float64 if averaging == "sum64" else f32, device=dev)
        self.sigma_ext = torch.ones(s + 1, dtype=f32, device=dev)
        self.reach = torch.ones(2 * n, dtype=f32, device=dev)  # roots stay 1 (never written)
        self.vals = torch.zeros(n, dtype=f32, device=dev)
        self.totals = torch.zeros(ni, dtype=f32, device=dev)
        self.t = torch.zeros((), dtype=f32, device=dev)        # iteration index of the last iteration run
        self.weight = torch.zeros((), dtype=f32, device=dev)   # W_t = sum of w_t so far
        self.iterations = 0
        self._graph = None
        self._graph_ptrs = None

    # ---- the iteration -------------------------------------------------------------------

    def _regret_matching(self):
        pos = self.regret.clamp(min=0.0)
        self.totals.zero_()
        self.totals.index_add_(0, self.slot_infoset, pos)
        total = self.totals[self.slot_infoset]
        has = total > 0
        self.sigma_ext[:self.num_slots] = torch.where(has, pos / torch.where(has, total, torch.ones_like(total)),
                                                      self.slot_uniform)

    def _iterate(self):
        """One CFR+ iteration (Algorithm 1); pure device work, capturable."""
        self.t.add_(1.0)
        self.weight.add_(self.t)
        self._regret_matching()
        sig, reach, vals = self.sigma_ext, self.reach, self.vals
        for c2, p2, s2 in self.fwd_blocks:
            reach[c2] = reach[p2] * sig[s2]
        vals.copy_(self.template)
        for p, c, sv in self.bwd_blocks:
            vals.index_add_(0, p, sig[sv] * vals[c])
        inst = self.dec_sign * (reach[self.dec_opp] * (vals[self.dec_child] - vals[self.dec_parent]))
        self.regret.index_add_(0, self.dec_slot, inst)
        y = reach[self.slot_own_reach] * sig[:self.num_slots]
        if self.averaging == "mean":
            coef = self.t / self.weight  # W_t >= t > 0
            self.avg.add_(coef * (y - self.avg))
        else:
            self.avg.add_(self.t.double() * y.double())
        self.regret.clamp_(min=0.0)

    # ---- execution -----------------------------------------------------------------------

    def _sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def run_eager(self, iterations: int):
        for _ in range(iterations):
            self._iterate()
        self.iterations += iterations
        return self

    def _ptrs(self):
        return tuple(b.data_ptr() for b in (self.regret, self.avg, self.sigma_ext, self.reach, self.vals,
                                            self.totals, self.t, self.weight))

    def capture(self, warmup: int = 3):
        """Warm up `warmup` genuine iterations on a side stream, then capture one iteration."""
        if self.device.type != "cuda":
            raise RuntimeError("CUDA-graph replay needs a CUDA device")
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(warmup):
                self._iterate()
        torch.cuda.current_stream(self.device).wait_stream(side)
        self.iterations += warmup
        # Capture records the kernels without running them: t and W are untouched.
        graph = torch.cuda.CUDAGraph()
        # thread_local: another thread of the process (e.g. JAX's allocator freeing buffers
        # of a finished computation) must not invalidate this capture.
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            self._iterate()
        self._graph, self._graph_ptrs = graph, self._ptrs()
        return self

    def run_graph(self, iterations: int):
        if self._graph is None:
            self.capture()
        if self._ptrs() != self._graph_ptrs:
            raise RuntimeError("a persistent buffer was reallocated since capture; refusing to replay")
        self.t.fill_(float(self.iterations))  # host refills the exact starting index
        for _ in range(iterations):
            self._graph.replay()
        self.iterations += iterations
        return self

    def run(self, iterations: int, mode: str = "eager"):
        return self.run_graph(iterations) if mode == "graph" else self.run_eager(iterations)

    # ---- results -------------------------------------------------------------------------

    def average_policy(self) -> np.ndarray:
        avg = self.avg.double()
        tot = torch.zeros(self.num_infosets, dtype=avg.dtype, device=self.device).index_add_(0, self.slot_infoset, avg)
        tot = tot[self.slot_infoset]
        pol = torch.where(tot > 0, avg / torch.where(tot > 0, tot, torch.ones_like(tot)), self.slot_uniform.double())
        return pol.cpu().numpy()

    def regrets(self) -> np.ndarray:
        return self.regret.cpu().numpy()

    def buffer_bytes(self) -> int:
        """Bytes of the persistent buffers and index arrays (a load-immune memory figure)."""
        ts = [self.regret, self.avg, self.sigma_ext, self.reach, self.vals, self.totals, self.template,
              self.dec_child, self.dec_parent, self.dec_slot, self.dec_opp, self.dec_sign, self.slot_infoset,
              self.slot_own_reach, self.slot_uniform]
        ts += [t for blk in self.fwd_blocks + self.bwd_blocks for t in blk]
        return int(sum(t.numel() * t.element_size() for t in ts))


def from_spec(spec, device="cpu", averaging: str = "mean") -> TorchCFRPlus:
    from cfrjax.compile import compile_arrays
    arrays, static, _ = compile_arrays(spec, "folded")
    return TorchCFRPlus(arrays, static, device=device, averaging=averaging)


def count_aten_ops(solver: TorchCFRPlus) -> int:
    """Aten operations one eager iteration dispatches (load-immune; paper's tab:suite counter).

    Runs one genuine iteration (it advances the solver).
    """
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            _Count.n += 1
            return func(*args, **(kwargs or {}))

    with _Count():
        solver._iterate()
    solver.iterations += 1
    return _Count.n


def time_replica(solver: TorchCFRPlus, mode: str, iterations: int, repeats: int = 5, warmup: int = 3) -> dict:
    """Steady ms/iter (median over `repeats` batches of `iterations`), measured with CUDA
    events on the GPU and `perf_counter` on the CPU; capture time for graph mode."""
    out = dict(mode=mode)
    t0 = time.perf_counter()
    if mode == "graph":
        solver.capture(warmup)
    else:
        solver.run_eager(warmup)
    solver._sync()
    out["setup_s"] = time.perf_counter() - t0
    cuda = solver.device.type == "cuda"
    times = []
    for _ in range(repeats):
        if cuda:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            solver.run(iterations, mode)
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / 1e3)
        else:
            t0 = time.perf_counter()
            solver.run(iterations, mode)
            times.append(time.perf_counter() - t0)
    times.sort()
    out.update(ms_per_iter=1e3 * times[len(times) // 2] / iterations, ms_per_iter_min=1e3 * times[0] / iterations,
               ms_per_iter_max=1e3 * times[-1] / iterations, repeats=repeats, iterations=iterations)
    return out


def check_against_cfrjax(spec, iterations: int = 20, device="cpu", mode: str = "eager",
                         averaging: str = "mean", dtype: str = "float32") -> dict:
    """Run cfrjax (CFR+, simultaneous, linear, folded) and the replica in `dtype` for
    `iterations` iterations; return the largest absolute differences of the iterates.

    CFR+ is discontinuous where a cumulative regret is exactly 0 (regret matching+ clamps
    it): two float32 implementations that add in different orders (here atomics in
    different orders) part ways at such ties within a few iterations on games with many
    of them (Goofspiel, Battleship, the HUNL turn), so the design equivalence is checked
    in float64 too, where a tie-breaking rounding difference is 1e-16 instead of 1e-7.

    Keys: `regret_max_abs` (cumulative regrets), `regret_scale` (max |regret|),
    `policy_max_abs` (average policy) of the trajectories; `one_step_regret_max_abs`,
    `one_step_avg_max_abs`: one iteration from the same state (`_one_step_diff`), the
    check that does not depend on ties (with `averaging="mean"`, whose average is
    cfrjax's); `iterations`, `dtype`.
    """
    import jax
    with jax.enable_x64(dtype == "float64"):
        return _check(spec, iterations, device, mode, averaging, dtype)


def _one_step_diff(game, solver, iterations: int) -> dict:
    """The largest difference of one iteration from the same state, over `iterations`
    iterations of the replica (eager): before each, cfrjax's `step` is run on the
    replica's state (regrets, average, W_t, t), and both results are compared. Unlike the
    trajectories this is continuous in rounding, so it checks that both compute the same
    iteration even where CFR+ ties split the trajectories."""
    import dataclasses
    import jax
    import jax.numpy as jnp
    import cfrjax
    step = jax.jit(cfrjax.step)
    state = cfrjax.init(game, rule="cfr+", order="simultaneous", averaging="linear", dtype=str(game.template.dtype))
    worst_regret = worst_avg = 0.0
    for _ in range(iterations):
        solver._sync()
        dt = state.regret.dtype
        # copies: on CPU `.numpy()` aliases the tensor that the replica updates in place
        mine = dataclasses.replace(
            state, regret=jnp.array(solver.regret.cpu().numpy(), dt, copy=True),
            avg=jnp.array(solver.avg.cpu().numpy(), dt, copy=True),
            avg_weight=jnp.asarray(float(solver.weight), dt), iteration=jnp.asarray(int(float(solver.t)), jnp.int32))
        mine = jax.block_until_ready(step(game, mine))
        solver.run_eager(1)
        solver._sync()
        worst_regret = max(worst_regret, float(np.max(np.abs(np.asarray(mine.regret, np.float64)
                                                              - solver.regret.cpu().numpy().astype(np.float64)), initial=0.0)))
        worst_avg = max(worst_avg, float(np.max(np.abs(np.asarray(mine.avg, np.float64)
                                                        - solver.avg.cpu().numpy().astype(np.float64)), initial=0.0)))
    return dict(one_step_regret_max_abs=worst_regret, one_step_avg_max_abs=worst_avg)


def _check(spec, iterations, device, mode, averaging, dtype):
    import jax
    import cfrjax
    from cfrjax.compile import compile_arrays
    from cfrjax.game import from_numpy

    arrays, static, labels = compile_arrays(spec, "folded")
    import jax.numpy as jnp
    game = from_numpy(arrays, static, labels)
    # game leaves in `dtype` even when the caller's process runs with jax_enable_x64.
    game = jax.tree.map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, game)
    state = cfrjax.init(game, rule="cfr+", order="simultaneous", averaging="linear", dtype=dtype)
    step = jax.jit(cfrjax.step)
    for _ in range(iterations):
        state = step(game, state)
    ref_regret = np.asarray(state.regret, np.float64)
    ref_policy = np.asarray(cfrjax.average_policy(game, state), np.float64)
    solver = TorchCFRPlus(arrays, static, device=device, averaging=averaging, dtype=dtype)
    if mode == "graph":
        warm = min(3, iterations)
        solver.capture(warm)
        solver.run_graph(iterations - warm)
    else:
        solver.run_eager(iterations)
    solver._sync()
    regret, policy = solver.regrets().astype(np.float64), solver.average_policy()
    one_step = {} if averaging != "mean" else _one_step_diff(
        game, TorchCFRPlus(arrays, static, device=device, averaging=averaging, dtype=dtype), iterations)
    return dict(iterations=iterations, dtype=dtype, **one_step, regret_max_abs=float(np.max(np.abs(regret - ref_regret), initial=0.0)),
                regret_scale=float(np.max(np.abs(ref_regret), initial=0.0)),
                policy_max_abs=float(np.max(np.abs(policy - ref_policy), initial=0.0)))

