# scripts/cpu-compare.sh (issue 20's table: backplane cpu beside PyTorch CPU) and its
# PyTorch side scripts/cpu_reference.py. A benchmark, not a test of speed: these entries
# check that the script measures every row on the backplane side, that the torch column
# says why it is empty when torch cannot be imported (tests/fixtures/no_torch hides any
# installed torch, as CI has none), and that bad usage is refused. Not in a cross build:
# the script runs bp-bench itself, outside the emulator.
# (no __pycache__ written into the source tree)
set(bp_no_torch "PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=${CMAKE_CURRENT_SOURCE_DIR}/fixtures/no_torch")
set(bp_cpu_compare ${PROJECT_SOURCE_DIR}/scripts/cpu-compare.sh)
set(bp_cpu_reference ${PROJECT_SOURCE_DIR}/scripts/cpu_reference.py)
find_program(BP_PYTHON3 python3)

if(CMAKE_CROSSCOMPILING)
  bp_skipped_test(cpu_compare_quick "cross build: cpu-compare.sh runs bp-bench outside the emulator")
  bp_skipped_test(cpu_compare_usage_errors "cross build: cpu-compare.sh runs bp-bench outside the emulator")
  bp_skipped_test(cpu_compare_report_rounds "cross build: cpu-compare.sh runs bp-bench outside the emulator")
elseif(NOT BP_PYTHON3)
  bp_skipped_test(cpu_compare_quick "no python3 (cpu-compare.sh writes its table with it)")
  bp_skipped_test(cpu_compare_usage_errors "no python3 (cpu-compare.sh writes its table with it)")
  bp_skipped_test(cpu_compare_report_rounds "no python3 (cpu-compare.sh writes its table with it)")
else()
  # Every row has a figure of ours and the reason in the torch column; no row failed;
  # the exit status is 0 and the JSON file was written.
  add_test(NAME cpu_compare_quick COMMAND sh -c
    "env ${bp_no_torch} BP_BENCH=$<TARGET_FILE:bp-bench> BP_NUM_THREADS=2 bash ${bp_cpu_compare} \
--quick --repeat 1 --warmup 1 --json ${CMAKE_CURRENT_BINARY_DIR}/cpu-compare/compare.json; \
echo \"exit $?\"; grep -c '\"backplane_gflops\": [0-9]' ${CMAKE_CURRENT_BINARY_DIR}/cpu-compare/compare.json")
  set(row "\\| [0-9.]+ GF/s \\| not importable: ImportError: torch is hidden by tests/fixtures/no_torch \\| torch not importable \\|\n")
  string(CONCAT bp_cpu_compare_rows
    "threads: BP_NUM_THREADS=2, .*"
    "PyTorch: not importable \\(cpu_reference: cannot import torch: ImportError: .*"
    "\n\\| work \\| backplane cpu \\| PyTorch CPU \\| ratio \\|\n\\|---\\|---\\|---\\|---\\|\n"
    "\\| matmul f32 256³ ${row}"
    "\\| matmul bf16 256³ ${row}"
    "\\| sdpa f32 \\(1,4,256,32\\) ${row}"
    "\\| sdpa f32 \\(1,4,256,32\\) causal ${row}"
    "\\| sdpa bf16 \\(1,4,256,32\\) ${row}"
    "\\| sdpa bf16 \\(1,4,256,32\\) causal ${row}"
    ".*exit 0\n6\n")
  set_tests_properties(cpu_compare_quick PROPERTIES TIMEOUT 300
    PASS_REGULAR_EXPRESSION "${bp_cpu_compare_rows}" FAIL_REGULAR_EXPRESSION "\\| failed: "
    ENVIRONMENT "BP_PLUGIN_PATH=;BP_PLUGINS=;BP_DEVICE=;BP_AUTOLOAD=;BP_CPU_MATMUL=;BP_CPU_SDPA=")

  # Bad --threads (0, a word, past 64), a missing value, an unknown option, a bad
  # BP_NUM_THREADS (a warning), no bp-bench: exit 2 each with the reason; the PyTorch side
  # without torch: exit 2 and why; its bad --threads: exit 2.
  add_test(NAME cpu_compare_usage_errors COMMAND sh -c
    "s=${bp_cpu_compare}; bash $s --threads 0; a=$?; bash $s --threads many; b=$?; \
bash $s --threads 65; c=$?; bash $s --repeat; d=$?; bash $s --bogus; e=$?; \
bash $s --rounds 0; i=$?; \
BP_NUM_THREADS=lots BP_BENCH=/nonexistent/bp-bench bash $s; f=$?; \
env ${bp_no_torch} python3 ${bp_cpu_reference} --matmul 8,8,8; g=$?; \
python3 ${bp_cpu_reference} --threads 0; h=$?; echo \"exit $a $b $c $d $e $f $g $h $i\"")
  string(CONCAT bp_cpu_compare_errors
    "--threads wants a whole number from 1 to 64, not '0'.*"
    "--threads wants a whole number from 1 to 64, not 'many'.*"
    "--threads wants a whole number from 1 to 64, not '65'.*"
    "--repeat needs a value.*"
    "unknown option '--bogus'.*"
    "--rounds wants a whole number from 1 to 100, not '0'.*"
    "BP_NUM_THREADS='lots' is not a whole number from 1 to 64; using the cores.*"
    "no bp-bench at /nonexistent/bp-bench.*"
    "cpu_reference: cannot import torch: ImportError: torch is hidden by tests/fixtures/no_torch.*"
    "--threads wants a whole number from 1 to 64, not '0'.*"
    "exit 2 2 2 2 2 2 2 2 2")
  set_tests_properties(cpu_compare_usage_errors PROPERTIES TIMEOUT 60
    PASS_REGULAR_EXPRESSION "${bp_cpu_compare_errors}")

  # --rounds: the report's medians, ranges, ratios by round and failed rounds, on runs
  # made up by the test (PyTorch's side too); and a real run of two rounds, each row's
  # figure with its range.
  add_test(NAME cpu_compare_report_rounds COMMAND sh -c
    "env PYTHONDONTWRITEBYTECODE=1 python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_cpu_compare_report.py && \
env ${bp_no_torch} BP_BENCH=$<TARGET_FILE:bp-bench> BP_NUM_THREADS=2 bash ${bp_cpu_compare} \
--quick --repeat 1 --warmup 1 --rounds 2 --json ${CMAKE_CURRENT_BINARY_DIR}/cpu-compare-rounds/compare.json")
  set(row_range "\\| [0-9.]+ GF/s \\([0-9]+–[0-9]+\\) \\| not importable: [^|]* \\| torch not importable \\|\n")
  string(CONCAT bp_cpu_compare_rounds
    "rounds, medians, ranges and failures as expected.*"
    "2 rounds: a cell is the median of the rounds.*"
    "\\| matmul f32 256³ ${row_range}"
    "\\| matmul bf16 256³ ${row_range}"
    "\\| sdpa f32 \\(1,4,256,32\\) ${row_range}"
    "\\| sdpa f32 \\(1,4,256,32\\) causal ${row_range}"
    "\\| sdpa bf16 \\(1,4,256,32\\) ${row_range}"
    "\\| sdpa bf16 \\(1,4,256,32\\) causal ${row_range}")
  set_tests_properties(cpu_compare_report_rounds PROPERTIES TIMEOUT 300
    PASS_REGULAR_EXPRESSION "${bp_cpu_compare_rounds}" FAIL_REGULAR_EXPRESSION "\\| failed: |Traceback"
    ENVIRONMENT "BP_PLUGIN_PATH=;BP_PLUGINS=;BP_DEVICE=;BP_AUTOLOAD=;BP_CPU_MATMUL=;BP_CPU_SDPA=")
endif()
