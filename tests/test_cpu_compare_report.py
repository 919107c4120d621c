#!/usr/bin/env python3
"""scripts/cpu_compare_report.py on runs made up here (PyTorch's side included, which CI
cannot run): with three rounds a cell is the median of the rounds with their range and
the ratio the median of the rounds' own ratios with theirs; one failed round fails the
cell and the exit status; one round prints plain figures."""
import json
import os
import subprocess
import sys
import tempfile

REPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts",
                      "cpu_compare_report.py")


def write_runs(d, ours, torch, failed_round=None):
    lines = []
    for r, (o, t) in enumerate(zip(ours, torch), start=1):
        for kind, key, value in (("bp", "backplane_gflops", o), ("torch", "gflops", t)):
            base = os.path.join(d, f"{r}-0-{kind}")
            ok = not (kind == "bp" and r == failed_round)
            result = {"ok": ok, key: value} if ok else {"ok": False, "error": "made to fail"}
            with open(base + ".json", "w") as f:
                json.dump({"results": [result]}, f)
            open(base + ".err", "w").close()
            lines.append(f"0\t{kind}\t\t{0 if ok else 1}\t{base}.json\t{base}.err\t{r}\n")
    with open(os.path.join(d, "manifest.tsv"), "w") as f:
        f.writelines(lines)
    with open(os.path.join(d, "torch-info.json"), "w") as f:
        json.dump({"versions": {"torch": "made-up"}}, f)


def report(ours, torch, failed_round=None):
    with tempfile.TemporaryDirectory() as d:
        write_runs(d, ours, torch, failed_round)
        out = os.path.join(d, "out.json")
        p = subprocess.run([sys.executable, REPORT, "--runs", d, "--json", out, "--threads", "2",
                            "--rows", "matmul f32 64,64,64 0", "--torch-ok", "1", "--repeat", "1",
                            "--warmup", "1", "--rounds", str(len(ours))],
                           capture_output=True, text=True)
        data = json.load(open(out))
        row = [x for x in p.stdout.splitlines() if x.startswith("| matmul")]
        return p.returncode, row, data


def main():
    # ratios by round: 1.0, 0.5, 2.0 -> median 1.0; ours 100/200/400 -> 200; torch 100/400/200 -> 200
    rc, row, data = report([100, 200, 400], [100, 400, 200])
    assert rc == 0, rc
    assert row == ["| matmul f32 64³ | 200 GF/s (100–400) | 200 GF/s (100–400) | 1.00× (0.50–2.00) |"], row
    bp = data["rows"][0]["backplane"][0]
    assert bp["rounds_gflops"] == [100, 200, 400] and bp["ratios"] == [1.0, 0.5, 2.0], bp
    assert data["rounds"] == 3 and len(bp["runs"]) == 3
    # the ratio is not the ratio of the medians (300 / 150 would say 2.00)
    rc, row, _ = report([300, 300, 120], [100, 200, 150])
    assert row == ["| matmul f32 64³ | 300 GF/s (120–300) | 150 GF/s (100–200) | 1.50× (0.80–3.00) |"], row
    rc, row, _ = report([300, 100, 120, 200], [100, 100, 100, 100])
    assert row[0].endswith("| 1.60× (1.00–3.00) |"), row
    # one failed round: the cell says so and the exit status is 1
    rc, row, _ = report([100, 200, 400], [100, 400, 200], failed_round=2)
    assert rc == 1 and row == ["| matmul f32 64³ | failed: made to fail | 200 GF/s (100–400) | - |"], row
    # one round: plain figures
    rc, row, _ = report([150], [100])
    assert rc == 0 and row == ["| matmul f32 64³ | 150 GF/s | 100 GF/s | 1.50× |"], row
    print("cpu_compare_report: rounds, medians, ranges and failures as expected")


if __name__ == "__main__":
    main()
