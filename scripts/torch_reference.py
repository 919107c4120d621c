#!/usr/bin/env python3
"""PyTorch reference figures for the GPU check (scripts/gpu-check.sh).

Measures on one CUDA device, the way bp-bench does (warm-up, then the median of
runs each timed with CUDA events; inputs random, never zeros, rotated among at
least 2 sets when one set is below 100 MB):

  sdpa     F.scaled_dot_product_attention at B,H,S,D (default 8,32,2048,128, the
           seed's shape), bf16, non-causal, with the backend forced through
           torch.nn.attention.sdpa_kernel: FLASH_ATTENTION, CUDNN_ATTENTION (when this
           build has it) and EFFICIENT_ATTENTION; TFLOP/s counted as 4*B*H*S*S*D
           (half of it with --causal)
  matmul   torch.matmul M x K @ K x N in bf16 (cuBLAS), TFLOP/s as 2*M*N*K
  launch   host time per tiny eager op: torch.add(a, b, out=c) and
           torch.mul(a, 0.5, out=c) on 1-element tensors, N calls with no
           synchronize in the loop (the stream is synchronized before the clock
           starts); also the time until a final synchronize returned
  sliced   the seed's sliced attention program, eagerly: per batch x head slice,
           s = q_i @ k_i^T, scaled, softmax, @ v_i into the output (256 slices at
           the seed's shape); time and peak scratch memory; and the naive program
           (one slice: the whole score matrix) beside it

Prints a table, or with --json one JSON object. Exit status 0 when everything that
was asked for ran (an unavailable sdpa backend is reported, not an error), 1 when a
measurement failed, 2 without CUDA or for bad arguments.
"""
import argparse
import json
import math
import statistics
import sys
import time

ROTATE_BELOW_BYTES = 100 * 1024 * 1024
MAX_AUTO_SETS = 8


def parse_dims(text, n, what):
    try:
        dims = [int(x) for x in text.replace("x", ",").split(",")]
    except ValueError:
        dims = []
    if len(dims) != n or min(dims) <= 0:
        raise argparse.ArgumentTypeError(f"{what} wants {n} positive numbers, not '{text}'")
    return dims


def input_sets(set_bytes, forced):
    if forced:
        return forced
    if set_bytes >= ROTATE_BELOW_BYTES:
        return 1
    return max(2, min(MAX_AUTO_SETS, math.ceil(ROTATE_BELOW_BYTES / max(set_bytes, 1))))


def random_tensor(torch, shape, dtype, device, gen):
    # uniform in [-1, 1): never all zeros
    return (torch.rand(shape, generator=gen, device=device, dtype=torch.float32) * 2 - 1).to(dtype)


def event_times(torch, fn, sets, warmup, repeat):
    """Median and minimum ms of fn(set) between two CUDA events, after warm-up."""
    s = 0
    for _ in range(warmup):
        fn(s)
        s = (s + 1) % sets
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    ms = []
    for _ in range(repeat):
        start.record()
        fn(s)
        end.record()
        end.synchronize()
        ms.append(start.elapsed_time(end))
        s = (s + 1) % sets
    return statistics.median(ms), min(ms)


def tflops(flops, ms):
    return flops / (ms * 1e9) if ms and ms > 0 else None


def measure_sdpa(torch, F, args, dev, dtype, gen):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    b, h, s, d = args.shape
    elem = torch.tensor([], dtype=dtype).element_size()
    set_bytes = 3 * b * h * s * d * elem
    sets = input_sets(set_bytes, args.sets)
    qkv = [[random_tensor(torch, (b, h, s, d), dtype, dev, gen) for _ in range(3)]
           for _ in range(sets)]
    flops = 4.0 * b * h * s * s * d * (0.5 if args.causal else 1.0)
    out = {"shape": [b, h, s, d], "dtype": args.dtype, "causal": args.causal, "flops": flops,
           "input_sets": sets}
    backends = [("flash", "FLASH_ATTENTION"), ("cudnn", "CUDNN_ATTENTION"),
                ("efficient", "EFFICIENT_ATTENTION")]
    ref = None
    for key, name in backends:
        backend = getattr(SDPBackend, name, None)
        if backend is None:
            out[key] = {"error": f"SDPBackend.{name} is not in this PyTorch"}
            continue
        try:
            with sdpa_kernel(backend):
                def run(i):
                    q, k, v = qkv[i]
                    return F.scaled_dot_product_attention(q, k, v, is_causal=args.causal)
                med, best = event_times(torch, run, sets, args.warmup, args.repeat)
                result = run(0)
            torch.cuda.synchronize()
        except Exception as e:  # the backend is unavailable for this shape/GPU/build
            out[key] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
            continue
        entry = {"backend": name, "ms": med, "min_ms": best, "tflops": tflops(flops, med)}
        if ref is None:
            ref = result.float()
        else:
            entry["max_abs_diff_vs_first"] = (result.float() - ref).abs().max().item()
        out[key] = entry
    del qkv, ref
    torch.cuda.empty_cache()
    return out


def measure_matmul(torch, args, dev, dtype, gen):
    m, n, k = args.matmul
    elem = torch.tensor([], dtype=dtype).element_size()
    sets = input_sets((m * k + k * n) * elem, args.sets)
    ab = [(random_tensor(torch, (m, k), dtype, dev, gen), random_tensor(torch, (k, n), dtype, dev, gen))
          for _ in range(sets)]
    c = torch.empty((m, n), dtype=dtype, device=dev)

    def run(i):
        torch.matmul(ab[i][0], ab[i][1], out=c)

    med, best = event_times(torch, run, sets, args.warmup, args.repeat)
    flops = 2.0 * m * n * k
    del ab, c
    torch.cuda.empty_cache()
    return {"shape": [m, n, k], "dtype": args.dtype, "flops": flops, "input_sets": sets,
            "ms": med, "min_ms": best, "tflops": tflops(flops, med),
            "tf32_allowed": bool(torch.backends.cuda.matmul.allow_tf32)}


def measure_launch(torch, args, dev):
    a = torch.full((1,), 1.25, dtype=torch.float32, device=dev)
    b = torch.full((1,), 2.5, dtype=torch.float32, device=dev)
    c = torch.empty((1,), dtype=torch.float32, device=dev)
    n = args.ops
    ops = {
        "add": lambda: torch.add(a, b, out=c),
        "mul": lambda: torch.mul(a, 0.5, out=c),
    }
    out = {"ops": n, "repeat": args.launch_repeat, "dtype": "f32", "numel": 1}
    for name, call in ops.items():
        for _ in range(min(n, 1000)):
            call()
        torch.cuda.synchronize()
        host, synced, wait = [], [], []
        for _ in range(args.launch_repeat):
            torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            for _ in range(n):
                call()
            t1 = time.perf_counter_ns()
            torch.cuda.synchronize()
            t2 = time.perf_counter_ns()
            host.append((t1 - t0) / n)
            synced.append((t2 - t0) / n)
            wait.append((t2 - t1) / 1e3)
        want = 1.25 + 2.5 if name == "add" else 1.25 * 0.5
        got = c.item()
        if abs(got - want) > 1e-6:
            raise RuntimeError(f"torch.{name} gave {got}, not {want}")
        out[name] = {"host_ns_per_op": statistics.median(host),
                     "host_us_per_op": statistics.median(host) / 1e3,
                     "host_ns_per_op_min": min(host),
                     "synced_ns_per_op": statistics.median(synced),
                     "synced_us_per_op": statistics.median(synced) / 1e3,
                     "final_sync_us": statistics.median(wait)}
    return out


def measure_sliced(torch, args, dev, dtype, gen):
    b, h, s, d = args.shape
    q, k, v = (random_tensor(torch, (b, h, s, d), dtype, dev, gen) for _ in range(3))
    q3, k3, v3 = (t.reshape(b * h, s, d) for t in (q, k, v))
    out = torch.empty_like(q)
    out3 = out.view(b * h, s, d)
    scale = 1.0 / math.sqrt(d)
    slices = b * h

    def sliced(_):
        for i in range(slices):
            si = torch.matmul(q3[i], k3[i].transpose(0, 1))
            ci = si * scale
            del si
            pi = torch.softmax(ci, dim=-1)
            del ci
            torch.matmul(pi, v3[i], out=out3[i])
            del pi

    def naive(_):
        si = torch.matmul(q, k.transpose(-2, -1))
        ci = si * scale
        del si
        pi = torch.softmax(ci, dim=-1)
        del ci
        torch.matmul(pi, v, out=out)
        del pi

    res = {"shape": [b, h, s, d], "dtype": args.dtype, "slices": slices}
    repeat = args.sliced_repeat
    for key, fn in (("sliced_eager", sliced), ("naive_eager", naive)):
        try:
            fn(0)
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated(dev)
            torch.cuda.reset_peak_memory_stats(dev)
            fn(0)
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated(dev) - base
            med, best = event_times(torch, fn, 1, 1, repeat)
            res[key] = {"ms": med, "min_ms": best, "peak_scratch_mb": peak / (1024.0 * 1024.0)}
        except Exception as e:
            res[key] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
        torch.cuda.empty_cache()
    # the sliced program's result against the fused op, as a sanity check
    try:
        import torch.nn.functional as F
        sliced(0)
        ref = F.scaled_dot_product_attention(q, k, v)
        res["max_abs_diff_vs_sdpa"] = (out.float() - ref.float()).abs().max().item()
    except Exception as e:
        res["max_abs_diff_vs_sdpa"] = None
        res["check_error"] = f"{type(e).__name__}: {e}"
    del q, k, v, q3, k3, v3, out, out3
    torch.cuda.empty_cache()
    return res


def fmt(x, spec=".2f", none="n/a"):
    return none if x is None else format(x, spec)


def print_table(r):
    print(f"PyTorch {r['torch']} (CUDA {r['cuda']}) on {r['device']} ({r['device_name']}): "
          f"median of {r['repeat']} CUDA-event-timed runs after {r['warmup']} warm-ups")
    rows = []
    sd = r.get("sdpa")
    if sd:
        shape = ",".join(map(str, sd["shape"]))
        for key in ("flash", "cudnn", "efficient"):
            e = sd.get(key, {})
            if "error" in e:
                rows.append((f"sdpa {key}", f"{shape} {sd['dtype']}", "n/a", "n/a", e["error"][:60]))
            else:
                rows.append((f"sdpa {key}", f"{shape} {sd['dtype']}", fmt(e.get("ms"), ".3f"),
                             fmt(e.get("tflops"), ".1f"), "TFLOP/s"))
    mm = r.get("matmul")
    if mm:
        rows.append(("matmul", "x".join(map(str, mm["shape"])) + f" {mm['dtype']}",
                     fmt(mm.get("ms"), ".3f"), fmt(mm.get("tflops"), ".1f"), "TFLOP/s"))
    la = r.get("launch")
    if la:
        for name, call in (("add", "torch.add(a, b, out=c)"), ("mul", "torch.mul(a, 0.5, out=c)")):
            e = la.get(name, {})
            rows.append((f"launch {name}", f"{call}", "-", fmt(e.get("host_us_per_op"), ".2f"),
                         f"host us/op (synced {fmt(e.get('synced_us_per_op'), '.2f')} us/op)"))
    sl = r.get("sliced")
    if sl:
        shape = ",".join(map(str, sl["shape"]))
        for key in ("sliced_eager", "naive_eager"):
            e = sl.get(key, {})
            if "error" in e:
                rows.append((key, shape, "n/a", "n/a", e["error"][:60]))
            else:
                rows.append((key, f"{shape} {sl['dtype']}", fmt(e.get("ms"), ".2f"),
                             fmt(e.get("peak_scratch_mb"), ".1f"), "peak scratch MB"))
    print(f"  {'what':<16} {'shape / call':<28} {'ms':>10} {'figure':>10}  unit")
    for what, shape, ms, fig, unit in rows:
        print(f"  {what:<16} {shape:<28} {ms:>10} {fig:>10}  {unit}")
    for err in r.get("errors", []):
        print(f"  error: {err}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--dtype", choices=["bf16", "f16", "f32"], default="bf16")
    p.add_argument("--shape", type=lambda t: parse_dims(t, 4, "--shape"), default=[8, 32, 2048, 128],
                   help="B,H,S,D of sdpa and the sliced program (default 8,32,2048,128)")
    p.add_argument("--causal", action="store_true", help="causal sdpa (default: non-causal)")
    p.add_argument("--matmul", type=lambda t: parse_dims(t, 3, "--matmul"), default=[8192, 8192, 8192],
                   help="M,N,K (default 8192,8192,8192)")
    p.add_argument("--repeat", type=int, default=20, help="timed runs of sdpa and matmul (default 20)")
    p.add_argument("--warmup", type=int, default=5, help="untimed runs first (default 5)")
    p.add_argument("--sets", type=int, default=0, help="input sets to rotate among (default: auto)")
    p.add_argument("--ops", type=int, default=20000, help="calls per launch run (default 20000)")
    p.add_argument("--launch-repeat", type=int, default=5, help="launch runs (default 5)")
    p.add_argument("--sliced-repeat", type=int, default=5, help="runs of the sliced program (default 5)")
    p.add_argument("--only", default="sdpa,matmul,launch,sliced",
                   help="comma-separated subset of sdpa,matmul,launch,sliced")
    p.add_argument("--no-sliced", action="store_true", help="skip the sliced program")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args()
    if min(args.repeat, args.warmup + 1, args.ops, args.launch_repeat, args.sliced_repeat) <= 0:
        p.error("counts must be positive")
    parts = {x.strip() for x in args.only.split(",") if x.strip()}
    unknown = parts - {"sdpa", "matmul", "launch", "sliced"}
    if unknown:
        p.error(f"--only: unknown part(s) {', '.join(sorted(unknown))}")
    if args.no_sliced:
        parts.discard("sliced")

    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"torch_reference: cannot import torch: {e}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch_reference: torch.cuda.is_available() is False", file=sys.stderr)
        return 2
    dev = torch.device(args.device)
    torch.cuda.set_device(dev)
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[args.dtype]
    gen = torch.Generator(device=dev)
    gen.manual_seed(1)

    r = {"mode": "torch_reference", "torch": torch.__version__, "cuda": torch.version.cuda,
         "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
         "device": str(dev), "device_name": torch.cuda.get_device_name(dev),
         "repeat": args.repeat, "warmup": args.warmup, "statistic": "median", "errors": []}
    steps = [("sdpa", lambda: measure_sdpa(torch, F, args, dev, dtype, gen)),
             ("matmul", lambda: measure_matmul(torch, args, dev, dtype, gen)),
             ("launch", lambda: measure_launch(torch, args, dev)),
             ("sliced", lambda: measure_sliced(torch, args, dev, dtype, gen))]
    for name, fn in steps:
        if name not in parts:
            continue
        try:
            r[name] = fn()
        except Exception as e:
            r["errors"].append(f"{name}: {type(e).__name__}: {e}")
            torch.cuda.empty_cache()

    # flat headline figures, for scripts
    def get(*path):
        x = r
        for k in path:
            x = x.get(k) if isinstance(x, dict) else None
        return x

    r["headline"] = {
        "sdpa_flash_tflops": get("sdpa", "flash", "tflops"),
        "sdpa_cudnn_tflops": get("sdpa", "cudnn", "tflops"),
        "sdpa_efficient_tflops": get("sdpa", "efficient", "tflops"),
        "matmul_tflops": get("matmul", "tflops"),
        "launch_add_host_us": get("launch", "add", "host_us_per_op"),
        "launch_add_synced_us": get("launch", "add", "synced_us_per_op"),
        "sliced_eager_ms": get("sliced", "sliced_eager", "ms"),
        "sliced_eager_scratch_mb": get("sliced", "sliced_eager", "peak_scratch_mb"),
        "naive_eager_ms": get("sliced", "naive_eager", "ms"),
    }
    if args.json:
        print(json.dumps(r, indent=2))
    else:
        print_table(r)
    return 1 if r["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
