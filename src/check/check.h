// `smolvlm check`: re-proves on this machine, with this binary's linked libraries and this CPU's
// kernels, that we still compute what the reference computes. Everything it needs is compiled into
// the binary (assets/check): images with the hashes of their decoded pixels, Pillow resize vectors,
// Idefics3 tile hashes, tokenizer cases, and a tiny SmolVLM with two of its HF goldens.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace smolvlm {

struct CheckRow {
  std::string stage;       // "decode", "resample", "tiling", "tokenizer", "vision", ...
  std::string path;        // kernel path for model stages ("scalar", "avx2", ...), else ""
  int cases = 0;           // how many cases the row covers
  int failed = 0;          // how many of them failed
  bool hashed = false;     // exact comparison by hash/equality (else max_error vs bound)
  double max_error = 0.0;  // max abs error over the cases (numeric rows)
  double bound = 0.0;      // tolerance (numeric rows)
  std::string detail;      // what failed, or a note (library versions, unknown tokenizer, ...)
  bool pass() const { return failed == 0; }
};

struct CheckReport {
  std::vector<CheckRow> rows;
  std::string caption_path;             // the kernel path `caption` uses here
  std::vector<std::string> paths_run;   // every kernel path exercised
  std::string libraries;                // linked decoder library versions
  double seconds = 0.0;
  bool passed() const;
};

struct CheckOptions {
  // A model folder whose tokenizer.json is checked too (when its sha256 is one we have goldens for;
  // otherwise only internal consistency is checked).
  std::optional<std::filesystem::path> model_dir;
  // Read the assets from this folder instead of the copy in the binary (tests alter a golden here).
  std::optional<std::filesystem::path> assets_dir;
  int threads = 2;
};

CheckReport run_check(const CheckOptions& options);

// Numeric tolerance of the model stages (fp32 logits vs HF).
inline constexpr double kCheckBound = 1e-4;

}  // namespace smolvlm
