#include "model/quantize.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/error.h"
#include "io/file.h"
#include "io/json_fields.h"
#include "io/quantization.h"
#include "io/safetensors.h"
#include "kernels/quant.h"
#include "kernels/thread_pool.h"
#include "model/model_folder.h"
#include "model/quantized_weights.h"
#include "model/registry.h"

namespace smolvlm {

namespace {

constexpr int64_t kDefaultQ4Group = 64;
constexpr int64_t kDefaultLutRows = 16;

// What one spec entry becomes in the output.
struct Target {
  bool quantized = false;
  QuantizedModule module;  // when quantized
  DType dtype = DType::F32;  // when dense
};

std::optional<DType> dense_dtype_name(const std::string& f) {
  if (f == "bf16") return DType::BF16;
  if (f == "f16") return DType::F16;
  if (f == "f32") return DType::F32;
  return std::nullopt;
}

// The module's blocking under `scheme` for a [N, K] weight (blocks never larger than the weight).
QuantizedModule blocking(QuantScheme scheme, int64_t group_option, int64_t N, int64_t K) {
  QuantizedModule m;
  m.scheme = scheme;
  switch (scheme) {
    case QuantScheme::Q8: m.group_size = group_option ? std::min(group_option, K) : K; break;
    case QuantScheme::Q4: m.group_size = std::min(group_option ? group_option : kDefaultQ4Group, K); break;
    case QuantScheme::Lut4:
      m.group_size = K;
      m.block_rows = std::min(group_option ? group_option : kDefaultLutRows, N);
      break;
  }
  return m;
}

// The dtype a dense entry is stored with in the input (the format a quantized input's tensor was
// made from is gone: such tensors are written as BF16 unless told otherwise).
DType source_dtype(const Checkpoint& ckpt, const ExpectedTensor& e) {
  const TensorView* t = ckpt.find(e.name);
  return t ? t->dtype : DType::BF16;
}

// `lm_head_storage`: the entry is the token embedding that a tied lm_head reads as its matrix.
Target choose_target(const Checkpoint& ckpt, const ExpectedTensor& e, const QuantizeOptions& o, bool dequantize,
                     bool lm_head_storage) {
  Target t;
  if (dequantize) return t;  // F32
  t.dtype = source_dtype(ckpt, e);
  const int64_t N = e.shape.size() == 2 ? e.shape[0] : 0, K = e.shape.size() == 2 ? e.shape[1] : 0;
  for (const auto& [pattern, format] : o.keep) {
    if (!glob_match(pattern, e.name)) continue;
    if (format == "source") return t;
    if (const std::optional<DType> d = dense_dtype_name(format)) {
      t.dtype = *d;
      return t;
    }
    const QuantScheme s = parse_quant_scheme(format, "override " + pattern);
    if (!quantizable(e)) return t;  // a quantized format applies to the linear weights a pattern matches
    t.quantized = true;
    t.module = blocking(s, o.group_size, N, K);
    return t;
  }
  if (!quantizable(e)) return t;
  const QuantScheme scheme = parse_quant_scheme(o.scheme, "scheme");
  if (e.role == Role::Embedding) {
    // Looked up one row per token, an embedding costs memory, not time: it stays as stored, unless
    // it is also the lm_head, which takes the lm_head's q8.
    if (lm_head_storage) {
      t.quantized = true;
      t.module = blocking(QuantScheme::Q8, scheme == QuantScheme::Q8 ? o.group_size : 0, N, K);
    }
  } else if (e.component == Component::Text) {
    t.quantized = true;
    t.module = blocking(scheme, o.group_size, N, K);
  } else if (e.component == Component::LmHead) {
    t.quantized = true;
    t.module = blocking(QuantScheme::Q8, scheme == QuantScheme::Q8 ? o.group_size : 0, N, K);
  }
  return t;
}

// An entry's values as fp32, whatever it is stored as.
std::vector<float> read_f32(const Checkpoint& ckpt, const ExpectedTensor& e) {
  if (const QuantizedModule* m = quantized_module(ckpt, e)) return dequantize_matrix(quantized_matrix(ckpt, e, *m));
  const TensorView& t = ckpt.tensor(e.name);
  std::vector<float> v(size_t(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype) {
      case DType::F32: v[i] = static_cast<const float*>(t.data)[i]; break;
      case DType::F16: v[i] = f16_to_f32(static_cast<const uint16_t*>(t.data)[i]); break;
      case DType::BF16: v[i] = bf16_to_f32(static_cast<const uint16_t*>(t.data)[i]); break;
      default: throw unsupported(t.file + ": tensor \"" + e.name + "\" has dtype " + dtype_name(t.dtype));
    }
  }
  return v;
}

void store_dense(const std::vector<float>& v, DType dtype, uint8_t* out) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::F32) {
      std::memcpy(out + 4 * i, &v[i], 4);
    } else {
      const uint16_t h = dtype == DType::BF16 ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
      std::memcpy(out + 2 * i, &h, 2);
    }
  }
}

template <typename T>
void copy_array(const std::vector<T>& v, uint8_t* out, size_t nbytes) {
  if (nbytes != v.size() * sizeof(T)) throw internal_error("quantize: tensor size mismatch");
  std::memcpy(out, v.data(), nbytes);
}

// One tensor of the output file: entry `entry`, part `part` (0 for dense, else the index into
// quantized_tensor_names()).
struct OutputTensor {
  size_t entry;
  int part;
};

}  // namespace

bool glob_match(const std::string& pattern, const std::string& name) {
  size_t p = 0, n = 0, star = std::string::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p, ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++, mark = n;
    } else if (star != std::string::npos) {
      p = star + 1, n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

QuantizeResult quantize_checkpoint(const std::filesystem::path& model_dir, const std::filesystem::path& out_dir,
                                   const QuantizeOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  const bool dequantize = o.scheme == "f32";
  if (!dequantize) parse_quant_scheme(o.scheme, "quantize");
  if (dequantize && !o.keep.empty()) throw bad_input("quantize: the f32 scheme writes every tensor as fp32; it takes no overrides");
  if (o.group_size < 0 || o.group_size > kMaxConfigDimension)
    throw bad_input("quantize: group size " + std::to_string(o.group_size) + " is out of range");
  for (const auto& [pattern, format] : o.keep)
    if (format != "source" && !dense_dtype_name(format)) parse_quant_scheme(format, "override " + pattern + "=" + format);
  const ModelConfig cfg = load_model_config(model_dir);
  const std::unique_ptr<Checkpoint> ckpt = open_checkpoint(cfg);
  const ModelSpec spec = model_spec(cfg);
  const std::vector<ExpectedTensor> entries = expected_tensors(spec);

  std::vector<Target> targets;
  std::set<std::string> tied_storage;  // entries a tied lm_head reads
  for (const ExpectedTensor& e : all_tensors(spec))
    if (e.presence == Presence::Tied && e.role == Role::LmHead) tied_storage.insert(e.tied_to);
  for (const ExpectedTensor& e : entries)
    targets.push_back(choose_target(*ckpt, e, o, dequantize, tied_storage.count(e.name) > 0));
  for (const auto& keep : o.keep) {
    const std::string& pattern = keep.first;  // a named copy: clang 14 cannot capture a structured binding
    if (std::none_of(entries.begin(), entries.end(), [&](const ExpectedTensor& e) { return glob_match(pattern, e.name); }))
      throw bad_input("override " + pattern + "=" + keep.second + " matches no tensor of " + spec.architecture);
  }

  QuantizeResult result;
  result.scheme = o.scheme;
  result.tensors = entries.size();
  result.source_bytes = ckpt->file_bytes();
  result.report.resize(entries.size());

  // The quantized matrices, computed in parallel (each depends on its input only).
  std::vector<QuantizedMatrix> quantized(entries.size());
  std::mutex progress_mutex;
  size_t done = 0;
  ThreadPool pool(o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency())));
  pool.parallel_for(int64_t(entries.size()), 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const ExpectedTensor& e = entries[i];
      QuantizedTensorReport& r = result.report[i];
      r.name = e.name;
      if (targets[i].quantized) {
        const QuantizedModule& m = targets[i].module;
        const std::vector<float> v = read_f32(*ckpt, e);
        quantized[i] = quantize_matrix(v.data(), e.shape[0], e.shape[1], weight_format_of(m.scheme), m.group_size,
                                       m.block_rows);
        const std::vector<float> back = dequantize_matrix(quantized[i].ref());
        double sq = 0;
        for (size_t k = 0; k < v.size(); ++k) {
          const double d = std::fabs(double(back[k]) - v[k]);
          r.max_abs_error = std::max(r.max_abs_error, d);
          sq += d * d;
        }
        r.rms_error = std::sqrt(sq / double(v.size()));
        r.format = quant_scheme_name(m.scheme);
        r.group_size = m.group_size;
        r.block_rows = m.block_rows;
      } else {
        r.format = dtype_name(targets[i].dtype);
      }
      if (o.progress) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        o.progress(++done, entries.size(), e.name);
      }
    }
  });

  std::vector<TensorSpec> specs;
  std::vector<OutputTensor> outputs;
  QuantizationConfig qcfg;
  qcfg.scheme = o.scheme;
  for (size_t i = 0; i < entries.size(); ++i) {
    const ExpectedTensor& e = entries[i];
    if (!targets[i].quantized) {
      specs.push_back({e.name, targets[i].dtype, e.shape});
      outputs.push_back({i, 0});
      continue;
    }
    const QuantizedModule& m = targets[i].module;
    const std::string module = module_of_weight(e.name);
    qcfg.modules[module] = m;
    ++result.quantized;
    const std::vector<std::string> names = quantized_tensor_names(module, m.scheme);
    const int64_t N = e.shape[0], K = e.shape[1];
    const int64_t rb = (N + m.block_rows - 1) / m.block_rows, groups = (K + m.group_size - 1) / m.group_size;
    if (m.scheme == QuantScheme::Q8) {
      specs.push_back({names[0], DType::I8, {N, K}});
      specs.push_back({names[1], DType::F16, {rb, groups}});
      specs.push_back({names[2], DType::I8, {rb, groups}});
    } else if (m.scheme == QuantScheme::Q4) {
      specs.push_back({names[0], DType::U8, {N, K / 2}});
      specs.push_back({names[1], DType::F16, {rb, groups}});
      specs.push_back({names[2], DType::F16, {rb, groups}});
    } else {
      specs.push_back({names[0], DType::U8, {N, K / 2}});
      specs.push_back({names[1], DType::F16, {rb, groups, 16}});
    }
    for (int part = 1; part <= int(names.size()); ++part) outputs.push_back({i, part});
  }

  StagedModelFolder folder(out_dir, o.force, "quantize");
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(read_file(cfg.dir / "config.json", kMaxConfigFileBytes));
  config.erase("quantization_config");
  if (!qcfg.empty()) {
    qcfg.extra["group_size"] = o.group_size;
    nlohmann::ordered_json keep = nlohmann::ordered_json::array();
    for (const auto& [pattern, format] : o.keep) keep.push_back(pattern + "=" + format);
    qcfg.extra["overrides"] = keep;
    config["quantization_config"] = quantization_config_json(qcfg);
  }
  write_file_atomic(folder.path() / "config.json", config.dump(2) + "\n");
  folder.copy_companion_files(cfg.dir);

  auto fill = [&](size_t index, uint8_t* out, size_t nbytes) {
    const OutputTensor& ot = outputs[index];
    const ExpectedTensor& e = entries[ot.entry];
    if (ot.part == 0) {
      const TensorView* t = ckpt->find(e.name);
      if (t && t->dtype == targets[ot.entry].dtype && t->nbytes == nbytes) {
        std::memcpy(out, t->data, nbytes);  // bit-exact copy
        return;
      }
      store_dense(read_f32(*ckpt, e), targets[ot.entry].dtype, out);
      return;
    }
    const QuantizedMatrix& q = quantized[ot.entry];
    if (ot.part == 1) return copy_array(q.codes, out, nbytes);
    switch (q.format) {
      case WeightFormat::Q8: return ot.part == 2 ? copy_array(q.scales, out, nbytes) : copy_array(q.zeros, out, nbytes);
      case WeightFormat::Q4: return ot.part == 2 ? copy_array(q.scales, out, nbytes) : copy_array(q.mins, out, nbytes);
      default: return copy_array(q.lut, out, nbytes);
    }
  };
  write_safetensors_streaming(folder.path() / "model.safetensors", specs, fill);
  // The folder must load as it is before it replaces anything.
  validate_checkpoint(spec, *Checkpoint::open(folder.path()));
  load_model_config(folder.path());
  result.weight_bytes = std::filesystem::file_size(folder.path() / "model.safetensors");
  folder.commit();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace smolvlm
