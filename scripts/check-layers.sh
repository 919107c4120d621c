#!/usr/bin/env bash
# check-layers.sh: checks the layer table (scripts/layers.txt, docs/architecture.md
# "Layers") against the code, two ways:
#   includes: every #include "x" of a source file of the tree resolves to the folder
#             that holds x (next to the file, else the one file of the tree so named);
#             that folder's layer must be one the file's layer may use.
#   symbols:  every symbol an object of libbackplane references (nm -u) and another
#             object of it defines (nm --defined-only) must be defined in a layer the
#             referencing object's layer may use.
# And docs/architecture.md, where the tree has it, shows the same table ("### The layer
# table": rows, folders, what each may use).
# Each violation is one line naming the file and the header or symbol; exit 1 if any,
# else 0 with a one-line summary; exit 2 on bad usage (no build directory, no objects,
# a folder of sources the table does not cover).
#
# usage: scripts/check-layers.sh [--source DIR] [--table FILE] [--nm PROGRAM]
#                                 [--objects FILE] BUILD_DIR
#   --source  the source tree (default: the tree this script is in)
#   --table   the layer table (default: SOURCE/scripts/layers.txt)
#   --nm      the nm that reads the build's objects (default: $NM, else nm; the ctest
#             entry passes CMAKE_NM, the cross toolchain's in a cross build)
#   --objects the objects of libbackplane in this configuration (its own and those of the
#             static libraries linked into it), one path a line (default:
#             BUILD_DIR/layering/backplane-objects.txt, which tests/layers.cmake writes,
#             else every .o under BUILD_DIR/CMakeFiles/backplane.dir): objects a moved
#             or removed source left behind are not read
#   BUILD_DIR a configured and built tree: its objects of libbackplane are
#             BUILD_DIR/CMakeFiles/backplane.dir/<folder>/<file>.o
set -euo pipefail

usage_line="usage: $0 [--source DIR] [--table FILE] [--nm PROGRAM] [--objects FILE] BUILD_DIR"
usage() {
  echo "$usage_line" >&2
  exit 2
}
fail_usage() {
  echo "check-layers: $*" >&2
  exit 2
}

source_dir="$(cd "$(dirname "$0")/.." && pwd)"
table=""
nm_program="${NM:-nm}"
object_list=""
build_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --source) [ $# -ge 2 ] || usage; source_dir="$2"; shift 2 ;;
    --table) [ $# -ge 2 ] || usage; table="$2"; shift 2 ;;
    --nm) [ $# -ge 2 ] || usage; nm_program="$2"; shift 2 ;;
    --objects) [ $# -ge 2 ] || usage; object_list="$2"; shift 2 ;;
    -h|--help) echo "$usage_line"; exit 0 ;;
    -*) echo "check-layers: unknown option '$1'" >&2; usage ;;
    *) [ -z "$build_dir" ] || usage; build_dir="$1"; shift ;;
  esac
done
[ -n "$build_dir" ] || { echo "check-layers: no build directory given" >&2; usage; }
[ -d "$build_dir" ] || fail_usage "no build directory '$build_dir'"
[ -d "$source_dir" ] || fail_usage "no source directory '$source_dir'"
[ -n "$table" ] || table="$source_dir/scripts/layers.txt"
[ -f "$table" ] || fail_usage "no layer table '$table'"
command -v "$nm_program" >/dev/null || fail_usage "nm program '$nm_program' not found"

object_dir="$build_dir/CMakeFiles/backplane.dir"
[ -d "$object_dir" ] || fail_usage "no objects of libbackplane: '$object_dir' does not exist (configure and build the backplane target first)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The sources of the tree, relative to it: build trees (a CMakeCache.txt) and hidden
# folders (.git, virtual environments) left out.
(cd "$source_dir" && find . -mindepth 1 \
  \( -type d \( -name '.*' -o -exec test -e '{}/CMakeCache.txt' \; \) -prune \) -o \
  -type f \( -name '*.c' -o -name '*.h' -o -name '*.def' -o -name '*.cu' -o -name '*.cl' \) -print) |
  sed 's|^\./||' | LC_ALL=C sort >"$work/sources"

# The objects of libbackplane, relative to the build tree: from the list (absolute
# paths, or relative to the build tree), else every .o under CMakeFiles/backplane.dir.
[ -n "$object_list" ] || [ ! -f "$build_dir/layering/backplane-objects.txt" ] ||
  object_list="$build_dir/layering/backplane-objects.txt"
if [ -n "$object_list" ]; then
  [ -f "$object_list" ] || fail_usage "no object list '$object_list'"
  build_logical="$(cd "$build_dir" && pwd -L)"
  build_physical="$(cd "$build_dir" && pwd -P)"
  while read -r object; do
    [ -n "$object" ] || continue
    case "$object" in
      "$build_logical"/*) object="${object#"$build_logical"/}" ;;
      "$build_physical"/*) object="${object#"$build_physical"/}" ;;
      /*) fail_usage "the object '$object', which '$object_list' names, is not in the build directory '$build_dir'" ;;
    esac
    [ -f "$build_dir/$object" ] ||
      fail_usage "no object '$build_dir/$object', which '$object_list' names (build the backplane target first)"
    printf '%s\n' "$object"
  done <"$object_list" | LC_ALL=C sort >"$work/objects"
else
  (cd "$build_dir" && find CMakeFiles/backplane.dir -type f -name '*.o' | LC_ALL=C sort) >"$work/objects"
fi
[ -s "$work/objects" ] || fail_usage "no objects of libbackplane under '$object_dir' (build the backplane target first)"

# "<source> D <symbol> <nm type>" for each global an object defines, "<source> U
# <symbol>" for each it references (nm -A: "<object>:<nm's line>"). An object's source:
# <dir>/CMakeFiles/<target>.dir/<path>.o is <dir>/<path> (CMake writes ".." as "__"),
# in the source tree or, for a generated source, in the build tree.
mapfile -t objects <"$work/objects"
(cd "$build_dir" && "$nm_program" -A --defined-only "${objects[@]}") >"$work/defined" ||
  fail_usage "$nm_program cannot read the objects of '$build_dir'"
(cd "$build_dir" && "$nm_program" -A -u "${objects[@]}") >"$work/undefined" ||
  fail_usage "$nm_program cannot read the objects of '$build_dir'"
symbol_lines='
function source_of(object,   at, rest, parts, n, i, k, path) {
  at = index(object, "CMakeFiles/")
  rest = substr(object, at + length("CMakeFiles/"))
  sub(/^[^\/]*\.dir\//, "", rest)
  sub(/\.o$/, "", rest)
  n = split(substr(object, 1, at - 1) rest, parts, "/")
  k = 0
  for (i = 1; i <= n; i++) {
    if (parts[i] == "" || parts[i] == ".") continue
    if (parts[i] == "__") { if (k > 0) k--; continue }
    parts[++k] = parts[i]
  }
  path = parts[1]
  for (i = 2; i <= k; i++) path = path "/" parts[i]
  return path
}
{ object = source_of(substr($0, 1, index($0, ":") - 1)) }'
awk "$symbol_lines"' NF == 3 && $2 ~ /^[A-Z]$/ { print object, "D", $3, $2 }' "$work/defined" >"$work/symbols"
awk "$symbol_lines"' { print object, "U", $NF }' "$work/undefined" >>"$work/symbols"

# The copy of the table in the docs, when the tree has them.
doc=""
[ ! -f "$source_dir/docs/architecture.md" ] || doc="$source_dir/docs/architecture.md"

awk -v table="$table" -v source_dir="$source_dir" -v doc="$doc" -v doc_name="docs/architecture.md" \
    -v sources="$work/sources" -v symbols="$work/symbols" -f - <<'AWK'
function usage_error(message) {
  print "check-layers: " message > "/dev/stderr"
  exit 2
}

function read_table(   line, n, f, i, name) {
  while ((getline line < table) > 0) {
    sub(/#.*/, "", line)
    n = split(line, f)
    if (n == 0) continue
    if (f[1] == "layer" && n >= 3) {
      name = f[2]
      rank[name] = f[3]
      for (i = 4; i <= n; i++) uses[name, f[i]] = 1
      layers[name] = 1
    } else if (f[1] == "folder" && n == 3) {
      if (!(f[3] in layers)) usage_error(table ": folder " f[2] " is in layer '" f[3] "', which no layer line defines")
      folder_layer[f[2]] = f[3]
    } else if (f[1] == "entry" && n == 2) {
      is_entry[f[2]] = 1
    } else {
      usage_error(table ": cannot read the line '" line "'")
    }
  }
  close(table)
}

# The row of the table that covers a folder: sets found_layer and found_root (the
# file's own folder for "self": the row's path, or backends/<name> for backends/*).
function classify(folder,   path, best, root, prefix, rest) {
  best = ""
  for (path in folder_layer) {
    if (path ~ /\/\*$/) {
      prefix = substr(path, 1, length(path) - 1)
      if (index(folder "/", prefix) == 1 && folder "/" != prefix && length(prefix) > length(best)) {
        best = prefix
        rest = substr(folder, length(prefix) + 1)
        sub(/\/.*/, "", rest)
        root = prefix rest
        best_path = path
      }
    } else if ((folder == path || index(folder, path "/") == 1) && length(path) > length(best)) {
      best = path
      root = path
      best_path = path
    }
  }
  if (best == "") return 0
  found_layer = folder_layer[best_path]
  found_root = root
  return 1
}

function doc_violation(line_number, message) {
  print doc_name ":" line_number ": " message
  violations++
}

# The words in backquotes of a table cell, as keys of `words`.
function quoted_words(cell, words,   rest, n) {
  split("", words)
  rest = cell
  while (match(rest, /`[^`]*`/)) {
    words[substr(rest, RSTART + 1, RLENGTH - 2)] = 1
    rest = substr(rest, RSTART + RLENGTH)
  }
}

# docs/architecture.md's table ("### The layer table") must say what the table file
# says: one row per layer (its rank first), the folders of the layer (backends/* as
# `backends/<name>/`) and no folder of another, the layers it may use in backquotes,
# "own folder" for self, "anything" for any.
function check_doc(   line, line_number, section_line, in_section, rows, cell, n, name, words, word, folder, path, expect) {
  while ((getline line < doc) > 0) {
    line_number++
    if (line ~ /^### The layer table/) { in_section = 1; section_line = line_number; continue }
    if (!in_section) continue
    if (line ~ /^#/) break
    if (line !~ /^\|/ || line ~ /^\|[- |]*$/ || line ~ /^\| *layer *\|/) continue
    n = split(line, cell, "|")
    quoted_words(cell[2], words)
    name = ""
    for (word in words) if (word in layers) name = word
    if (name == "") { doc_violation(line_number, "a row of the layer table names no layer of " table); continue }
    rows[name] = 1
    if (rank[name] != "-" && cell[2] !~ "^ *" rank[name] " ")
      doc_violation(line_number, "the row of layer '" name "' does not start with its rank " rank[name])
    quoted_words(cell[3], words)
    for (path in folder_layer) {
      if (folder_layer[path] != name) continue
      expect = path
      sub(/\*$/, "<name>", expect)
      if (!((expect "/") in words)) doc_violation(line_number, "the row of layer '" name "' lacks the folder " expect "/")
    }
    for (word in words) {
      folder = word
      sub(/\/$/, "", folder)
      if (!classify(folder) || found_layer != name)
        doc_violation(line_number, "the row of layer '" name "' names " word ", which " table " does not put in it")
    }
    quoted_words(cell[4], words)
    for (word in words)
      if (!((name, word) in uses))
        doc_violation(line_number, "the row of layer '" name "' says it may use '" word "', " table " does not")
    for (word in layers)
      if ((name, word) in uses && !(word in words))
        doc_violation(line_number, "the row of layer '" name "' lacks '" word "', which " table " lets it use")
    if (((name, "self") in uses) != (cell[4] ~ /own folder/))
      doc_violation(line_number, "the row of layer '" name "' and " table " differ on its own folder (self)")
    if (((name, "any") in uses) != (cell[4] ~ /anything/))
      doc_violation(line_number, "the row of layer '" name "' and " table " differ on anything (any)")
  }
  close(doc)
  if (!in_section) doc_violation(line_number, "no section '### The layer table'")
  for (name in layers)
    if (!(name in rows)) doc_violation(section_line, "the layer table has no row of layer '" name "'")
}

function layer_words(name) {
  return (rank[name] == "-" ? "layer" : "layer " rank[name]) " '" name "'"
}

function may_use(from_layer, from_root, to_layer, to_root) {
  if ((from_layer, "any") in uses || (from_layer, to_layer) in uses) return 1
  return to_layer == from_layer && to_root == from_root && (from_layer, "self") in uses
}

function dir_of(path) {
  return path ~ /\// ? substr(path, 1, match(path, /\/[^\/]*$/) - 1) : "."
}

# a/./b/../c -> a/c ("" when it leaves the tree)
function normal(path,   parts, n, i, out, k) {
  n = split(path, parts, "/")
  k = 0
  for (i = 1; i <= n; i++) {
    if (parts[i] == "" || parts[i] == ".") continue
    if (parts[i] == "..") { if (k == 0) return ""; k--; continue }
    out[++k] = parts[i]
  }
  path = ""
  for (i = 1; i <= k; i++) path = path (i > 1 ? "/" : "") out[i]
  return path
}

# The file of the tree an #include "name" of `file` reads: beside it, else the one file
# of the tree whose path ends in /name. Sets resolve_count to the number of candidates.
function resolve(file, name,   beside, path, hit) {
  beside = normal(dir_of(file) "/" name)
  resolve_count = 1
  if (beside in is_source) return beside
  resolve_count = 0
  hit = ""
  for (path in is_source)
    if (path == name || substr(path, length(path) - length(name)) == "/" name) {
      resolve_count++
      hit = (hit == "" ? path : hit ", " path)
    }
  return hit
}

BEGIN {
  read_table()
  while ((getline line < sources) > 0) {
    is_source[line] = 1
    order[++file_count] = line
  }
  close(sources)
  for (i = 1; i <= file_count; i++) {
    folder = dir_of(order[i])
    if (!classify(folder))
      usage_error(order[i] ": the folder " folder "/ is in no row of " table " (add it to the layer table)")
  }

  # includes
  for (i = 1; i <= file_count; i++) {
    file = order[i]
    classify(dir_of(file))
    from_layer = found_layer
    from_root = found_root
    line_number = 0
    while ((getline line < (source_dir "/" file)) > 0) {
      line_number++
      if (line !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
      name = line
      sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", name)
      sub(/".*/, "", name)
      target = resolve(file, name)
      if (resolve_count == 0) continue  # not of the tree: generated in the build tree
      if (resolve_count > 1) {
        print file ":" line_number ": includes " name ", which several files of the tree are (" target "): name it with its folder"
        violations++
        continue
      }
      classify(dir_of(target))
      if (!may_use(from_layer, from_root, found_layer, found_root)) {
        print file ":" line_number ": includes " name " (" dir_of(target) "/, " layer_words(found_layer) ") from " layer_words(from_layer)
        violations++
      }
    }
    close(source_dir "/" file)
  }

  # symbols: who defines what, then who references what
  while ((getline line < symbols) > 0) {
    split(line, f, " ")
    if (!(f[1] in object_layer)) {
      if (!classify(dir_of(f[1])))
        usage_error(f[1] ".o: the folder " dir_of(f[1]) "/ is in no row of " table " (add it to the layer table)")
      object_layer[f[1]] = found_layer
      object_root[f[1]] = found_root
      objects++
    }
    if (f[2] == "D" && !(f[3] in defined_by)) { defined_by[f[3]] = f[1]; defined_type[f[3]] = f[4] }
  }
  close(symbols)
  while ((getline line < symbols) > 0) {
    split(line, f, " ")
    if (f[2] != "U" || !(f[3] in defined_by) || f[3] in is_entry) continue
    object = f[1]
    definer = defined_by[f[3]]
    if (!may_use(object_layer[object], object_root[object], object_layer[definer], object_root[definer])) {
      print object ": " (defined_type[f[3]] ~ /^[TWi]$/ ? "calls " : "uses ") f[3] " (" definer ", " \
        layer_words(object_layer[definer]) ") from " layer_words(object_layer[object])
      violations++
    }
  }
  close(symbols)

  if (doc != "") check_doc()

  if (violations) {
    print "layers: " violations " violation(s) of " table " (" file_count " files, " objects " objects)"
    exit 1
  }
  print "layers: " file_count " files, " objects " objects, 0 violations"
}
AWK
