#!/bin/sh
# The README's accuracy table: perplexity of the trained model (BF16) and of each quantized copy on the
# held-out text, with KL and top-1 agreement against BF16. Usage: measure.sh BUILD_DIR [SCRATCH_DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
smolvlm=$1/smolvlm
scratch=${2:-$(mktemp -d)}
model=$here/kjv-llama
text=$here/heldout.txt
run() {  # name, then quantize flags
  name=$1; shift
  "$smolvlm" quantize --model "$model" --out "$scratch/$name" --force --quiet "$@" > /dev/null
  printf '"%s": ' "$name"
  "$smolvlm" perplexity --model "$scratch/$name" --base "$model" --text "$text" --ctx 128 --json | tr -d '\n '
  printf ',\n'
}
{
  printf '{\n"bf16": '
  "$smolvlm" perplexity --model "$model" --text "$text" --ctx 128 --json | tr -d '\n '
  printf ',\n'
  run q8 --scheme q8
  run q4 --scheme q4
  run q4_embedding_bf16 --scheme q4 --keep 'model.embed_tokens.weight=source'
  run q4_g32 --scheme q4 --group 32
  run q4_down_q8 --scheme q4 --keep '*.down_proj.weight=q8'
  run q4_embedding_q4 --scheme q4 --keep 'model.embed_tokens.weight=q4'
  run lut4 --scheme lut4
  run lut4_embedding_lut4 --scheme lut4 --keep 'model.embed_tokens.weight=lut4'
  run lut4_rows4 --scheme lut4 --group 4
  printf '"text": "%s"\n}\n' "heldout.txt (Ruth and Jonah, KJV), windows of 128 tokens"
}
