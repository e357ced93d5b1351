#!/usr/bin/env bash
# Builds one skill archive for 360_skills.sql with real tar and prints its path.
#   make.sh KIND    KIND: demo (the demo/ skill as is), demo2 (demo with a changed guide),
#                   traversal, symlink, oversize, no-skill-md, mismatch, two-dirs
# Archives go to a directory per server port, so parallel runs never share one.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="${TMPDIR:-/tmp}/chumbo-regress-skills-${PGPORT:-0}"
mkdir -p "$OUT"
W="$(mktemp -d)"; trap 'rm -rf "$W"' EXIT
f="$OUT/$1.tar.gz"
case "$1" in
  demo) tar -C "$HERE" -czf "$f" demo ;;
  demo2) cp -a "$HERE/demo" "$W/" && printf 'The second edition.\n' > "$W/demo/references/guide.md" \
           && rm "$W/demo/logo.bin" && tar -C "$W" -czf "$f" demo ;;
  traversal) cp -a "$HERE/demo" "$W/" && python3 - "$W" "$f" <<'PY'
import sys, tarfile, io
w, f = sys.argv[1], sys.argv[2]
with tarfile.open(f, "w:gz") as t:
    t.add(w + "/demo", arcname="demo")
    data = b"owned\n"
    i = tarfile.TarInfo("demo/../../evil.sh"); i.size = len(data)
    t.addfile(i, io.BytesIO(data))
PY
  ;;
  symlink) cp -a "$HERE/demo" "$W/" && ln -s /etc/passwd "$W/demo/passwd" && tar -C "$W" -czf "$f" demo ;;
  oversize) cp -a "$HERE/demo" "$W/" && head -c 17000000 /dev/zero > "$W/demo/big.bin" && tar -C "$W" -czf "$f" demo ;;
  no-skill-md) cp -a "$HERE/demo" "$W/" && rm "$W/demo/SKILL.md" && tar -C "$W" -czf "$f" demo ;;
  mismatch) cp -a "$HERE/demo" "$W/other" && tar -C "$W" -czf "$f" other ;;
  two-dirs) cp -a "$HERE/demo" "$W/" && mkdir "$W/more" && echo x > "$W/more/x.md" && tar -C "$W" -czf "$f" demo more ;;
  *) echo "make.sh: unknown kind $1" >&2; exit 2 ;;
esac
echo "$f"
