#!/usr/bin/env bash
# Re-cut a bundle from ../shared/gpu/make-bundle.sh into smaller parts, in place:
#   bash scripts/resplit_gpu_bundle.sh [.gpu] [45000000]
# make-bundle.sh writes 60 MB parts, but a device call carries at most 64 MiB *with* the working
# tree (~7.5 MB): 45 MB parts fit. Each part gets a stage.sh as make-bundle.sh writes them (copy
# into /root/stage); the last one's also installs (make-bundle.sh's own install lines, kept as is).
set -euo pipefail
dir=${1:-.gpu} size=${2:-45000000}
parts=("$dir"/part*/bundle.tar.part.*)
[ -e "${parts[0]}" ] || { echo "no bundle parts under $dir: build one with ../shared/gpu/make-bundle.sh $dir" >&2; exit 1; }
last=$(ls -d "$dir"/part* | sort -V | tail -1)/stage.sh
install=$(sed -n '/^have=/,$p' "$last")
[ -n "$install" ] || { echo "$last has no install lines: is $dir a make-bundle.sh bundle?" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for p in $(printf '%s\n' "${parts[@]}" | sort -V); do cat "$p"; done > "$tmp/bundle.tar"
split -b "$size" -d "$tmp/bundle.tar" "$tmp/bundle.tar.part."
rm "$tmp/bundle.tar"
new=("$tmp"/bundle.tar.part.*)
n=${#new[@]}
rm -rf "$dir"/part*
for i in $(seq 1 "$n"); do
  d="$dir/part$i"; mkdir -p "$d"; mv "${new[$((i-1))]}" "$d/"
  printf '%s\n' '#!/usr/bin/env bash' 'set -euo pipefail' 'here=$(cd "$(dirname "$0")" && pwd)' \
    'mkdir -p /root/stage && cp "$here"/bundle.tar.part.* /root/stage/' "echo \"staged part $i of $n\"" > "$d/stage.sh"
  [ "$i" = "$n" ] && printf '%s\n' "$install" >> "$d/stage.sh"
  chmod +x "$d/stage.sh"
done
du -sh "$dir"/part*
echo "bundle in $dir: $n parts of at most $size bytes; stage part1 .. part$n in order"
