#include "model/quantized_weights.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/quant.h"

namespace smolvlm {

namespace {

bool is_matrix_role(Role r) {
  switch (r) {
    case Role::QProj: case Role::KProj: case Role::VProj: case Role::OProj:
    case Role::GateProj: case Role::UpProj: case Role::DownProj:
    case Role::Fc1: case Role::Fc2: case Role::Projection: case Role::LmHead:
    case Role::Embedding: return true;  // rows gathered per token, and the lm_head when tied
    default: return false;
  }
}

// The stored tensor `name` with dtype `dtype` and shape `shape`, or Error(BadInput) saying which;
// `rule` describes the module's scheme and blocking for messages.
const TensorView& expect_tensor(const Checkpoint& ckpt, const std::string& name, DType dtype,
                                const std::vector<int64_t>& shape, const std::string& rule) {
  const TensorView* t = ckpt.find(name);
  if (!t) throw bad_input(ckpt.source() + ": no tensor \"" + name + "\", which " + rule + " needs");
  if (t->dtype != dtype)
    throw bad_input(t->file + ": tensor \"" + name + "\" has dtype " + dtype_name(t->dtype) + ", expected " +
                    dtype_name(dtype) + " for " + rule);
  if (t->shape != shape)
    throw bad_input(t->file + ": tensor \"" + name + "\" has shape " + shape_string(t->shape) + ", expected " +
                    shape_string(shape) + " for " + rule);
  return *t;
}

// Every fp16 value finite (exponent bits not all set). A run of values is tested without a branch
// per value (the loop vectorizes: a q4 checkpoint holds a scale and a min per 32 weights, and a
// value-by-value test took most of its load), then searched only where it holds one.
void expect_finite_f16(const TensorView& t) {
  const uint16_t* p = static_cast<const uint16_t*>(t.data);
  const int64_t n = t.numel();
  constexpr int64_t kRun = 4096;
  for (int64_t start = 0; start < n; start += kRun) {
    const int64_t end = std::min(n, start + kRun);
    bool any = false;
    for (int64_t i = start; i < end; ++i) any |= (p[i] & 0x7c00) == 0x7c00;
    if (!any) continue;
    for (int64_t i = start; i < end; ++i)
      if ((p[i] & 0x7c00) == 0x7c00)
        throw bad_input(t.file + ": tensor \"" + t.name + "\" holds a non-finite value at element " +
                        std::to_string(i));
  }
}

}  // namespace

WeightFormat weight_format_of(QuantScheme s) {
  switch (s) {
    case QuantScheme::Q8: return WeightFormat::Q8;
    case QuantScheme::Q4: return WeightFormat::Q4;
    case QuantScheme::Lut4: return WeightFormat::Lut4;
  }
  throw internal_error("weight_format_of: unknown scheme");
}

bool quantizable(const ExpectedTensor& entry) {
  return entry.param == Param::Weight && entry.shape.size() == 2 && is_matrix_role(entry.role) &&
         entry.presence == Presence::Required;
}

const QuantizedModule* quantized_module(const Checkpoint& ckpt, const ExpectedTensor& entry) {
  if (ckpt.quantization().empty() || entry.param != Param::Weight) return nullptr;
  const std::string module = module_of_weight(entry.name);
  return module.empty() ? nullptr : ckpt.quantization().find(module);
}

WeightRef quantized_matrix(const Checkpoint& ckpt, const ExpectedTensor& entry, const QuantizedModule& m) {
  const std::string module = module_of_weight(entry.name);
  const char* scheme = quant_scheme_name(m.scheme);
  if (!quantizable(entry))
    throw bad_input(ckpt.source() + ": quantization_config quantizes \"" + module + "\", whose " + role_name(entry.role) +
                    " weight is not read as a matrix (only linear layers and the token embedding can be quantized)");
  const int64_t N = entry.shape[0], K = entry.shape[1];
  const WeightFormat format = weight_format_of(m.scheme);
  try {
    check_quant_shape(format, N, K, m.group_size, m.block_rows);
  } catch (const Error& e) {
    throw bad_input(ckpt.source() + ": quantized module \"" + module + "\": " + e.what());
  }
  if (m.group_size > K || m.block_rows > N)
    throw bad_input(ckpt.source() + ": quantized module \"" + module + "\": group size " + std::to_string(m.group_size) +
                    " / block rows " + std::to_string(m.block_rows) + " exceed its weight [" + std::to_string(N) + ", " +
                    std::to_string(K) + "]");
  const std::vector<std::string> names = quantized_tensor_names(module, m.scheme);
  if (ckpt.find(entry.name))
    throw bad_input(ckpt.source() + ": \"" + entry.name + "\" is stored dense although quantization_config quantizes \"" +
                    module + "\"");
  const int64_t row_blocks = (N + m.block_rows - 1) / m.block_rows, groups = (K + m.group_size - 1) / m.group_size;
  const std::vector<int64_t> params{row_blocks, groups};
  const std::string rule = std::string(scheme) + " of \"" + module + "\" (weight [" + std::to_string(N) + ", " +
                           std::to_string(K) + "], group size " + std::to_string(m.group_size) + ", block rows " +
                           std::to_string(m.block_rows) + ")";
  QuantBlocks b;
  b.group_size = m.group_size;
  b.block_rows = m.block_rows;
  const void* codes = nullptr;
  if (m.scheme == QuantScheme::Q8) {
    codes = expect_tensor(ckpt, names[0], DType::I8, {N, K}, rule).data;
    const TensorView& scales = expect_tensor(ckpt, names[1], DType::F16, params, rule);
    const TensorView& zeros = expect_tensor(ckpt, names[2], DType::I8, params, rule);
    expect_finite_f16(scales);
    b.scales = static_cast<const uint16_t*>(scales.data);
    b.zero_points = static_cast<const int8_t*>(zeros.data);
  } else if (m.scheme == QuantScheme::Q4) {
    codes = expect_tensor(ckpt, names[0], DType::U8, {N, K / 2}, rule).data;
    const TensorView& scales = expect_tensor(ckpt, names[1], DType::F16, params, rule);
    const TensorView& mins = expect_tensor(ckpt, names[2], DType::F16, params, rule);
    expect_finite_f16(scales);
    expect_finite_f16(mins);
    b.scales = static_cast<const uint16_t*>(scales.data);
    b.mins = static_cast<const uint16_t*>(mins.data);
  } else {
    codes = expect_tensor(ckpt, names[0], DType::U8, {N, K / 2}, rule).data;
    const TensorView& lut = expect_tensor(ckpt, names[1], DType::F16, {row_blocks, groups, 16}, rule);
    expect_finite_f16(lut);
    b.lut = static_cast<const uint16_t*>(lut.data);
  }
  // Every code indexes its block's parameters: int8 codes and 4-bit nibbles are all in range by
  // construction (16 table entries), so the shapes above are the whole range check.
  return WeightRef(codes, format, N, K, b);
}

std::vector<std::string> stored_names(const Checkpoint& ckpt, const ExpectedTensor& entry) {
  const QuantizedModule* m = quantized_module(ckpt, entry);
  if (!m) return {entry.name};
  return quantized_tensor_names(module_of_weight(entry.name), m->scheme);
}

void check_quantized_modules(const Checkpoint& ckpt, const std::vector<ExpectedTensor>& table) {
  std::set<std::string> modules;
  for (const ExpectedTensor& e : table)
    if (e.param == Param::Weight && e.presence == Presence::Required) modules.insert(module_of_weight(e.name));
  for (const auto& [name, m] : ckpt.quantization().modules)
    if (!modules.count(name))
      throw bad_input(ckpt.source() + ": quantization_config lists module \"" + name +
                      "\", which this architecture and config.json do not store");
}

}  // namespace smolvlm
