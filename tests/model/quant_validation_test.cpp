// Quantized checkpoints that are broken are refused with a message naming the file, the tensor (or
// module) and the rule: missing parameter tensors, wrong dtypes and shapes, non-finite scales and
// tables, config and tensors that disagree, unsupported quant methods, blockings the format cannot
// hold, quantized tensors that are not linear weights. A sound one loads, and `quantize` is
// deterministic and atomic.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/safetensors.h"
#include "model/model_test_util.h"
#include "model/quantize.h"
#include "model/registry.h"

namespace smolvlm {
namespace {

using test::expect_error;
using test::open_validated;

// A q-quantized copy of llama-tiny in a scratch folder, and a way to rewrite its tensors / config.
class QuantFiles {
 public:
  explicit QuantFiles(const std::string& scheme, const std::string& tag) : dir_("qv_" + tag) {
    QuantizeOptions o;
    o.scheme = scheme;
    o.threads = 1;
    quantize_checkpoint(test::model_dir("llama-tiny"), source(), o);
    test::copy_model("llama-tiny", dir());  // configs and tokenizer files
    std::filesystem::copy_file(source() / "config.json", dir() / "config.json",
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(source() / "model.safetensors", dir() / "model.safetensors",
                               std::filesystem::copy_options::overwrite_existing);
  }
  std::filesystem::path dir() const { return dir_.path() / "model"; }
  std::filesystem::path source() const { return dir_.path() / "source"; }

  void edit_tensors(const std::function<void(std::vector<TensorToWrite>&)>& edit) {
    auto original = Checkpoint::open(source());
    std::vector<TensorToWrite> tensors;
    for (const auto& [name, t] : original->tensors()) tensors.push_back({t.name, t.dtype, t.shape, t.data, t.nbytes});
    edit(tensors);
    write_safetensors(dir() / "model.safetensors", tensors);
  }
  void edit_config(const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = nlohmann::json::parse(read_file(source() / "config.json"));
    edit(j);
    test::write_bytes(dir() / "config.json", j.dump());
  }

 private:
  test::ScratchDir dir_;
};

const char* kModule = "model.layers.1.mlp.up_proj";

TEST(QuantValidation, ASoundQuantizedModelLoads) {
  for (const char* scheme : {"q8", "q4", "lut4"}) {
    QuantFiles f(scheme, std::string("ok_") + scheme);
    auto ck = open_validated(f.dir());
    // 2 layers x 7 linear layers, and the token embedding, which is the tied lm_head (q8)
    EXPECT_EQ(ck->quantization().modules.size(), 15u) << scheme;
    EXPECT_EQ(ck->quantization().find("model.embed_tokens")->scheme, QuantScheme::Q8) << scheme;
    EXPECT_NE(ck->find(std::string(kModule) + ".qweight"), nullptr);
    EXPECT_EQ(ck->find(std::string(kModule) + ".weight"), nullptr);
  }
}

TEST(QuantValidation, MissingParameterTensor) {
  QuantFiles f("q4", "missing");
  f.edit_tensors([](std::vector<TensorToWrite>& v) {
    std::erase_if(v, [](const TensorToWrite& t) { return t.name == std::string(kModule) + ".mins"; });
  });
  expect_error([&] { open_validated(f.dir()); }, ErrorKind::BadInput,
               "no tensor \"model.layers.1.mlp.up_proj.mins\", which q4 of \"model.layers.1.mlp.up_proj\" (weight [40, 16], "
               "group size 16, block rows 1) needs");
}

TEST(QuantValidation, WrongShapeAndDtype) {
  QuantFiles f("q8", "shape");
  f.edit_tensors([](std::vector<TensorToWrite>& v) {
    TensorToWrite* s = test::find_tensor(v, std::string(kModule) + ".scales");
    s->shape = {1, 40};
  });
  expect_error([&] { open_validated(f.dir()); }, ErrorKind::BadInput,
               "tensor \"model.layers.1.mlp.up_proj.scales\" has shape [1, 40], expected [40, 1] for q8");
  f.edit_tensors([](std::vector<TensorToWrite>& v) { test::find_tensor(v, std::string(kModule) + ".qweight")->dtype = DType::U8; });
  expect_error([&] { open_validated(f.dir()); }, ErrorKind::BadInput,
               "tensor \"model.layers.1.mlp.up_proj.qweight\" has dtype U8, expected I8 for q8");
}

TEST(QuantValidation, NonFiniteScalesAndTables) {
  for (const char* scheme : {"q8", "q4", "lut4"})
    for (bool last : {false, true}) {
      QuantFiles f(scheme, std::string("nan_") + scheme + (last ? "_last" : ""));
      const std::string param = std::string(kModule) + (std::string(scheme) == "lut4" ? ".lut" : ".scales");
      std::vector<uint16_t> bad;
      size_t at = 3;
      f.edit_tensors([&](std::vector<TensorToWrite>& v) {
        TensorToWrite* t = test::find_tensor(v, param);
        bad.assign(static_cast<const uint16_t*>(t->data), static_cast<const uint16_t*>(t->data) + t->nbytes / 2);
        if (last) at = bad.size() - 1;
        bad[at] = last ? 0x7c00 : 0x7e00;  // fp16 infinity, NaN
        t->data = bad.data();
      });
      expect_error([&] { open_validated(f.dir()); }, ErrorKind::BadInput,
                   "tensor \"" + param + "\" holds a non-finite value at element " + std::to_string(at));
    }
}

TEST(QuantValidation, ConfigAndTensorsDisagree) {
  QuantFiles f("q4", "disagree");
  // A module the architecture does not have.
  f.edit_config([](nlohmann::json& j) { j["quantization_config"]["modules"]["model.layers.7.mlp.up_proj"] = j["quantization_config"]["modules"][kModule]; });
  expect_error([&] { open_validated(f.dir()); }, ErrorKind::BadInput,
               "quantization_config lists module \"model.layers.7.mlp.up_proj\", which this architecture and config.json do not store");
  // A module dropped from the config while its tensors stay.
  f.edit_config([](nlohmann::json& j) { j["quantization_config"]["modules"].erase(kModule); });
  expect_error([&] { open_validated(f.dir()); }, ErrorKind::BadInput, "missing 1 tensor(s)");
  // The dense weight stored beside the quantized one.
  std::vector<float> dense(40 * 16, 0.f);
  f.edit_config([](nlohmann::json&) {});
  f.edit_tensors([&](std::vector<TensorToWrite>& v) {
    v.push_back({std::string(kModule) + ".weight", DType::F32, {40, 16}, dense.data(), dense.size() * 4});
  });
  expect_error([&] { open_validated(f.dir()); }, ErrorKind::BadInput,
               "\"model.layers.1.mlp.up_proj.weight\" is stored dense although quantization_config quantizes");
  // A group size that does not match the stored parameters.
  f.edit_tensors([](std::vector<TensorToWrite>&) {});
  f.edit_config([](nlohmann::json& j) { j["quantization_config"]["modules"][kModule]["group_size"] = 8; });
  expect_error([&] { open_validated(f.dir()); }, ErrorKind::BadInput,
               "tensor \"model.layers.1.mlp.up_proj.scales\" has shape [40, 1], expected [40, 2] for q4");
  // An odd group size for 4-bit codes.
  f.edit_config([](nlohmann::json& j) { j["quantization_config"]["modules"][kModule]["group_size"] = 5; });
  expect_error([&] { open_validated(f.dir()); }, ErrorKind::BadInput, "4-bit codes need an even group size");
}

TEST(QuantValidation, OnlyLinearWeightsAndOurMethod) {
  QuantFiles f("q8", "method");
  f.edit_config([](nlohmann::json& j) { j["quantization_config"]["quant_method"] = "gptq"; });
  expect_error([&] { open_validated(f.dir()); }, ErrorKind::Unsupported, "quant_method \"gptq\" is not supported");
  f.edit_config([](nlohmann::json& j) { j["quantization_config"]["format_version"] = 9; });
  expect_error([&] { open_validated(f.dir()); }, ErrorKind::Unsupported, "format_version 9 is not supported");
  f.edit_config([](nlohmann::json& j) { j["quantization_config"]["modules"][kModule]["scheme"] = "q3"; });
  expect_error([&] { open_validated(f.dir()); }, ErrorKind::BadInput, "unknown quantization scheme \"q3\"");
  f.edit_config([](nlohmann::json& j) {
    j["quantization_config"]["modules"]["model.norm"] = {{"scheme", "q8"}, {"group_size", 16}};
  });
  expect_error([&] { open_validated(f.dir()); }, ErrorKind::BadInput,
               "quantizes \"model.norm\", whose final_norm weight is not read as a matrix");
}

TEST(Quantize, DeterministicAndAtomic) {
  test::ScratchDir dir("quantize_det");
  QuantizeOptions o;
  o.scheme = "lut4";
  o.threads = 1;
  quantize_checkpoint(test::model_dir("smolvlm-tiny"), dir.path() / "a", o);
  o.threads = 2;
  quantize_checkpoint(test::model_dir("smolvlm-tiny"), dir.path() / "b", o);
  EXPECT_EQ(read_file(dir.path() / "a" / "model.safetensors"), read_file(dir.path() / "b" / "model.safetensors"));
  EXPECT_EQ(read_file(dir.path() / "a" / "config.json"), read_file(dir.path() / "b" / "config.json"));
  // An existing non-empty folder is kept unless forced; a failing run leaves nothing behind.
  expect_error([&] { quantize_checkpoint(test::model_dir("smolvlm-tiny"), dir.path() / "a", o); }, ErrorKind::BadInput,
               "folder exists and is not empty");
  o.keep = {{"no.such.tensor*", "q8"}};
  expect_error([&] { quantize_checkpoint(test::model_dir("smolvlm-tiny"), dir.path() / "c", o); }, ErrorKind::BadInput,
               "override no.such.tensor*=q8 matches no tensor");
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "c"));
  size_t leftovers = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) leftovers += e.path().filename().string()[0] == '.';
  EXPECT_EQ(leftovers, 0u);
  EXPECT_TRUE(glob_match("model.*.q_proj.weight", "model.layers.0.self_attn.q_proj.weight"));
  EXPECT_FALSE(glob_match("model.?.weight", "model.10.weight"));
}

}  // namespace
}  // namespace smolvlm
