#!/usr/bin/env python3
"""PyTorch CPU on the work of `bp-bench ops --device cpu`, with the same threads.

  cpu_reference.py [--threads N] [--dtype f32|f16|bf16] [--matmul M,N,K]...
                   [--sdpa B,H,S,D]... [--causal] [--repeat N] [--warmup N]
                   [--sets N] [--json] [--info]

The peer of bp-bench ops (tools/bench_ops.c), measured the same way:
  matmul   torch.matmul(a [M, K], b [K, N], out=c): 2*M*N*K flops
  sdpa     F.scaled_dot_product_attention(q, k, v, is_causal=...) with q, k, v of
           [B, H, S, D]: 4*B*H*S*S*D flops, half of that with --causal
Default work, as bp-bench ops: sdpa [1, 8, 1024, 64], matmul 1024^3 and 4096^3, f32.
Inputs are random in [-1, 1) (never zeros), rotated among several sets when one set is
below 100 MB (at least 2, at most 8; --sets overrides); each is run --warmup times
(default 1), then timed --repeat times (default 5) with the host clock; the figure is
the median. A sampled check compares 64 outputs with a float64 computation from the
same (dtype-rounded) inputs, relative to max(1, |reference|), as bp-bench does.

Threads: torch.set_num_threads(N), N from --threads, else BP_NUM_THREADS (as the cpu
backend reads it, 1 to 64), else os.cpu_count() (at most 64). --info prints only the versions: torch, its
oneDNN and MKL (from torch.__config__.show()), its CPU capability and its threading.

Exit status: 0 when all the work ran, 1 when a measurement failed, 2 for bad
arguments or when torch cannot be imported (the reason on stderr).
"""
import argparse
import math
import os
import re
import statistics
import sys
import time

ROTATE_BELOW_BYTES = 100 * 1024 * 1024
MAX_AUTO_SETS = 8
MAX_SETS = 64
MAX_THREADS = 64  # as the cpu backend's pool (ops/parallel.c)
SAMPLE_POINTS = 64
DEFAULT_WORK = [("sdpa", (1, 8, 1024, 64)), ("matmul", (1024, 1024, 1024)),
                ("matmul", (4096, 4096, 4096))]


def shapes(arity, what):
    """An argparse type: one shape (M,N,K or B,H,S,D) or several separated by ';'."""
    def parse(text):
        out = []
        for part in re.split(r"[;/ ]+", text.strip()):
            try:
                dims = [int(x) for x in re.split(r"[,xX]", part)]
            except ValueError:
                dims = []
            if len(dims) % arity or not dims or min(dims) <= 0:
                raise argparse.ArgumentTypeError(
                    f"{what} wants {'M,N,K' if arity == 3 else 'B,H,S,D'} (positive numbers; "
                    f"several separated by ';'), not '{text}'")
            out += [tuple(dims[i:i + arity]) for i in range(0, len(dims), arity)]
        return out
    return parse


def count(lo, hi, what):
    def parse(text):
        try:
            n = int(text)
        except ValueError:
            n = 0
        if not lo <= n <= hi:
            raise argparse.ArgumentTypeError(f"{what} wants a whole number from {lo} to {hi}, "
                                             f"not '{text}'")
        return n
    return parse


def default_threads():
    """As the cpu backend: BP_NUM_THREADS when it is a whole number from 1 to MAX_THREADS,
    else the cores (at most MAX_THREADS)."""
    env = os.environ.get("BP_NUM_THREADS", "")
    if env:
        if env.isdigit() and 1 <= int(env) <= MAX_THREADS:
            return int(env), "BP_NUM_THREADS"
        print(f"cpu_reference: warning: BP_NUM_THREADS='{env}' is not a whole number from 1 "
              f"to {MAX_THREADS}; using the cores", file=sys.stderr)
    return min(os.cpu_count() or 1, MAX_THREADS), "os.cpu_count()"


def input_sets(set_bytes, forced):
    if forced:
        return forced
    if set_bytes >= ROTATE_BELOW_BYTES:
        return 1
    return max(2, min(MAX_AUTO_SETS, math.ceil(ROTATE_BELOW_BYTES / max(set_bytes, 1))))


def torch_versions(torch):
    """torch's version and what torch.__config__.show() says of its oneDNN, MKL and ISA."""
    show = torch.__config__.show()

    def line(pattern):
        m = re.search(pattern, show, re.MULTILINE)
        return m.group(1).strip() if m else None

    info = {"torch": torch.__version__,
            "onednn": line(r"^\s*-\s*(.*(?:MKL-DNN|oneDNN).*)$"),
            "mkl": line(r"^\s*-\s*(.*Math Kernel Library.*)$"),
            "cpu_capability": line(r"CPU capability usage:\s*(\S+)"),
            "mkldnn_available": bool(torch.backends.mkldnn.is_available()),
            "mkl_available": bool(torch.backends.mkl.is_available())}
    parallel = torch.__config__.parallel_info()
    info["parallel"] = [x.strip() for x in parallel.splitlines() if x.strip()]
    return info


def random_tensor(torch, shape, dtype, gen):
    # uniform in [-1, 1): never all zeros
    return (torch.rand(shape, generator=gen, dtype=torch.float32) * 2 - 1).to(dtype)


def host_times(fn, sets, warmup, repeat):
    """Median and minimum ms of fn(set) on the host clock, after the warm-up."""
    s = 0
    for _ in range(warmup):
        fn(s)
        s = (s + 1) % sets
    ms = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        fn(s)
        ms.append((time.perf_counter_ns() - t0) / 1e6)
        s = (s + 1) % sets
    return statistics.median(ms), min(ms)


def sampled_error(torch, name, dims, causal, inputs, got):
    """Largest |got - ref| / max(1, |ref|) at SAMPLE_POINTS outputs, ref in float64."""
    gen = torch.Generator().manual_seed(7)
    x = [t.double() for t in inputs]
    got = got.double()
    worst = 0.0
    for _ in range(SAMPLE_POINTS):
        if name == "matmul":
            m, n, _k = dims
            i, j = (int(torch.randint(m, (1,), generator=gen)), int(torch.randint(n, (1,), generator=gen)))
            ref = float(x[0][i] @ x[1][:, j])
            val = float(got[i, j])
        else:
            b, h, s, d = dims
            bi, hi, i, c = (int(torch.randint(v, (1,), generator=gen)) for v in (b, h, s, d))
            visible = i + 1 if causal else s
            q, k, v = (t[bi, hi] for t in x)
            scores = (k[:visible] @ q[i]) / math.sqrt(d)
            p = torch.softmax(scores, dim=0)
            ref = float(p @ v[:visible, c])
            val = float(got[bi, hi, i, c])
        e = abs(val - ref) / max(1.0, abs(ref))
        worst = max(worst, e) if not math.isnan(e) else math.inf
    return worst


def measure(torch, F, name, dims, args, dtype, gen):
    causal = args.causal and name == "sdpa"
    elem = torch.tensor([], dtype=dtype).element_size()
    if name == "matmul":
        m, n, k = dims
        sizes = [(m, k), (k, n)]
        flops = 2.0 * m * n * k
    else:
        b, h, s, d = dims
        sizes = [(b, h, s, d)] * 3
        flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
    sets = input_sets(sum(math.prod(x) for x in sizes) * elem, args.sets)
    data = [[random_tensor(torch, x, dtype, gen) for x in sizes] for _ in range(sets)]
    if name == "matmul":
        c = torch.empty((dims[0], dims[1]), dtype=dtype)

        def run(i):
            torch.matmul(data[i][0], data[i][1], out=c)
            return c
    else:
        def run(i):
            q, k, v = data[i]
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    with torch.inference_mode():
        med, best = host_times(run, sets, args.warmup, args.repeat)
        result = run(0)
        err = sampled_error(torch, name, dims, causal, data[0], result)
    return {"name": name, "dims": list(dims), "causal": causal if name == "sdpa" else None,
            "flops": flops, "input_sets": sets, "ok": True, "ms": med, "min_ms": best,
            "gflops": flops / (med * 1e6), "sampled_max_rel_err": err,
            "sampled_points": SAMPLE_POINTS}


def print_table(r):
    t = r["versions"]
    print(f"PyTorch {t['torch']} CPU, {r['threads']} threads ({r['threads_from']}): median of "
          f"{r['repeat']} runs after {r['warmup']} warm-up(s), {r['dtype']}, host clock")
    print(f"  oneDNN: {t['onednn'] or 'n/a'}; MKL: {t['mkl'] or 'n/a'}; "
          f"CPU capability: {t['cpu_capability'] or 'n/a'}")
    print(f"  {'op':<8} {'shape':<22} {'ms':>10} {'GF/s':>10} {'sampled err':>12}")
    for e in r["results"]:
        shape = ("x" if e["name"] == "matmul" else ",").join(map(str, e["dims"]))
        if e["name"] == "sdpa" and e.get("causal"):
            shape += " causal"
        if not e["ok"]:
            print(f"  {e['name']:<8} {shape:<22} {'failed':>10}  {e['error']}")
            continue
        print(f"  {e['name']:<8} {shape:<22} {e['ms']:>10.2f} {e['gflops']:>10.1f} "
              f"{e['sampled_max_rel_err']:>12.2g}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=count(1, MAX_THREADS, "--threads"),
                   help="torch.set_num_threads (default: BP_NUM_THREADS, else all cores)")
    p.add_argument("--dtype", choices=["f32", "f16", "bf16"], default="f32")
    p.add_argument("--matmul", type=shapes(3, "--matmul"), action="append", default=[],
                   help="M,N,K: a [M, K] @ b [K, N]; repeatable; replaces the default work")
    p.add_argument("--sdpa", type=shapes(4, "--sdpa"), action="append", default=[],
                   help="B,H,S,D of q, k and v; repeatable; replaces the default work")
    p.add_argument("--causal", action="store_true", help="causal sdpa")
    p.add_argument("--repeat", type=count(1, 1000, "--repeat"), default=5)
    p.add_argument("--warmup", type=count(1, 1000, "--warmup"), default=1)
    p.add_argument("--sets", type=count(1, MAX_SETS, "--sets"), default=0,
                   help="input sets to rotate among (default: automatic)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--info", action="store_true", help="print only the versions and threads")
    args = p.parse_args()
    if args.threads:
        threads, threads_from = args.threads, "--threads"
    else:
        threads, threads_from = default_threads()
    # bp-bench's order: sdpa first, then matmul
    work = [("sdpa", d) for lst in args.sdpa for d in lst] + \
           [("matmul", d) for lst in args.matmul for d in lst]
    work = work or DEFAULT_WORK

    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # ImportError, or a broken installation
        print(f"cpu_reference: cannot import torch: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    torch.set_num_threads(threads)
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[args.dtype]
    r = {"mode": "cpu_reference", "versions": torch_versions(torch), "threads": threads,
         "threads_from": threads_from, "torch_threads": torch.get_num_threads(),
         "dtype": args.dtype, "causal": args.causal, "repeat": args.repeat,
         "warmup": args.warmup, "statistic": "median", "timer": "host", "results": []}
    if not args.info:
        gen = torch.Generator().manual_seed(1)
        for name, dims in work:
            try:
                r["results"].append(measure(torch, F, name, dims, args, dtype, gen))
            except Exception as e:  # out of memory, an unsupported dtype, ...
                r["results"].append({"name": name, "dims": list(dims), "ok": False,
                                     "error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"})
    if args.json:
        import json
        print(json.dumps(r, indent=2))
    elif args.info:
        t = r["versions"]
        print(f"PyTorch {t['torch']}: oneDNN {t['onednn']}; MKL {t['mkl']}; "
              f"CPU capability {t['cpu_capability']}; {threads} threads ({threads_from})")
    else:
        print_table(r)
    return 0 if all(e["ok"] for e in r["results"]) else 1


if __name__ == "__main__":
    sys.exit(main())
