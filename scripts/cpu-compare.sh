#!/usr/bin/env bash
# cpu-compare.sh: backplane's cpu matmul and sdpa beside PyTorch CPU on the same work and
# the same threads, in one run: issue 20's table, regenerated on any host.
#
#   scripts/cpu-compare.sh [--threads N] [--quick] [--engines "LIST"]
#                          [--sdpa-engines "LIST"] [--repeat N] [--warmup N]
#                          [--rounds N] [--json FILE] [--dnnl26]
#
# Rows: matmul f32 2048^3, matmul bf16 2048^3, sdpa f32 (4,16,1024,64), the same causal,
# sdpa bf16, sdpa bf16 causal (--quick: matmul 256^3 and sdpa (1,4,256,32), for a smoke
# test). For each row, in turn: `bp-bench ops --device cpu` with BP_NUM_THREADS=N, then
# scripts/cpu_reference.py (torch.set_num_threads(N)) on the same work, so that ours and
# torch's runs of a row are next to each other in time. Both count flops the same way
# (matmul 2*M*N*K; sdpa 4*B*H*S*S*D, half of it causal), take random inputs rotated
# among the same number of sets, and report the median of --repeat runs (default 10)
# after --warmup runs (default 2). Nothing is built: the bp side runs BP_BENCH.
#
#   --threads N        BP_NUM_THREADS and torch's threads, 1 to 64 (default:
#                      BP_NUM_THREADS, else the cores, at most 64)
#   --engines LIST     the matmul rows once per cpu matmul engine, BP_CPU_MATMUL=each
#                      (e.g. "onednn blas builtin"); default: one run, the variable as
#                      the environment has it
#   --sdpa-engines LIST  the sdpa rows once per BP_CPU_SDPA value (e.g. "avx512bf16
#                      avx512 generic")
#   --dnnl26           also oneDNN 2.6 (Debian's libdnnl-dev) called directly on the
#                      matmul rows, in a second table: bench/dnnl_matmul_v2.c, compiled
#                      here with cc -fopenmp ... -ldnnl against DNNL26_PREFIX, else the
#                      .deb files of scripts/fetch-dnnl26-debs.sh (.devdeps/dnnl26/,
#                      unpacked with dpkg -x), else /usr
#   --rounds N         all the rows N times over, 1 to 100 (default 1): on a shared host,
#                      where one process's median moves by 10 to 20 %, each cell is then
#                      the median of the N rounds with their range, and the ratio the
#                      median of the N ratios of runs side by side (each round's ours over
#                      its torch), with their range
#   --json FILE        where the JSON goes (default: ${OUT:-/tmp/cpu-compare}/compare.json)
#
# Prints the host (CPU model, AVX-512 / AVX512-BF16 / AMX flags, cores), torch's version
# with its oneDNN and MKL, the engines backplane reported (bp-info, and the bench's own
# log lines at BP_LOG=info), then the Markdown table
#   | work | backplane cpu | PyTorch CPU | ratio |
# (ratio: ours / torch's GF/s). Where torch cannot be imported, the torch column says
# why and the ratio column "torch not importable". The JSON file holds all of it, every
# run's own JSON and the table (scripts/cpu_compare_report.py writes both).
#
# Environment: BP_BENCH (default build/bin/bp-bench), PYTHON (the python with torch;
# default python3), OUT, DNNL26_PREFIX.
# Exit status: 0 when every backplane run succeeded (a missing torch is reported, not an
# error), 1 when one failed, 2 for a bad command line or a missing bp-bench.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PYTHON:-python3}
BENCH=${BP_BENCH:-$ROOT/build/bin/bp-bench}
# The oneDNN that scripts/onednn.sh installed, as `make bench` uses it, unless
# BP_ONEDNN_LIBRARY names another.
if [[ -z ${BP_ONEDNN_LIBRARY:-} && -e $ROOT/.onednn/lib/libdnnl.so.3 ]]; then
    export BP_ONEDNN_LIBRARY=$ROOT/.onednn/lib/libdnnl.so.3
fi
MAX_THREADS=64 # the cpu backend's pool (ops/parallel.c)

usage() {
    sed -n '5,7p' "${BASH_SOURCE[0]}" | sed '1s/^# */usage: /; 2,3s/^# //' >&2
    echo "$1" >&2
    exit 2
}

whole() { [[ $1 =~ ^[0-9]+$ ]] && (($1 >= $2 && $1 <= $3)); }

default_threads() {
    local env=${BP_NUM_THREADS:-} cores
    if [[ -n $env ]] && whole "$env" 1 "$MAX_THREADS"; then
        echo "$env"
        return
    fi
    [[ -n $env ]] && echo "cpu-compare: BP_NUM_THREADS='$env' is not a whole number from 1" \
        "to $MAX_THREADS; using the cores" >&2
    cores=$(nproc 2>/dev/null || echo 1)
    echo $((cores > MAX_THREADS ? MAX_THREADS : cores))
}

threads="" quick=0 dnnl26=0 repeat=10 warmup=2 rounds=1 json=""
matmul_engines="" sdpa_engines=""
while (($#)); do
    case $1 in
    --quick) quick=1 ;;
    --dnnl26) dnnl26=1 ;;
    --threads | --engines | --sdpa-engines | --repeat | --warmup | --rounds | --json)
        (($# >= 2)) || usage "cpu-compare: $1 needs a value"
        case $1 in
        --threads)
            whole "$2" 1 "$MAX_THREADS" ||
                usage "cpu-compare: --threads wants a whole number from 1 to $MAX_THREADS, not '$2'"
            threads=$2 ;;
        --repeat | --warmup)
            whole "$2" 1 1000 || usage "cpu-compare: $1 wants a whole number from 1 to 1000, not '$2'"
            if [[ $1 == --repeat ]]; then repeat=$2; else warmup=$2; fi ;;
        --rounds)
            whole "$2" 1 100 || usage "cpu-compare: --rounds wants a whole number from 1 to 100, not '$2'"
            rounds=$2 ;;
        --engines) matmul_engines=$2 ;;
        --sdpa-engines) sdpa_engines=$2 ;;
        --json) json=$2 ;;
        esac
        shift ;;
    -h | --help) sed -n '2,48p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage "cpu-compare: unknown option '$1'" ;;
    esac
    shift
done
for e in $matmul_engines $sdpa_engines; do
    [[ $e =~ ^[a-z0-9_]+$ ]] || usage "cpu-compare: an engine is a word like onednn, not '$e'"
done
threads=${threads:-$(default_threads)}
json=${json:-${OUT:-/tmp/cpu-compare}/compare.json}
if [[ ! -x $BENCH ]]; then
    echo "cpu-compare: no bp-bench at $BENCH: build it (cmake --build build --target bp-bench)" \
        "or set BP_BENCH" >&2
    exit 2
fi
command -v python3 >/dev/null || { echo "cpu-compare: python3 is needed for the table" >&2; exit 2; }
mkdir -p "$(dirname "$json")"
RUNS=$(mktemp -d)
trap 'rm -rf "$RUNS"' EXIT

if ((quick)); then
    mm=256,256,256 attn=1,4,256,32
else
    mm=2048,2048,2048 attn=4,16,1024,64
fi
# op dtype shape causal
ROWS=("matmul f32 $mm 0" "matmul bf16 $mm 0" "sdpa f32 $attn 0" "sdpa f32 $attn 1"
      "sdpa bf16 $attn 0" "sdpa bf16 $attn 1")

# ---- the host, the versions, the engines ----
{ lscpu 2>/dev/null || cat /proc/cpuinfo; } >"$RUNS/host.txt"
torch_ok=1
"$PY" "$ROOT/scripts/cpu_reference.py" --info --json --threads "$threads" \
    >"$RUNS/torch-info.json" 2>"$RUNS/torch-info.err" || torch_ok=0
if ((!torch_ok)); then
    echo "cpu-compare: no PyTorch column: $(tail -n 1 "$RUNS/torch-info.err")" >&2
fi
info=$(dirname "$BENCH")/bp-info
if [[ -x $info ]]; then
    BP_NUM_THREADS=$threads "$info" >"$RUNS/bp-info.txt" 2>&1 || true
fi

# oneDNN 2.6 for --dnnl26: DNNL26_PREFIX, else the .deb files of
# scripts/fetch-dnnl26-debs.sh unpacked (a machine without network), else /usr.
dnnl26_bin="" dnnl26_lib=""
if ((dnnl26)); then
    prefix=${DNNL26_PREFIX:-}
    debs=("$ROOT"/.devdeps/dnnl26/*.deb)
    if [[ -z $prefix && -e ${debs[0]} ]] && command -v dpkg >/dev/null; then
        for d in "${debs[@]}"; do dpkg -x "$d" "$RUNS/dnnl26"; done
        prefix=$RUNS/dnnl26/usr
    fi
    prefix=${prefix:-/usr}
    dnnl26_lib=$prefix/lib/x86_64-linux-gnu
    dnnl26_bin=$RUNS/dnnl_matmul_v2
    # shellcheck disable=SC2086 # CC may hold words
    if ! ${CC:-cc} -O2 -std=c11 -fopenmp -I"$prefix/include" "$ROOT/bench/dnnl_matmul_v2.c" \
        -L"$dnnl26_lib" -Wl,-rpath-link,"$dnnl26_lib" -ldnnl -lm -o "$dnnl26_bin" \
        2>"$RUNS/dnnl26-build.err"; then
        echo "cpu-compare: --dnnl26: cannot build bench/dnnl_matmul_v2.c against $prefix" \
            "(libdnnl-dev 2.x installed, or scripts/fetch-dnnl26-debs.sh's files, or" \
            "DNNL26_PREFIX naming an unpacked one):" >&2
        cat "$RUNS/dnnl26-build.err" >&2
        dnnl26_bin=""
    fi
fi

# ---- the rows ----
manifest=$RUNS/manifest.tsv
: >"$manifest"
# run ROW KIND VARIANT CMD...: runs CMD with its stdout in a JSON file and stderr in a
# log, and notes it in the manifest (row, kind, variant, exit status, files, round).
run() {
    local row=$1 kind=$2 variant=$3 rc=0 base
    shift 3
    base=$RUNS/$round-$row-$kind-${variant:-default}
    "$@" >"$base.json" 2>"$base.err" || rc=$?
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$row" "$kind" "$variant" "$rc" "$base.json" \
        "$base.err" "$round" >>"$manifest"
    return 0
}

echo "cpu-compare: $threads threads, median of $repeat runs after $warmup warm-up(s)," \
    "$rounds round(s); bp-bench $BENCH; torch: $PY" >&2
for ((round = 1; round <= rounds; round++)); do
    for i in "${!ROWS[@]}"; do
        read -r op dtype shape causal <<<"${ROWS[$i]}"
        flags=(--dtype "$dtype" "--$op" "$shape" --warmup "$warmup" --repeat "$repeat")
        ((causal)) && flags+=(--causal)
        if [[ $op == matmul ]]; then var=BP_CPU_MATMUL engines=$matmul_engines; else
            var=BP_CPU_SDPA engines=$sdpa_engines; fi
        label="$op $dtype $shape"
        ((causal)) && label+=" causal"
        echo "  round $round/$rounds, row $((i + 1))/${#ROWS[@]}: $label" >&2
        read -r -a variants <<<"$engines"
        ((${#variants[@]})) || variants=("") # one run, the variable as the environment has it
        for engine in "${variants[@]}"; do
            envs=(BP_NUM_THREADS="$threads" BP_LOG=info)
            [[ -n $engine ]] && envs+=("$var=$engine")
            run "$i" bp "$engine" env "${envs[@]}" "$BENCH" ops --device cpu "${flags[@]}" --json
        done
        if ((torch_ok)); then
            run "$i" torch "" "$PY" "$ROOT/scripts/cpu_reference.py" --threads "$threads" "${flags[@]}" --json
        fi
        if [[ -n $dnnl26_bin && $op == matmul ]]; then
            run "$i" dnnl26 "" env LD_LIBRARY_PATH="$dnnl26_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
                "$dnnl26_bin" --matmul "$shape" --dtype "$dtype" --threads "$threads" \
                --warmup "$warmup" --repeat "$repeat"
        fi
    done
done

python3 "$ROOT/scripts/cpu_compare_report.py" --runs "$RUNS" --json "$json" \
    --threads "$threads" --rows "${ROWS[@]}" --torch-ok "$torch_ok" \
    --engines "$matmul_engines" --sdpa-engines "$sdpa_engines" --bench "$BENCH" \
    --python "$PY" --repeat "$repeat" --warmup "$warmup" --rounds "$rounds" --dnnl26 "$dnnl26"
