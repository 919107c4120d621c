#!/usr/bin/env python3
"""The table and JSON of scripts/cpu-compare.sh, from the runs it left in --runs.

--runs holds manifest.tsv (one line a run: row, kind bp|torch|dnnl26, variant, exit
status, its stdout JSON, its stderr, round), host.txt (lscpu, or /proc/cpuinfo),
bp-info.txt, torch-info.json / torch-info.err. Prints the host, the versions and the
engines, then the Markdown table `| work | backplane cpu | PyTorch CPU | ratio |` (and
with --dnnl26 a second one for oneDNN 2.6 called directly), and writes everything to
--json. With --rounds above 1 a cell is the median of the rounds' figures with their
range, and a ratio the median of the rounds' ratios (each round's two runs side by
side) with their range. Exit status 1 when a backplane run failed, else 0.
"""
import argparse
import json
import os
import re
import sys

FLAGS = ("avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile")
# bp-bench's log lines at BP_LOG=info that say which engine ran (not the plugin loading)
ENGINE_LOG = re.compile(r"^backplane\[(?!loader\]|registry\])[^\]]*\] (info|warn|error): ")
BP_INFO_LINE = re.compile(r"^\s*cpu:0 |\b(onednn|dnnl|blas|matmul|sdpa|engine)", re.I)


def read(path, default=""):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return default


def load_json(path):
    try:
        return json.loads(read(path))
    except ValueError:
        return None


def host_info(text):
    """Model name, the flags of FLAGS present, cores and sockets from lscpu's output (or
    /proc/cpuinfo's)."""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    flags = set(fields.get("Flags", fields.get("flags", "")).split())
    cores = None
    try:
        cores = int(fields["Core(s) per socket"]) * int(fields.get("Socket(s)", "1"))
    except (KeyError, ValueError):
        pass
    return {"model": fields.get("Model name", fields.get("model name")),
            "logical_cpus": os.cpu_count(), "cores": cores,
            "flags": {f: f in flags for f in FLAGS}}


def label(op, dtype, shape, causal):
    dims = shape.split(",")
    if op == "matmul":
        text = f"matmul {dtype} {dims[0]}³" if len(set(dims)) == 1 else \
            f"matmul {dtype} {'x'.join(dims)}"
    else:
        text = f"sdpa {dtype} ({shape})"
    return text + (" causal" if causal else "")


def gf(x):
    return f"{x:.0f} GF/s" if x >= 100 else f"{x:.3g} GF/s"


def median(xs):
    xs = sorted(xs)
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def span(xs, fmt):
    """' (lowest–highest)' of several values, nothing for one."""
    return f" ({fmt(min(xs))}–{fmt(max(xs))})" if len(xs) > 1 else ""


def last_line(text):
    lines = [x for x in text.splitlines() if x.strip()]
    return lines[-1].strip() if lines else ""


def run_figure(run, key):
    """(GF/s or None, why it failed) of one run: bp-bench's (key backplane_gflops), or
    cpu_reference.py's or dnnl_matmul_v2's (key gflops)."""
    result = ((load_json(run["json"]) or {}).get("results") or [{}])[0]
    if run["rc"] == 0 and result.get("ok"):
        return result[key], None
    return None, result.get("error") or last_line(read(run["err"])) or \
        f"no result (exit status {run['rc']})"


def figure(runs, key):
    """(median GF/s or None, the cell's text, each round's GF/s) of one kind's runs, a run
    a round: failed when one of them failed."""
    if not runs:
        return None, "not run", []
    each = []
    for run in runs:
        value, why = run_figure(run, key)
        if value is None:
            return None, f"failed: {why}", []
        each.append(value)
    mid = median(each)
    return mid, gf(mid) + span(each, lambda x: f"{x:.0f}"), each


def ratio(ours, peer, torch_ok):
    """The ratio cell: the median of the rounds' ratios (ours / peer, round by round)."""
    if ours and peer and len(ours) == len(peer):
        each = [o / p for o, p in zip(ours, peer)]
        return f"{median(each):.2f}×" + span(each, lambda x: f"{x:.2f}"), each
    return ("-" if torch_ok or not ours else "torch not importable"), None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--rows", nargs="+", required=True, help="'op dtype shape causal' each")
    p.add_argument("--torch-ok", type=int, required=True)
    p.add_argument("--engines", default="")
    p.add_argument("--sdpa-engines", default="")
    p.add_argument("--bench", default="")
    p.add_argument("--python", default="")
    p.add_argument("--repeat", type=int, required=True)
    p.add_argument("--warmup", type=int, required=True)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--dnnl26", type=int, default=0)
    a = p.parse_args()

    runs = []
    for line in read(os.path.join(a.runs, "manifest.tsv")).splitlines():
        row, kind, variant, rc, out, err, round_ = line.split("\t")
        runs.append({"row": int(row), "kind": kind, "variant": variant, "rc": int(rc),
                     "json": out, "err": err, "round": int(round_)})

    host = host_info(read(os.path.join(a.runs, "host.txt")))
    torch_info = load_json(os.path.join(a.runs, "torch-info.json")) if a.torch_ok else None
    torch_why = None if a.torch_ok else \
        last_line(read(os.path.join(a.runs, "torch-info.err"))) or "torch not importable"
    bp_info = [x.strip() for x in read(os.path.join(a.runs, "bp-info.txt")).splitlines()
               if BP_INFO_LINE.search(x)]

    report = {"mode": "cpu-compare", "threads": a.threads, "repeat": a.repeat,
              "warmup": a.warmup, "rounds": a.rounds, "statistic": "median", "host": host,
              "bp_bench": a.bench, "python": a.python,
              "engines": {"BP_CPU_MATMUL": a.engines.split() or None,
                          "BP_CPU_SDPA": a.sdpa_engines.split() or None,
                          "environment": {k: os.environ.get(k) for k in
                                          ("BP_CPU_MATMUL", "BP_CPU_SDPA", "BP_BLAS",
                                           "BP_ONEDNN_LIBRARY", "OMP_NUM_THREADS",
                                           "OPENBLAS_NUM_THREADS")},
                          "bp_info": bp_info, "reported": {}},
              "torch": torch_info and {k: torch_info.get(k) for k in
                                       ("versions", "threads", "torch_threads")},
              "torch_unavailable": torch_why, "rows": [], "dnnl26": None}
    lines = ["| work | backplane cpu | PyTorch CPU | ratio |", "|---|---|---|---|"]
    dnnl_lines = ["| work | oneDNN 2.6 (direct) | PyTorch CPU | ratio |", "|---|---|---|---|"]
    failed = False
    for index, text in enumerate(a.rows):
        op, dtype, shape, causal = text.split()
        work = label(op, dtype, shape, causal == "1")
        mine = [r for r in runs if r["row"] == index]

        def of(kind, variant=None):
            """The runs of a kind (and variant), in round order."""
            return sorted((r for r in mine if r["kind"] == kind and
                           (variant is None or r["variant"] == variant)),
                          key=lambda r: r["round"])

        torch_runs = of("torch")
        # the torch column: its figure, why it failed, or why torch is not there
        peer, peer_text, peer_each = figure(torch_runs, "gflops") if a.torch_ok else \
            (None, "not importable: " + torch_why.split("cannot import torch: ")[-1], [])
        entry = {"work": work, "op": op, "dtype": dtype, "dims": [int(x) for x in shape.split(",")],
                 "causal": causal == "1", "backplane": [], "torch": None, "dnnl26": None}
        if torch_runs:
            entry["torch"] = {"gflops": peer, "rounds_gflops": peer_each,
                              "exit_status": [r["rc"] for r in torch_runs],
                              "runs": [load_json(r["json"]) for r in torch_runs],
                              "stderr": read(torch_runs[-1]["err"])[-2000:]}
        variable = "BP_CPU_MATMUL" if op == "matmul" else "BP_CPU_SDPA"
        variants = list(dict.fromkeys(r["variant"] for r in mine if r["kind"] == "bp"))
        for variant in variants:
            bp_runs = of("bp", variant)
            ours, ours_text, ours_each = figure(bp_runs, "backplane_gflops")
            failed |= ours is None
            logs = sorted({x for r in bp_runs for x in read(r["err"]).splitlines()
                           if ENGINE_LOG.match(x)})
            name = f"{variable}={variant}" if variant else "default"
            report["engines"]["reported"].setdefault(name, [])
            for x in logs:
                if x not in report["engines"]["reported"][name]:
                    report["engines"]["reported"][name].append(x)
            ratio_text, ratios = ratio(ours_each, peer_each, a.torch_ok)
            entry["backplane"].append({"variant": variant or None, "variable": variable,
                                       "gflops": ours, "rounds_gflops": ours_each,
                                       "ratios": ratios,
                                       "exit_status": [r["rc"] for r in bp_runs], "log": logs,
                                       "runs": [load_json(r["json"]) for r in bp_runs]})
            row_label = f"{work} · {variable}={variant}" if variant else work
            lines.append(f"| {row_label} | {ours_text} | {peer_text} | {ratio_text} |")
        dnnl_runs = of("dnnl26")
        if dnnl_runs:
            theirs, theirs_text, theirs_each = figure(dnnl_runs, "gflops")
            data = [load_json(r["json"]) or {} for r in dnnl_runs]
            entry["dnnl26"] = {"gflops": theirs, "rounds_gflops": theirs_each,
                               "exit_status": [r["rc"] for r in dnnl_runs], "runs": data}
            if report["dnnl26"] is None:
                report["dnnl26"] = {k: data[0].get(k) for k in ("onednn", "cpu_runtime", "threads")}
            impl = ((data[0].get("results") or [{}])[0]).get("impl")
            dnnl_lines.append(f"| {work}{f' ({impl})' if impl else ''} | {theirs_text} | "
                              f"{peer_text} | {ratio(theirs_each, peer_each, a.torch_ok)[0]} |")
        report["rows"].append(entry)

    out = []
    flags = ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in host["flags"].items())
    out.append(f"host: {host['model']}; {host['cores']} cores, {host['logical_cpus']} logical "
               f"CPUs; {flags}")
    rounds = "" if a.rounds == 1 else \
        (f"; {a.rounds} rounds: a cell is the median of the rounds (lowest–highest), a "
         f"ratio the median of the rounds' ratios (lowest–highest)")
    out.append(f"threads: BP_NUM_THREADS={a.threads}, torch.set_num_threads({a.threads}); "
               f"median of {a.repeat} runs after {a.warmup} warm-up(s), host clock{rounds}")
    if torch_info:
        v = torch_info.get("versions", {})
        out.append(f"PyTorch {v.get('torch')}: oneDNN: {v.get('onednn') or 'n/a'}; "
                   f"MKL: {v.get('mkl') or 'n/a'}; CPU capability: {v.get('cpu_capability')}")
    else:
        out.append(f"PyTorch: not importable ({torch_why})")
    env = {k: v for k, v in report["engines"]["environment"].items() if v}
    out.append("environment: " + (", ".join(f"{k}={v}" for k, v in env.items()) or
                                  "no engine or thread variable set (auto)"))
    for x in bp_info:
        out.append(f"bp-info: {x}")
    for name, logs in report["engines"]["reported"].items():
        for x in logs:
            out.append(f"engine [{name}]: {x}")
    out.append("")
    out += lines
    if len(dnnl_lines) > 2:
        d = report["dnnl26"] or {}
        out += ["", f"oneDNN {d.get('onednn')} ({d.get('cpu_runtime')}, {d.get('threads')} "
                    f"threads), called directly (bench/dnnl_matmul_v2.c):", ""] + dnnl_lines
    elif a.dnnl26:
        out += ["", "oneDNN 2.6: not measured (bench/dnnl_matmul_v2.c could not be built)"]
    report["table_markdown"] = "\n".join(lines)
    if len(dnnl_lines) > 2:
        report["dnnl26_table_markdown"] = "\n".join(dnnl_lines)
    text = "\n".join(out)
    print(text)
    with open(a.json, "w") as f:
        json.dump(report, f, indent=2)
    print(f"\n(JSON: {a.json})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
