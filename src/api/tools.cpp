// Model folders and images without a loaded model: synthetic checkpoints, preprocessing, files.
#include <map>

#include <nlohmann/json.hpp>

#include "api/handles.h"
#include "core/error.h"
#include "hub/model_ref.h"
#include "image/idefics3.h"
#include "image/image.h"
#include "io/file.h"
#include "io/npy.h"
#include "model/quantize.h"
#include "model/synth.h"

using namespace smolvlm;

extern "C" {

void smolvlm_synth_options_init(smolvlm_synth_options* o) {
  if (!o) return;
  *o = smolvlm_synth_options{};
  o->struct_size = sizeof(*o);
  o->dtype = "bf16";
}

smolvlm_status smolvlm_synth(const char* config_path, const char* out_dir, const smolvlm_synth_options* options,
                             char** json) {
  if (!config_path || !out_dir) return capi::fail(SMOLVLM_ERR_BAD_INPUT, "smolvlm_synth: the config path and the output folder are required");
  return capi::guarded([&] {
    smolvlm_synth_options defaults;
    smolvlm_synth_options_init(&defaults);
    const smolvlm_synth_options o = capi::read_struct(options, defaults, "smolvlm_synth_options");
    static const std::map<std::string, DType> kDtypes = {{"bf16", DType::BF16}, {"f16", DType::F16}, {"f32", DType::F32}};
    const auto dtype = kDtypes.find(o.dtype ? o.dtype : "bf16");
    if (dtype == kDtypes.end()) throw bad_input(std::string("synth dtype \"") + o.dtype + "\": expected bf16, f16 or f32");
    SynthOptions so;
    so.seed = o.seed;
    so.dtype = dtype->second;
    so.force = o.force != 0;
    const SynthResult r = synth_checkpoint(config_path, out_dir, so);
    if (json) {
      const nlohmann::ordered_json j = {{"out", out_dir},
                                        {"tensors", r.tensors},
                                        {"parameters", r.parameters},
                                        {"dtype", dtype_name(so.dtype)},
                                        {"weight_bytes", r.weight_bytes},
                                        {"copied_files", r.copied_files},
                                        {"seed", o.seed}};
      *json = capi::copy_string(j.dump(2));
    }
  });
}

void smolvlm_quantize_options_init(smolvlm_quantize_options* o) {
  if (!o) return;
  *o = smolvlm_quantize_options{};
  o->struct_size = sizeof(*o);
  o->scheme = "q8";
}

smolvlm_status smolvlm_quantize(const char* model_dir, const char* out_dir, const smolvlm_quantize_options* options,
                                char** json) {
  if (!model_dir || !out_dir)
    return capi::fail(SMOLVLM_ERR_BAD_INPUT, "smolvlm_quantize: the model folder and the output folder are required");
  return capi::guarded([&] {
    smolvlm_quantize_options defaults;
    smolvlm_quantize_options_init(&defaults);
    const smolvlm_quantize_options o = capi::read_struct(options, defaults, "smolvlm_quantize_options");
    QuantizeOptions qo;
    qo.scheme = o.scheme ? o.scheme : "q8";
    qo.group_size = o.group_size;
    qo.force = o.force != 0;
    qo.threads = o.threads;
    if (o.n_overrides && !o.overrides) throw bad_input("smolvlm_quantize: overrides is NULL");
    for (size_t i = 0; i < o.n_overrides; ++i) {
      const std::string rule = o.overrides[i] ? o.overrides[i] : "";
      const size_t eq = rule.rfind('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == rule.size())
        throw bad_input("override \"" + rule + "\": expected PATTERN=FORMAT");
      qo.keep.emplace_back(rule.substr(0, eq), rule.substr(eq + 1));
    }
    if (o.progress)
      qo.progress = [&](size_t done, size_t total, const std::string& t) { o.progress(o.progress_user, done, total, t.c_str()); };
    const QuantizeResult r = quantize_checkpoint(resolve_model_dir(model_dir), out_dir, qo);
    if (json) {
      nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
      for (const QuantizedTensorReport& t : r.report) {
        nlohmann::ordered_json e = {{"name", t.name}, {"format", t.format}};
        if (t.group_size) {
          e["group_size"] = t.group_size;
          e["block_rows"] = t.block_rows;
          e["max_abs_error"] = t.max_abs_error;
          e["rms_error"] = t.rms_error;
        }
        tensors.push_back(e);
      }
      const nlohmann::ordered_json j = {{"out", out_dir},          {"scheme", r.scheme},
                                        {"tensors", r.tensors},    {"quantized", r.quantized},
                                        {"source_bytes", r.source_bytes}, {"weight_bytes", r.weight_bytes},
                                        {"seconds", r.seconds},    {"report", tensors}};
      *json = capi::copy_string(j.dump(2));
    }
  });
}

smolvlm_status smolvlm_preprocess_image(const char* ref, const smolvlm_image* image, int32_t split, smolvlm_pixels* out) {
  if (!image || !out) return capi::fail(SMOLVLM_ERR_STATE, "smolvlm_preprocess_image: the image or output pointer is NULL");
  return capi::guarded([&] {
    if (split < -1 || split > 1) throw bad_input("split must be -1, 0 or 1, got " + std::to_string(split));
    const auto path = resolve_model_dir(ref ? ref : "") / "preprocessor_config.json";
    const ImageProcessorConfig config = parse_image_processor_config(read_file(path), path.string());
    const std::optional<bool> do_split = split < 0 ? std::nullopt : std::optional<bool>(split == 1);
    const RgbImage rgb = decode_image(capi::image_input(*image, "the image"));
    const PreprocessedImage p = preprocess_idefics3(rgb, config, do_split);
    smolvlm_pixels r{};
    r.struct_size = sizeof(r);
    r.width = rgb.width;
    r.height = rgb.height;
    r.rows = p.rows;
    r.cols = p.cols;
    r.tiles = p.num_tiles;
    r.tile_size = p.tile_size;
    r.pixel_values = static_cast<float*>(std::malloc(p.pixel_values.size() * sizeof(float)));
    r.tiles_u8 = static_cast<uint8_t*>(std::malloc(p.tiles_u8.size()));
    if (!r.pixel_values || !r.tiles_u8) {
      std::free(r.pixel_values);
      std::free(r.tiles_u8);
      throw std::bad_alloc();
    }
    std::memcpy(r.pixel_values, p.pixel_values.data(), p.pixel_values.size() * sizeof(float));
    std::memcpy(r.tiles_u8, p.tiles_u8.data(), p.tiles_u8.size());
    *out = r;
  });
}

void smolvlm_pixels_free(smolvlm_pixels* pixels) {
  if (!pixels) return;
  std::free(pixels->pixel_values);
  std::free(pixels->tiles_u8);
  *pixels = smolvlm_pixels{};
}

smolvlm_status smolvlm_write_npy(const char* path, const char* dtype, const int64_t* shape, size_t ndim,
                                 const void* data, size_t nbytes) {
  if (!path || !dtype || (ndim > 0 && !shape) || (nbytes > 0 && !data))
    return capi::fail(SMOLVLM_ERR_BAD_INPUT, "smolvlm_write_npy: a required argument is NULL");
  return capi::guarded([&] {
    const std::string d = dtype;
    if (d != "f4" && d != "u1") throw bad_input("npy dtype \"" + d + "\": expected f4 or u1");
    write_npy(path, d, std::vector<int64_t>(shape, shape + ndim), data, nbytes);
  });
}

smolvlm_status smolvlm_write_png(const char* path, const uint8_t* rgb, int64_t width, int64_t height) {
  if (!path || !rgb || width <= 0 || height <= 0)
    return capi::fail(SMOLVLM_ERR_BAD_INPUT, "smolvlm_write_png: a path, pixels and a positive size are required");
  return capi::guarded([&] {
    save_png(path, RgbImage{width, height, std::vector<uint8_t>(rgb, rgb + size_t(width) * size_t(height) * 3)});
  });
}

}  // extern "C"
