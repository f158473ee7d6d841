#!/bin/sh
# The training and held-out text of the trained accuracy model: the King James Bible (public domain) as
# Debian's bible-kjv package ships it. Training: Genesis and Exodus; held out: Ruth and Jonah.
set -eu
out=${1:-$(dirname "$0")}
bible -f "Ge1:1-Ex40:38" | sed 's/^[0-9A-Za-z]*[0-9]*:[0-9]* //' > "$out/train.txt"
bible -f "Ru1:1-Ru4:22" "Jon1:1-Jon4:11" | sed 's/^[0-9A-Za-z]*[0-9]*:[0-9]* //' > "$out/heldout.txt"
