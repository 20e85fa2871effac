#!/usr/bin/env bash
# Cut a folder of wheels into parts a device call can carry, each with its stage.sh:
#
#   bash scripts/split_wheel_bundle.sh WHEELS DEST TAG [SIZE]      (SIZE: bytes per part, 45000000)
#
# A device call carries at most 64 MiB with the working tree, so parts are 45 MB. On the GPU
# machine, one call per part, back to back (it forgets everything ~30 s after a call):
# `bash DEST/partN/stage.sh` copies the part to /root/stage-TAG; the last part checks that every
# part arrived, installs the wheels into /root/site-TAG and writes /root/TAG-env.sh (PYTHONPATH
# with /root/site-TAG first). Used by scripts/isaaclab/make_gpu_bundle.sh (TAG il) and
# scripts/make_ort_gpu_bundle.sh (TAG ort); robolearn's own bundle is ../shared/gpu/make-bundle.sh.
set -euo pipefail
wheels=$1 dest=$2 tag=$3 size=${4:-45000000}
count=$(ls "$wheels"/*.whl | wc -l)
rm -rf "$dest"; mkdir -p "$dest"
blob=$(mktemp -d)
trap 'rm -rf "$blob"' EXIT
tar -C "$wheels" -cf "$blob/$tag.tar" .
split -b "$size" -d "$blob/$tag.tar" "$blob/$tag.tar.part."
rm "$blob/$tag.tar"
parts=("$blob"/$tag.tar.part.*)
n=${#parts[@]}
for i in $(seq 1 "$n"); do
  d="$dest/part$i"; mkdir -p "$d"; mv "${parts[$((i-1))]}" "$d/"
  {
    echo '#!/usr/bin/env bash'
    echo 'set -euo pipefail'
    echo "mkdir -p /root/stage-$tag && cp \"\$(dirname \"\$0\")\"/$tag.tar.part.* /root/stage-$tag/"
    echo "echo 'staged $tag part $i of $n'"
    if [ "$i" = "$n" ]; then
      echo "[ \$(ls /root/stage-$tag/$tag.tar.part.* | wc -l) = $n ] || { echo 'parts missing: stage part1..part$n back to back'; exit 1; }"
      echo "cd /root/stage-$tag && cat $tag.tar.part.* > $tag.tar && mkdir -p wheels && tar -xf $tag.tar -C wheels"
      echo "python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /root/site-$tag wheels/*.whl"
      echo "printf 'export PYTHONPATH=/root/site-$tag\${PYTHONPATH:+:\$PYTHONPATH}\n' > /root/$tag-env.sh"
      echo "echo 'installed $count wheels into /root/site-$tag; now: source /root/$tag-env.sh'"
    fi
  } > "$d/stage.sh"
  chmod +x "$d/stage.sh"
done
du -sh "$dest"/part*
echo "bundle in $dest: $count wheels in $n parts; stage part1 .. part$n in order"
