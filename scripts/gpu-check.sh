#!/usr/bin/env bash
# shellcheck disable=SC2317 # the step functions are called indirectly, through step()
# gpu-check.sh: the whole check on a machine with a GPU, run from the repo root.
#
#   scripts/gpu-check.sh [--device cuda:0|rocm:0]
#
# --device (or GPU_CHECK_DEVICE; default cuda:0) is the device under test: an NVIDIA GPU
# through the cuda plugin, or an AMD GPU through the rocm plugin (`hip:N` is the same as
# `rocm:N`). The steps that only NVIDIA's tools can take (the bare cuLaunchKernel floor,
# compute-sanitizer) say "skipped: <why>" for rocm.
#
# Steps (each timed, its exit status recorded; a failure does not stop the others):
#   deps         unpack .devdeps/*.deb (cJSON, cmocka, pkgconf) into /tmp/deps when present,
#                and point pkg-config / the loader / CMake at them
#   build        cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release; cmake --build -j16
#   ctest        ctest --test-dir build-gpu -j8 --output-on-failure -L cuda (the tests of the
#                device's plugin: -L rocm for rocm)
#   info         bp-info (and bp-info --json)
#   conformance  bp-conformance --device cuda:0 --junit $OUT/conformance-cuda.xml (the
#                device's type in the file names: conformance-rocm.xml for rocm)
#   conformance-full  bp-conformance --device cuda:0 --level full --filter 'ops.*'
#                --junit $OUT/conformance-cuda-full.xml (the tuned kernels' shapes)
#   conformance-portable  the conformance step again with BP_GPU_PORTABLE_KERNELS=1 (the
#                portable kernels an AMD build has, no cuBLASLt), --junit
#                $OUT/conformance-cuda-portable.xml; cuda only (rocm always runs them)
#   test-cuda-portable  test_cuda (matmul, sliced attention in regions as graphs) with
#                BP_GPU_PORTABLE_KERNELS=1, on cuda:0 only
#   demo         sliced_attention --device cuda:0 --shape 8,32,2048,128 --dtype bf16 --json
#   bench-launch bp-bench launch --device cuda:0 --json, and bp-cuda-launch-floor --json
#                (the driver's own host cost per launch; cuda only)
#   bench-alloc  bp-bench alloc --device cuda:0 --json
#   startup      bp-startup --json -- readme_example: the README example (cpu only) with
#                the plugins present and with BP_AUTOLOAD=0 (lazy backends: about equal)
#   bench-ops    bp-bench ops --device cuda:0 --dtype bf16 --matmul 8192,8192,8192
#                --sdpa 8,32,2048,128 --warmup 5 --repeat 20 --json
#   torch        python3 scripts/torch_reference.py --json (same shapes, same statistic)
#   sanitizer    compute-sanitizer --tool memcheck on the demo at 2,4,256,64 and on each
#                ctest entry whose name contains "cuda" (but conformance_cuda, see below);
#                cuda only
#   cpu-compare  (optional: only when GPU_CHECK_ONLY or GPU_CHECK_EXTRA names it) the host
#                CPU: scripts/cpu-compare.sh --threads 16 --rounds 3 --json $OUT/cpu-compare.json,
#                backplane's cpu matmul and sdpa beside PyTorch CPU (issue 20's table; with
#                --dnnl26 when .devdeps/dnnl26/ holds scripts/fetch-dnnl26-debs.sh's files)
# then a summary: each step's status and seconds, and the headline figures from the JSON
# files. Exit status 1 when a step failed, else 0.
#
# Output: everything under ${OUT:-/tmp/gpu-check}: <step>.log for every step, demo.json,
# bench-launch.json, bench-alloc.json, bench-ops.json, torch.json, conformance-cuda.xml,
# conformance-cuda-portable.xml, ctest.xml, sanitizer/<test>.log, cpu-compare.json,
# summary.txt and summary.json.
#
# Environment:
#   GPU_CHECK_SKIP="torch sanitizer"  steps to skip ("bench" skips the three bench steps)
#   GPU_CHECK_ONLY="build ctest"      run only these steps (the summary always runs)
#   GPU_CHECK_EXTRA="cpu-compare"     optional steps to run beside the others
#   GPU_CHECK_CPU_THREADS=16          cpu-compare's --threads (BP_NUM_THREADS and torch's)
#   GPU_CHECK_CPU_ENGINES=""          cpu-compare's --engines, e.g. "onednn blas builtin"
#   GPU_CHECK_CPU_ROUNDS=3            cpu-compare's --rounds (medians of alternated runs)
#   GPU_CHECK_BUILD_DIR=build-gpu     the build directory
#   GPU_CHECK_DEVICE=cuda:0           the device under test (as --device)
#   GPU_CHECK_SHAPE=8,32,2048,128     B,H,S,D of the demo, the sdpa bench and torch
#   GPU_CHECK_MATMUL=8192,8192,8192   M,N,K of the matmul bench and torch
#   GPU_CHECK_SAN_SHAPE=2,4,256,64    the demo's shape under compute-sanitizer
#   GPU_CHECK_SAN_EXCLUDE='^conformance_cuda$|^cuda_'  ctest names (regex) not run under
#                                     the sanitizer (the suite ran in its own step; the
#                                     cuda_* entries use no GPU; '' runs all)
#   GPU_CHECK_SAN_TIMEOUT=300         seconds per sanitized test
#   GPU_CHECK_JOBS=16 GPU_CHECK_CTEST_JOBS=8
#   GPU_CHECK_CTEST_ARGS="-L cuda -E ^conformance_cuda$"  which ctest entries (the
#                                     device's plugin's: rocm for rocm; the suite has its
#                                     own step; '' runs all)
#   GPU_CHECK_CMAKE_ARGS="..."        more arguments for the configure step
#   GPU_CHECK_DEADLINE=570            seconds from the start after which no step starts
#                                     (and a running step is cut), so that the summary
#                                     prints within a 10-minute session; 0: none
#   GPU_CHECK_DEPS_DIR=/tmp/deps  PYTHON=python3
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

DEVICE=${GPU_CHECK_DEVICE:-cuda:0}
while (($#)); do
    case $1 in
    --device) (($# >= 2)) || { echo "gpu-check: --device needs a value" >&2; exit 2; }
        DEVICE=$2; shift 2 ;;
    --device=*) DEVICE=${1#--device=}; shift ;;
    -h | --help) sed -n '3,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (usage: scripts/gpu-check.sh [--device cuda:0|rocm:0])" >&2
        exit 2 ;;
    esac
done
# The device's type names its plugin's tests (ctest -L), the conformance files and the
# steps that apply; hip is rocm's alias.
DEVICE_TYPE=${DEVICE%%:*}
DEVICE_TYPE=${DEVICE_TYPE,,}
[[ $DEVICE_TYPE == hip ]] && DEVICE_TYPE=rocm
DEVICE_INDEX=0
[[ $DEVICE == *:* ]] && DEVICE_INDEX=${DEVICE#*:}
if [[ $DEVICE_TYPE != cuda && $DEVICE_TYPE != rocm ]] || ! [[ $DEVICE_INDEX =~ ^[0-9]+$ ]]; then
    echo "gpu-check: --device '$DEVICE': expected cuda:N or rocm:N (hip:N)" >&2
    exit 2
fi
# Steps that need NVIDIA's tools: on another device each says why it is skipped.
declare -A NOT_FOR_DEVICE=()
if [[ $DEVICE_TYPE != cuda ]]; then
    NOT_FOR_DEVICE[sanitizer]="compute-sanitizer is NVIDIA's memcheck: it checks CUDA programs only"
    NOT_FOR_DEVICE[conformance-portable]="the rocm plugin has only the portable kernels: the conformance step ran them"
    NOT_FOR_DEVICE[test-cuda-portable]="test_cuda is the cuda plugin's own test"
fi

OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUILD=${GPU_CHECK_BUILD_DIR:-build-gpu}
SHAPE=${GPU_CHECK_SHAPE:-8,32,2048,128}
MATMUL=${GPU_CHECK_MATMUL:-8192,8192,8192}
SAN_SHAPE=${GPU_CHECK_SAN_SHAPE:-2,4,256,64}
SAN_EXCLUDE=${GPU_CHECK_SAN_EXCLUDE-^conformance_cuda\$|^cuda_}
SAN_TIMEOUT=${GPU_CHECK_SAN_TIMEOUT:-300}
JOBS=${GPU_CHECK_JOBS:-16}
CTEST_JOBS=${GPU_CHECK_CTEST_JOBS:-8}
DEADLINE=${GPU_CHECK_DEADLINE:-570}
DEPS=${GPU_CHECK_DEPS_DIR:-/tmp/deps}
PY=${PYTHON:-python3}
SKIP=" ${GPU_CHECK_SKIP:-} "
ONLY=${GPU_CHECK_ONLY:-}
EXTRA=" ${GPU_CHECK_EXTRA:-} "
OPTIONAL=" cpu-compare " # steps that run only when GPU_CHECK_ONLY or GPU_CHECK_EXTRA names them
CPU_THREADS=${GPU_CHECK_CPU_THREADS:-16}
CPU_ENGINES=${GPU_CHECK_CPU_ENGINES:-}
CPU_ROUNDS=${GPU_CHECK_CPU_ROUNDS:-3}
BIN=$BUILD/bin

STEPS=()
declare -A STATUS=() SECS=()
FAILED=0
STEP_END=0 # SECONDS at which the running step's time is up

skipped() {
    local name=$1
    [[ $SKIP == *" $name "* ]] && return 0
    if [[ $OPTIONAL == *" $name "* && " $ONLY " != *" $name "* && $EXTRA != *" $name "* ]]; then
        return 0
    fi
    # deps is what every other step needs: GPU_CHECK_ONLY does not leave it out
    if [[ -n $ONLY && $name != deps && " $ONLY " != *" $name "* ]]; then return 0; fi
    [[ $name == bench-* && $SKIP == *" bench "* ]] && return 0
    return 1
}

# lim CMD...: runs CMD with what is left of the step's time.
lim() {
    local left=$((STEP_END - SECONDS))
    if ((left <= 0)); then
        echo "gpu-check: no time left for: $*"
        return 124
    fi
    timeout -k 10 "$left" "$@"
}

# step NAME LIMIT FUNCTION: runs FUNCTION (in this shell, so exports stay) with its
# output in $OUT/NAME.log, and records its status and seconds.
step() {
    local name=$1 limit=$2 fn=$3 rc=0
    STEPS+=("$name")
    if skipped "$name"; then
        STATUS[$name]=skipped SECS[$name]=0
        echo "== $name: skipped"
        return 0
    fi
    if [[ -n ${NOT_FOR_DEVICE[$name]:-} ]]; then
        STATUS[$name]=skipped SECS[$name]=0
        echo "== $name: skipped: ${NOT_FOR_DEVICE[$name]} (device $DEVICE)"
        return 0
    fi
    if ((DEADLINE > 0)); then
        local left=$((DEADLINE - SECONDS - 15))
        if ((left < 20)); then
            STATUS[$name]="no time" SECS[$name]=0 FAILED=1
            echo "== $name: not run: GPU_CHECK_DEADLINE=${DEADLINE}s is (nearly) reached"
            return 0
        fi
        ((limit > left)) && limit=$left
    fi
    local log=$OUT/$name.log t0 t1
    echo "== $name (at most ${limit}s; log $log)"
    STEP_END=$((SECONDS + limit))
    t0=$(date +%s.%N)
    "$fn" >"$log" 2>&1 || rc=$?
    t1=$(date +%s.%N)
    SECS[$name]=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    if ((rc == 0)); then
        STATUS[$name]=ok
    else
        STATUS[$name]="FAIL($rc)"
        ((rc == 124 || rc == 137)) && STATUS[$name]="TIMEOUT"
        FAILED=1
        tail -n 15 "$log" | sed 's/^/   | /'
    fi
    echo "   ${STATUS[$name]} in ${SECS[$name]}s"
}

# ---- the steps (each returns nonzero on failure; set -e does not apply inside) ----

step_deps() {
    local debs=(.devdeps/*.deb)
    if [[ ! -e ${debs[0]} ]]; then
        echo "no .devdeps/*.deb: using the system's packages"
        return 0
    fi
    mkdir -p "$DEPS" || return
    local d
    for d in "${debs[@]}"; do
        echo "unpacking $d"
        if command -v dpkg >/dev/null; then
            dpkg -x "$d" "$DEPS" || return
        else # ar + tar, as dpkg -x does
            local tmp
            tmp=$(mktemp -d) || return
            (cd "$tmp" && ar x "$OLDPWD/$d" && tar -xf data.tar.* -C "$DEPS") || return
            rm -rf "$tmp"
        fi
    done
    # The .pc files name /usr: point them at the unpacked tree.
    local pc
    while IFS= read -r pc; do
        sed -i -E "s#(^|[=[:space:]]|-L|-I)/usr([/[:space:]]|\$)#\\1$DEPS/usr\\2#g" "$pc" || return
        echo "== $pc"
        cat "$pc"
    done < <(find "$DEPS" -name '*.pc')
}

export_deps() {
    local lib=$DEPS/usr/lib/x86_64-linux-gnu
    [[ -d $lib/pkgconfig ]] || return 0
    export PKG_CONFIG_PATH="$lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export CMAKE_PREFIX_PATH="$DEPS/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
    if ! command -v pkg-config >/dev/null && [[ -x $DEPS/usr/bin/pkgconf ]]; then
        export PKG_CONFIG="$DEPS/usr/bin/pkgconf" # read by CMake's FindPkgConfig
    fi
    echo "   using $DEPS: PKG_CONFIG_PATH=$PKG_CONFIG_PATH${PKG_CONFIG:+ PKG_CONFIG=$PKG_CONFIG}"
}

step_build() {
    # shellcheck disable=SC2086 # GPU_CHECK_CMAKE_ARGS is a list of words
    lim cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release ${GPU_CHECK_CMAKE_ARGS:-} || return
    lim cmake --build "$BUILD" -j "$JOBS"
}

step_ctest() {
    # shellcheck disable=SC2086 # the arguments are words
    lim ctest --test-dir "$BUILD" -j "$CTEST_JOBS" --output-on-failure \
        --output-junit "$OUT/ctest.xml" ${GPU_CHECK_CTEST_ARGS--L $DEVICE_TYPE -E ^conformance_$DEVICE_TYPE\$}
}

step_info() {
    lim "$BIN/bp-info" || return
    lim "$BIN/bp-info" --json >"$OUT/bp-info.json"
}

step_conformance() {
    lim "$BIN/bp-conformance" --device "$DEVICE" --junit "$OUT/conformance-$DEVICE_TYPE.xml"
}

step_conformance_full() {
    lim "$BIN/bp-conformance" --device "$DEVICE" --level full --filter 'ops.*' --timeout 280 \
        --junit "$OUT/conformance-$DEVICE_TYPE-full.xml"
}

# CMD... >FILE.json: runs CMD with its stdout in $OUT/FILE and copies it to the log.
json_to() {
    local file=$1 rc=0
    shift
    echo "\$ $*"
    lim "$@" >"$OUT/$file" || rc=$?
    cat "$OUT/$file"
    return "$rc"
}

step_demo() {
    local extra=() help
    help=$("$BIN/sliced_attention" --help 2>&1) || true
    if [[ $help == *--repeat* ]]; then
        extra=(--repeat 3)
    fi
    json_to demo.json "$BIN/sliced_attention" --device "$DEVICE" --shape "$SHAPE" --dtype bf16 \
        --json "${extra[@]}"
}

step_bench_launch() {
    local rc=0
    json_to bench-launch.json "$BIN/bp-bench" launch --device "$DEVICE" --json || rc=$?
    # The driver's own cost per cuLaunchKernel: the floor under the figure above.
    if [[ $DEVICE_TYPE != cuda ]]; then
        echo "bp-cuda-launch-floor: skipped: it measures cuLaunchKernel (cuda only; device $DEVICE)"
    else
        json_to launch-floor.json "$BIN/bp-cuda-launch-floor" --json || rc=$?
    fi
    return "$rc"
}
step_bench_alloc() { json_to bench-alloc.json "$BIN/bp-bench" alloc --device "$DEVICE" --json; }
step_startup() { json_to startup.json "$BIN/bp-startup" --json -- "$BIN/readme_example"; }
step_bench_ops() {
    json_to bench-ops.json "$BIN/bp-bench" ops --device "$DEVICE" --dtype bf16 \
        --matmul "$MATMUL" --sdpa "$SHAPE" --warmup 5 --repeat 20 --json
}

step_torch() {
    # PyTorch for ROCm names AMD GPUs cuda:N too.
    json_to torch.json "$PY" scripts/torch_reference.py --device "cuda:$DEVICE_INDEX" --shape "$SHAPE" \
        --matmul "$MATMUL" --warmup 5 --repeat 20 --json
}

step_sanitizer() {
    local rc=0
    command -v compute-sanitizer >/dev/null || { echo "compute-sanitizer is not on PATH"; return 127; }
    mkdir -p "$OUT/sanitizer" || return
    echo "\$ compute-sanitizer --tool memcheck --error-exitcode 1 sliced_attention --shape $SAN_SHAPE"
    lim compute-sanitizer --tool memcheck --error-exitcode 1 "$BIN/sliced_attention" \
        --device "$DEVICE" --shape "$SAN_SHAPE" --dtype bf16 >"$OUT/sanitizer/demo.log" 2>&1 || rc=$?
    tail -n 5 "$OUT/sanitizer/demo.log"
    echo "demo under memcheck: exit $rc"
    # Each ctest entry whose name contains "cuda", its command under the sanitizer, with
    # the test's environment and working directory.
    lim ctest --test-dir "$BUILD" -N -R cuda --show-only=json-v1 >"$OUT/sanitizer/tests.json" ||
        return
    local left=$((STEP_END - SECONDS)) prc=0
    "$PY" - "$OUT/sanitizer" "$SAN_EXCLUDE" "$SAN_TIMEOUT" "$left" <<'PY' || prc=$?
import json, os, re, subprocess, sys, time
outdir, exclude, per_test, left = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
end = time.monotonic() + left
tests = json.load(open(os.path.join(outdir, "tests.json"))).get("tests", [])
failed = 0
print(f"{len(tests)} ctest entries match 'cuda'")
for t in tests:
    name = t.get("name", "?")
    if exclude and re.search(exclude, name):
        print(f"  {name:<34} excluded (GPU_CHECK_SAN_EXCLUDE)")
        continue
    props = {p.get("name"): p.get("value") for p in t.get("properties", [])}
    env = dict(os.environ)
    for kv in props.get("ENVIRONMENT") or []:
        k, _, v = kv.partition("=")
        env[k] = v
    cmd = t.get("command") or []
    remaining = int(end - time.monotonic())
    if not cmd or remaining < 10:
        print(f"  {name:<34} {'no command' if not cmd else 'no time left'}")
        failed += bool(cmd)
        continue
    full = ["compute-sanitizer", "--tool", "memcheck", "--error-exitcode", "1"] + cmd
    log = os.path.join(outdir, re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".log")
    t0 = time.monotonic()
    with open(log, "w") as f:
        f.write("$ " + " ".join(full) + "\n")
        f.flush()
        try:
            rc = subprocess.run(full, env=env, cwd=props.get("WORKING_DIRECTORY") or None,
                                stdout=f, stderr=subprocess.STDOUT,
                                timeout=min(per_test, remaining)).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    text = open(log, errors="replace").read()
    m = re.findall(r"ERROR SUMMARY: (\d+) error", text)
    errors = sum(int(x) for x in m) if m else None
    skip_rc = props.get("SKIP_RETURN_CODE")
    if skip_rc is not None and rc == int(skip_rc):
        status = "skipped"
    elif rc == 0 and not errors:
        status = "ok"
    else:
        status = f"FAIL (exit {rc})"
        failed += 1
    print(f"  {name:<34} {status:<16} {time.monotonic() - t0:7.1f}s  "
          f"memcheck errors: {'n/a' if errors is None else errors}  ({log})")
print(f"sanitized tests failed: {failed}")
sys.exit(1 if failed else 0)
PY
    ((rc)) || rc=$prc
    return "$rc"
}

# The host CPU, not the GPU: backplane's cpu ops beside PyTorch CPU (and oneDNN 2.6 when
# its .deb files were carried), at GPU_CHECK_CPU_THREADS threads.
step_cpu_compare() {
    local args=(--threads "$CPU_THREADS" --rounds "$CPU_ROUNDS" --json "$OUT/cpu-compare.json")
    [[ -n $CPU_ENGINES ]] && args+=(--engines "$CPU_ENGINES")
    compgen -G ".devdeps/dnnl26/*.deb" >/dev/null && args+=(--dnnl26)
    BP_BENCH=$BIN/bp-bench PYTHON=$PY lim bash scripts/cpu-compare.sh "${args[@]}"
}

# The conformance suite on the portable kernels (BP_GPU_PORTABLE_KERNELS=1): every kernel
# an AMD build holds, run on this GPU. A rocm device runs nothing else anyway.
step_conformance_portable() {
    BP_GPU_PORTABLE_KERNELS=1 lim "$BIN/bp-conformance" --device "$DEVICE" \
        --junit "$OUT/conformance-cuda-portable.xml"
}

# The cuda plugin's own GPU test (it opens cuda:0) on the portable kernels.
step_test_cuda_portable() {
    if [[ $DEVICE != cuda:0 ]]; then
        echo "test-cuda-portable: skipped: test_cuda runs on cuda:0 only (device $DEVICE)"
        return 0
    fi
    BP_GPU_PORTABLE_KERNELS=1 lim "$BIN/test_cuda"
}

# ---- run ----

echo "gpu-check: $(pwd), build $BUILD, device $DEVICE, logs in $OUT"
step deps 120 step_deps
export_deps
step build 480 step_build
step ctest 480 step_ctest
step info 60 step_info
step conformance 480 step_conformance
step conformance-full 300 step_conformance_full
step conformance-portable 480 step_conformance_portable
step test-cuda-portable 120 step_test_cuda_portable
step demo 300 step_demo
step bench-launch 120 step_bench_launch
step bench-alloc 120 step_bench_alloc
step startup 120 step_startup
step bench-ops 300 step_bench_ops
step torch 300 step_torch
step sanitizer 600 step_sanitizer
step cpu-compare 400 step_cpu_compare

# ---- summary ----

steps_arg=()
for s in "${STEPS[@]}"; do steps_arg+=("$s=${STATUS[$s]}=${SECS[$s]}"); done
{
    echo
    echo "gpu-check summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), device $DEVICE, logs in $OUT)"
    "$PY" - "$OUT" "$DEVICE_TYPE" "${steps_arg[@]}" <<'PY' || echo "(the summary script failed: $?)"
import json, os, re, sys
import xml.etree.ElementTree as ET

out, device_type = sys.argv[1], sys.argv[2]
steps = [a.split("=", 2) for a in sys.argv[3:]]
print(f"  {'step':<14} {'status':<10} {'seconds':>8}")
for name, status, secs in steps:
    print(f"  {name:<14} {status:<10} {secs:>8}")

def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except Exception:
        return None

def dig(x, *path):
    for p in path:
        if isinstance(x, dict):
            x = x.get(p)
        elif isinstance(x, list) and isinstance(p, int) and -len(x) <= p < len(x):
            x = x[p]
        else:
            return None
    return x

def num(x):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else None

def find(rows, key, value):
    if isinstance(rows, dict):  # tolerate {"rows": [...]} and similar
        rows = next((v for v in rows.values() if isinstance(v, list)), None)
    for r in rows or []:
        if isinstance(r, dict) and r.get(key) == value:
            return r
    return None

def scale(x, f):
    return x * f if num(x) is not None else None

demo, launch, alloc = load("demo.json"), load("bench-launch.json"), load("bench-alloc.json")
floor = load("launch-floor.json")
ops, torch = load("bench-ops.json"), load("torch.json")
strict, bfs = find(demo, "scenario", "sliced_strict"), find(demo, "scenario", "sliced_bfs")
eager = find(demo, "scenario", "sliced_eager")
ours_add_ns = num(dig(launch, "add_host_ns_per_op")) or num(dig(find(dig(launch, "results"), "name", "add"), "host_ns_per_op"))
ours_add_sync_ns = num(dig(launch, "add_synced_ns_per_op")) or num(dig(find(dig(launch, "results"), "name", "add"), "synced_ns_per_op"))
ops_sdpa = find(dig(ops, "results"), "name", "sdpa")
ops_mm = find(dig(ops, "results"), "name", "matmul")
TORCH_COMPILE_MS = 12.7  # the seed's torch.compile figure for the sliced program

rows = [  # label, ours, reference, better (lower/higher)
    ("demo scratch MB: strict | bfs", num(dig(strict, "peak_scratch_mb")), num(dig(bfs, "peak_scratch_mb")), "lower"),
    ("demo time ms: strict | bfs", num(dig(strict, "time_ms")), num(dig(bfs, "time_ms")), "lower"),
    ("demo strict ms | torch.compile 12.7", num(dig(strict, "time_ms")), TORCH_COMPILE_MS, "lower"),
    ("sliced eager ms | torch eager", num(dig(eager, "time_ms")), num(dig(torch, "sliced", "sliced_eager", "ms")), "lower"),
    ("host us/tiny add | torch", scale(ours_add_ns, 1e-3), num(dig(torch, "launch", "add", "host_us_per_op")), "lower"),
    ("  with final sync | torch", scale(ours_add_sync_ns, 1e-3), num(dig(torch, "launch", "add", "synced_us_per_op")), "lower"),
    ("sdpa TFLOP/s | torch flash", num(dig(ops_sdpa, "backplane_tflops")), num(dig(torch, "sdpa", "flash", "tflops")), "higher"),
    ("sdpa TFLOP/s | torch cuDNN", num(dig(ops_sdpa, "backplane_tflops")), num(dig(torch, "sdpa", "cudnn", "tflops")), "higher"),
    ("matmul TFLOP/s | torch cuBLAS", num(dig(ops_mm, "backplane_tflops")), num(dig(torch, "matmul", "tflops")), "higher"),
    ("host us/tiny add | bare cuLaunchKernel", scale(ours_add_ns, 1e-3), scale(num(dig(floor, "large_ns_per_launch")), 1e-3), "lower"),
    ("cached alloc+free ns", num(dig(alloc, "ns_per_pair")), None, "lower"),
]

def fmt(x):
    if x is None:
        return "n/a"
    return f"{x:.3g}" if abs(x) < 10 else f"{x:.1f}"

def verdict(ours, ref, better):
    if ours is None or ref is None or ours <= 0 or ref <= 0:
        return "n/a", ""
    r = ours / ref
    if better == "lower":
        note = f"{1 / r:.1f}x lower" if r < 1 else f"{r:.2f}x higher"
    else:
        note = f"{r:.2f}x higher" if r >= 1 else f"{100 * r:.0f}% of the reference"
    return f"{r:.3g}", note

print()
print(f"  {'figure: ours | reference':<38} {'ours':>9} {'reference':>10} {'ratio':>7}  note")
summary = {"steps": {n: {"status": s, "seconds": float(t)} for n, s, t in steps}, "figures": []}
for label, ours, ref, better in rows:
    ratio, note = verdict(ours, ref, better)
    print(f"  {label:<38} {fmt(ours):>9} {fmt(ref):>10} {ratio:>7}  {note}{' (' + better + ' is better)' if note else ''}")
    summary["figures"].append({"figure": label, "ours": ours, "reference": ref,
                               "ratio": None if ratio == "n/a" else float(ratio), "better": better})

extra = []
def g2(x):
    return "n/a" if num(x) is None else f"{x:.2g}"
if ops:
    extra.append(f"bench-ops sampled rel. error: sdpa {g2(dig(ops_sdpa, 'sampled_max_rel_err'))}, "
                 f"matmul {g2(dig(ops_mm, 'sampled_max_rel_err'))}")
startup = load("startup.json")
if startup:
    extra.append("startup (readme_example on cpu): {:.1f} ms, {:.1f} MiB with the plugins; "
                 "{:.1f} ms, {:.1f} MiB with BP_AUTOLOAD=0".format(
                     dig(startup, "autoload", "ms") or 0, (dig(startup, "autoload", "max_rss_kib") or 0) / 1024,
                     dig(startup, "no_autoload", "ms") or 0, (dig(startup, "no_autoload", "max_rss_kib") or 0) / 1024))
if isinstance(demo, list):
    errs = [r.get("max_error") for r in demo if isinstance(r, dict)]
    extra.append("demo max errors: " + ", ".join(g2(e) for e in errs))
try:
    root = ET.parse(os.path.join(out, f"conformance-{device_type}.xml")).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    tot = {k: sum(int(s.get(k, 0) or 0) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    extra.append("conformance on {}: {tests} tests, {failures} failures, {errors} errors, "
                 "{skipped} skipped".format(device_type, **tot))
    summary["conformance"] = tot
except Exception:
    extra.append(f"conformance on {device_type}: n/a")
try:
    m = re.findall(r"\d+% tests passed(?:, \d+ tests failed)? out of \d+", open(os.path.join(out, "ctest.log")).read())
    extra.append("ctest: " + (m[-1] if m else "n/a"))
except Exception:
    extra.append("ctest: n/a")
def junit_totals(name):
    root = ET.parse(os.path.join(out, name)).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    return {k: sum(int(s.get(k, 0) or 0) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
if os.path.exists(os.path.join(out, "conformance-cuda-portable.xml")):
    try:
        summary["conformance_portable"] = tot = junit_totals("conformance-cuda-portable.xml")
        extra.append("conformance on cuda, portable kernels: {tests} tests, {failures} failures, "
                     "{errors} errors, {skipped} skipped".format(**tot))
    except Exception:
        extra.append("conformance on cuda, portable kernels: n/a")
dev = dig(torch, "device_name")
if dev:
    extra.append(f"GPU: {dev}; torch {dig(torch, 'torch')}")
for e in extra:
    print("  " + e)
cpu = load("cpu-compare.json")
if cpu:
    host = cpu.get("host") or {}
    flags = ", ".join(k for k, v in (host.get("flags") or {}).items() if v)
    versions = dig(cpu, "torch", "versions") or {}
    peer = (f"PyTorch {versions.get('torch')} with {versions.get('onednn')}" if versions
            else f"PyTorch not importable ({cpu.get('torch_unavailable')})")
    print(f"\n  cpu-compare on the host CPU: {host.get('model')} ({host.get('cores')} cores; "
          f"{flags}), {cpu.get('threads')} threads, {cpu.get('rounds', 1)} round(s); {peer}")
    for table in ("table_markdown", "dnnl26_table_markdown"):
        if cpu.get(table):
            print()
            print("\n".join("  " + line for line in cpu[table].splitlines()))
    summary["cpu_compare"] = {"threads": cpu.get("threads"), "rows": [
        {"work": r.get("work"), "torch_gflops": dig(r, "torch", "gflops"),
         "backplane_gflops": [b.get("gflops") for b in r.get("backplane") or []],
         "dnnl26_gflops": dig(r, "dnnl26", "gflops")} for r in cpu.get("rows") or []]}
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(summary, f, indent=2)
PY
    if ((FAILED)); then echo "gpu-check: FAILED (a step failed or did not run)"; else echo "gpu-check: all steps passed"; fi
} | tee "$OUT/summary.txt"
exit "$FAILED"
