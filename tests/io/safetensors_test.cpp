#include "io/safetensors.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <functional>

#include "core/error.h"
#include "io/file.h"
#include "io_test_util.h"

namespace smolvlm {
namespace {

using test::expect_error;
using test::find_tensor;
using test::rewrite_weights;
using test::safetensors_image;

// Parses an in-memory image; the image must stay alive while the result is used.
void parse_image(const std::string& bytes) {
  SafetensorsFile f(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "mem.safetensors");
}

void expect_corrupt(const std::string& bytes, const std::string& fragment, ErrorKind kind = ErrorKind::BadInput) {
  expect_error([&] { parse_image(bytes); }, kind, fragment);
}

// ---- the file format ------------------------------------------------------------------------------

TEST(Safetensors, ParsesHandMadeFile) {
  std::string bytes = safetensors_image(
      R"({"__metadata__": {"format": "pt"}, "b": {"dtype": "F16", "shape": [3], "data_offsets": [8, 14]},)"
      R"( "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "e": {"dtype": "I64", "shape": [0, 5], "data_offsets": [14, 14]}})",
      14);
  SafetensorsFile f(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "mem");
  ASSERT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  const uint8_t* data = reinterpret_cast<const uint8_t*>(bytes.data()) + bytes.size() - 14;
  for (const TensorView& t : f.tensors()) {
    if (t.name == "a") {
      EXPECT_EQ(t.dtype, DType::F32);
      EXPECT_EQ(t.data, data);
      EXPECT_EQ(t.nbytes, 8u);
    } else if (t.name == "b") {
      EXPECT_EQ(t.dtype, DType::F16);
      EXPECT_EQ(t.data, data + 8);
      EXPECT_EQ(t.numel(), 3);
    } else {
      EXPECT_EQ(t.name, "e");
      EXPECT_EQ(t.numel(), 0);
      EXPECT_EQ(t.nbytes, 0u);
    }
  }
}

TEST(Safetensors, EveryDtypeNameParses) {
  for (const char* n : {"F32", "F16", "BF16", "F64", "I8", "U8", "I16", "I32", "I64", "BOOL"})
    EXPECT_STREQ(dtype_name(parse_safetensors_dtype(n, "x")), n);
}

TEST(Safetensors, WriteThenReadRoundTrip) {
  test::ScratchDir dir("roundtrip");
  std::vector<float> a = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.0f};
  std::vector<uint16_t> b = {0x3c00, 0x4000, 0xc000};
  std::vector<int8_t> c = {-1, 2, -3};
  write_safetensors(dir / "t.safetensors", {{"c", DType::I8, {3}, c.data(), 3},
                                            {"b", DType::BF16, {1, 3}, b.data(), 6},
                                            {"a", DType::F32, {2, 3}, a.data(), 24}});
  std::string bytes = test::read_bytes(dir / "t.safetensors");
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  EXPECT_EQ(header_len % 8, 0u);
  EXPECT_EQ(bytes.substr(8, 30), R"({"__metadata__":{"format":"pt")");
  SafetensorsFile f(dir / "t.safetensors");
  ASSERT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.file_bytes(), bytes.size());
  for (const TensorView& t : f.tensors()) {
    if (t.name == "a") {
      EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
      EXPECT_EQ(std::memcmp(t.data, a.data(), 24), 0);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % 4, 0u);  // laid out by element size: aligned
    } else if (t.name == "b") {
      EXPECT_EQ(t.dtype, DType::BF16);
      EXPECT_EQ(std::memcmp(t.data, b.data(), 6), 0);
    } else {
      EXPECT_EQ(t.dtype, DType::I8);
      EXPECT_EQ(std::memcmp(t.data, c.data(), 3), 0);
    }
  }
  // No temporary files are left next to it.
  size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
}

TEST(Safetensors, WriterRejectsWrongByteCountAndDuplicateNames) {
  test::ScratchDir dir("writerr");
  float v[2] = {1, 2};
  expect_error([&] { write_safetensors(dir / "x.safetensors", {{"a", DType::F32, {3}, v, 8}}); }, ErrorKind::BadInput,
               "needs 12");
  expect_error([&] { write_safetensors(dir / "x.safetensors", {{"a", DType::F32, {1}, v, 4}, {"a", DType::F32, {1}, v, 4}}); },
               ErrorKind::BadInput, "reserved or repeated");
  EXPECT_FALSE(std::filesystem::exists(dir / "x.safetensors"));
}

// ---- corrupt files: one per validation rule --------------------------------------------------------

const char* kOne = R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";

TEST(SafetensorsCorrupt, ShorterThanLengthField) { expect_corrupt(std::string(5, '\0'), "too short for the 8-byte header length"); }

TEST(SafetensorsCorrupt, HeaderLongerThanFile) {
  std::string bytes = safetensors_image(kOne, 8);
  bytes[0] = char(0xff);  // header length 255+, file has fewer bytes
  bytes[1] = char(0x10);
  expect_corrupt(bytes, "exceeds the file size");
}

TEST(SafetensorsCorrupt, HeaderOverCap) {
  std::string bytes = safetensors_image(kOne, 8);
  uint64_t huge = kMaxSafetensorsHeaderBytes + 1;
  std::memcpy(bytes.data(), &huge, 8);
  expect_corrupt(bytes, "exceeds the limit of 100000000 bytes");
  huge = ~uint64_t(0);
  std::memcpy(bytes.data(), &huge, 8);
  expect_corrupt(bytes, "exceeds the limit");
}

TEST(SafetensorsCorrupt, TruncatedData) {
  std::string bytes = safetensors_image(kOne, 8);
  bytes.resize(bytes.size() - 3);
  expect_corrupt(bytes, "out of bounds of the data section (5 bytes)");
}

TEST(SafetensorsCorrupt, InvalidJson) {
  expect_corrupt(safetensors_image(R"({"a": {"dtype": "F32", )", 0), "header is not valid JSON");
  expect_corrupt(safetensors_image("", 0), "header is not valid JSON");
  expect_corrupt(safetensors_image("{\"a\xff\": 1}", 0), "header is not valid JSON");  // invalid UTF-8
}

TEST(SafetensorsCorrupt, NotAnObject) {
  expect_corrupt(safetensors_image("[1, 2, 3]", 0), "header must be a JSON object, got array");
  expect_corrupt(safetensors_image(R"({"a": [1]})", 0), "tensor \"a\": entry must be an object");
}

TEST(SafetensorsCorrupt, UnknownDtype) {
  expect_corrupt(safetensors_image(R"({"a": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}})", 2),
                 "unknown dtype \"F8_E4M3\"", ErrorKind::Unsupported);
}

TEST(SafetensorsCorrupt, MissingFields) {
  expect_corrupt(safetensors_image(R"({"a": {"shape": [2], "data_offsets": [0, 8]}})", 8), "missing string \"dtype\"");
  expect_corrupt(safetensors_image(R"({"a": {"dtype": "F32", "data_offsets": [0, 8]}})", 8), "missing list \"shape\"");
  expect_corrupt(safetensors_image(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0]}})", 8),
                 "\"data_offsets\" must be a list of two integers");
}

TEST(SafetensorsCorrupt, NegativeShape) {
  expect_corrupt(safetensors_image(R"({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", 8),
                 "shape entries must not be negative");
}

TEST(SafetensorsCorrupt, NonIntegerShape) {
  expect_corrupt(safetensors_image(R"({"a": {"dtype": "F32", "shape": [2.0], "data_offsets": [0, 8]}})", 8),
                 "shape entries must be integers");
  expect_corrupt(safetensors_image(R"({"a": {"dtype": "F32", "shape": ["2"], "data_offsets": [0, 8]}})", 8),
                 "shape entries must be integers");
}

TEST(SafetensorsCorrupt, ShapeProductOverflow) {
  expect_corrupt(safetensors_image(
                     R"({"a": {"dtype": "U8", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]}})", 8),
                 "more elements than fit in 64 bits");
  expect_corrupt(safetensors_image(
                     R"({"a": {"dtype": "U8", "shape": [18446744073709551615], "data_offsets": [0, 8]}})", 8),
                 "more elements than fit in 64 bits");
  // Element count fits, bytes do not.
  expect_corrupt(safetensors_image(
                     R"({"a": {"dtype": "F64", "shape": [4611686018427387904], "data_offsets": [0, 8]}})", 8),
                 "too large in bytes");
}

TEST(SafetensorsCorrupt, OffsetsOutOfBounds) {
  expect_corrupt(safetensors_image(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})", 8),
                 "out of bounds");
  expect_corrupt(safetensors_image(
                     R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [18446744073709551608, 18446744073709551615]}})", 8),
                 "out of bounds");
  expect_corrupt(safetensors_image(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}})", 8),
                 "data_offsets entries must not be negative");
  expect_corrupt(safetensors_image(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, "8"]}})", 8),
                 "data_offsets entries must be non-negative integers");
}

TEST(SafetensorsCorrupt, BeginAfterEnd) {
  expect_corrupt(safetensors_image(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", 8),
                 "data_offsets begin 8 is after end 0");
}

TEST(SafetensorsCorrupt, SizeMismatch) {
  expect_corrupt(safetensors_image(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8),
                 "byte range holds 8 bytes but shape [3] of F32 needs 12");
}

TEST(SafetensorsCorrupt, OverlappingTensors) {
  expect_corrupt(safetensors_image(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                                   R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                                   8),
                 "overlap");
  // Contained entirely inside another tensor.
  expect_corrupt(safetensors_image(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},)"
                                   R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},)"
                                   R"( "c": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
                                   16),
                 "overlap");
}

TEST(SafetensorsCorrupt, DuplicateTensorName) {
  expect_corrupt(safetensors_image(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                                   R"( "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                                   8),
                 "duplicate key \"a\"");
  expect_corrupt(safetensors_image(R"({"a": {"dtype": "F32", "dtype": "F16", "shape": [1], "data_offsets": [0, 4]}})", 4),
                 "duplicate key \"dtype\"");
}

TEST(SafetensorsCorrupt, BadMetadata) {
  expect_corrupt(safetensors_image(R"({"__metadata__": {"format": 1}})", 0),
                 "__metadata__ value of \"format\" must be a string");
  expect_corrupt(safetensors_image(R"({"__metadata__": ["pt"]})", 0), "__metadata__ must be an object of strings");
}

TEST(SafetensorsCorrupt, MissingFileIsIoError) {
  expect_error([] { SafetensorsFile f("/nonexistent/dir/model.safetensors"); }, ErrorKind::Io,
               "/nonexistent/dir/model.safetensors: cannot open");
}

// ---- checkpoints ----------------------------------------------------------------------------------

TEST(Checkpoint, OpensTheThreeTinyModels) {
  struct Case {
    const char* name;
    size_t tensors;
    DType dtype;
    bool has_lm_head;
    std::vector<std::string> files;
  } cases[] = {{"smolvlm-tiny", 59, DType::BF16, true,
                {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}},  // sharded
               {"smolvlm-tiny-tied", 67, DType::F16, false, {"model.safetensors"}},
               {"llama-tiny", 20, DType::F32, false, {"model.safetensors"}}};
  for (const Case& c : cases) {
    auto ck = Checkpoint::open(test::data_dir() / "models" / c.name);
    EXPECT_EQ(ck->tensors().size(), c.tensors) << c.name;
    for (const auto& [name, t] : ck->tensors()) EXPECT_EQ(t.dtype, c.dtype) << name;
    EXPECT_EQ(ck->find("lm_head.weight") != nullptr, c.has_lm_head) << c.name;
    EXPECT_EQ(ck->files(), c.files) << c.name;
    size_t bytes = 0;
    for (const std::string& f : c.files) bytes += std::filesystem::file_size(test::data_dir() / "models" / c.name / f);
    EXPECT_EQ(ck->file_bytes(), bytes) << c.name;
  }
  auto ck = Checkpoint::open(test::data_dir() / "models" / "smolvlm-tiny");
  const TensorView& q = ck->tensor("model.text_model.layers.1.self_attn.q_proj.weight");
  EXPECT_EQ(q.shape, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(q.nbytes, 64u * 64u * 2u);
  expect_error([&] { ck->tensor("model.nope.weight"); }, ErrorKind::BadInput, "no tensor \"model.nope.weight\"");
}

TEST(Checkpoint, IdentityDependsOnConfigAndTensorTable) {
  auto a = Checkpoint::open(test::data_dir() / "models" / "smolvlm-tiny");
  auto b = Checkpoint::open(test::data_dir() / "models" / "smolvlm-tiny");
  auto c = Checkpoint::open(test::data_dir() / "models" / "smolvlm-tiny-tied");
  EXPECT_EQ(a->identity(), b->identity());
  EXPECT_NE(a->identity(), c->identity());
  test::ScratchDir dir("identity");
  test::copy_model("smolvlm-tiny", dir.path());
  rewrite_weights("smolvlm-tiny", dir.path(), [](std::vector<TensorToWrite>& v) {
    find_tensor(v, "model.text_model.norm.weight")->dtype = DType::F16;  // same bytes, other dtype
  });
  EXPECT_NE(Checkpoint::open(dir.path())->identity(), a->identity());
}

TEST(Checkpoint, ShardedLoadingMatchesSingleFile) {
  // The stored smolvlm-tiny is itself sharded: first a one-file copy of it, then other shards of that.
  test::ScratchDir single_dir("single");
  test::copy_model("smolvlm-tiny", single_dir.path());
  rewrite_weights("smolvlm-tiny", single_dir.path(), [](std::vector<TensorToWrite>&) {});
  test::ScratchDir dir("sharded");
  test::copy_model("smolvlm-tiny", dir.path());
  SafetensorsFile original(single_dir / "model.safetensors");
  std::vector<TensorToWrite> first, second;
  nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
  for (size_t i = 0; i < original.tensors().size(); ++i) {
    const TensorView& t = original.tensors()[i];
    bool in_first = i % 2 == 0;
    (in_first ? first : second).push_back({t.name, t.dtype, t.shape, t.data, t.nbytes});
    index["weight_map"][t.name] = in_first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  std::filesystem::remove(dir / "model-00001-of-00002.safetensors");
  std::filesystem::remove(dir / "model-00002-of-00002.safetensors");
  write_safetensors(dir / "model-00001-of-00002.safetensors", first);
  write_safetensors(dir / "model-00002-of-00002.safetensors", second);
  test::write_bytes(dir / "model.safetensors.index.json", index.dump(2));

  auto sharded = Checkpoint::open(dir.path());
  auto single = Checkpoint::open(single_dir.path());
  EXPECT_EQ(single->files(), std::vector<std::string>{"model.safetensors"});
  EXPECT_EQ(sharded->files().size(), 2u);
  ASSERT_EQ(sharded->tensors().size(), single->tensors().size());
  for (const auto& [name, t] : single->tensors()) {
    const TensorView& s = sharded->tensor(name);
    EXPECT_EQ(s.shape, t.shape);
    ASSERT_EQ(s.nbytes, t.nbytes);
    EXPECT_EQ(std::memcmp(s.data, t.data, t.nbytes), 0) << name;
  }
  EXPECT_EQ(sharded->identity(), single->identity());

  // Index problems, each on a copy of the good index.
  auto with_index = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = index;
    edit(j);
    test::write_bytes(dir / "model.safetensors.index.json", j.dump());
  };
  with_index([](nlohmann::json& j) { j["weight_map"]["model.text_model.norm.weight"] = "model-00003-of-00003.safetensors"; });
  expect_error([&] { Checkpoint::open(dir.path()); }, ErrorKind::BadInput,
               "shard \"model-00003-of-00003.safetensors\" (holding e.g. tensor \"model.text_model.norm.weight\") does not exist");
  with_index([](nlohmann::json& j) { j["weight_map"]["model.ghost.weight"] = "model-00001-of-00002.safetensors"; });
  expect_error([&] { Checkpoint::open(dir.path()); }, ErrorKind::BadInput,
               "places tensor \"model.ghost.weight\" in shard model-00001-of-00002.safetensors, but that shard has no such tensor");
  std::string moved = original.tensors()[0].name;  // lives in shard 1
  with_index([&](nlohmann::json& j) { j["weight_map"].erase(moved); });
  expect_error([&] { Checkpoint::open(dir.path()); }, ErrorKind::BadInput,
               "tensor \"" + moved + "\" is in shard model-00001-of-00002.safetensors but not in the index");
  with_index([&](nlohmann::json& j) { j["weight_map"][moved] = "model-00002-of-00002.safetensors"; });
  expect_error([&] { Checkpoint::open(dir.path()); }, ErrorKind::BadInput, "but the index places it in model-00002");
  with_index([](nlohmann::json& j) { j["weight_map"]["model.text_model.norm.weight"] = "../model.safetensors"; });
  expect_error([&] { Checkpoint::open(dir.path()); }, ErrorKind::BadInput, "which is not a file name in the model folder");
  with_index([](nlohmann::json& j) { j.erase("weight_map"); });
  expect_error([&] { Checkpoint::open(dir.path()); }, ErrorKind::BadInput, "expected an object with a \"weight_map\"");

  // The same tensor stored in both shards.
  with_index([](nlohmann::json&) {});
  second.push_back(first[0]);
  std::filesystem::remove(dir / "model-00002-of-00002.safetensors");
  write_safetensors(dir / "model-00002-of-00002.safetensors", second);
  expect_error([&] { Checkpoint::open(dir.path()); }, ErrorKind::BadInput,
               "tensor \"" + moved + "\" is stored in two shards");
}

TEST(CheckpointCorrupt, NoWeights) {
  test::ScratchDir dir("noweights");
  test::copy_model("llama-tiny", dir.path());
  std::filesystem::remove(dir / "model.safetensors");
  expect_error([&] { Checkpoint::open(dir.path()); }, ErrorKind::BadInput,
               "no weights: neither model.safetensors nor model.safetensors.index.json");
}

TEST(Checkpoint, IgnoresLegacyRotaryBuffers) {
  test::ScratchDir dir("invfreq");
  test::copy_model("llama-tiny", dir.path());
  float inv_freq[4] = {1, 0.1f, 0.01f, 0.001f};
  rewrite_weights("llama-tiny", dir.path(), [&](std::vector<TensorToWrite>& v) {
    v.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", DType::F32, {4}, inv_freq, 16});
  });
  auto ck = Checkpoint::open(dir.path());
  EXPECT_EQ(ck->tensors().size(), 20u);
  EXPECT_EQ(ck->find("model.layers.0.self_attn.rotary_emb.inv_freq"), nullptr);
}

// ---- the CLI on good and broken folders -------------------------------------------------------------

TEST(InfoCli, ReportsHfParameterCounts) {
  struct Case {
    const char* model;
    int64_t total;
  } cases[] = {{"smolvlm-tiny", 6444528}, {"smolvlm-tiny-tied", 2084940}, {"llama-tiny", 793936}};
  for (const Case& c : cases) {
    auto r = test::run_cli("info --json --model '" + (test::data_dir() / "models" / c.model).string() + "'", false);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["parameters"]["total"].get<int64_t>(), c.total) << c.model;
  }
  auto r = test::run_cli("info --config-only --json --model '" +
                             (test::data_dir() / "models" / "smolvlm-256m-instruct").string() + "'", false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["parameters"]["total"].get<int64_t>(), 256484928);
  EXPECT_EQ(j["parameters"]["vision"].get<int64_t>(), 86433024);
  EXPECT_EQ(j["parameters"]["connector"].get<int64_t>(), 7077888);
  EXPECT_EQ(j["parameters"]["text"].get<int64_t>(), 134588736);
  EXPECT_EQ(j["parameters"]["lm_head"].get<int64_t>(), 28385280);
  auto text = test::run_cli("info --model '" + (test::data_dir() / "models" / "smolvlm-tiny").string() + "'");
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("parameters:   6,444,528"), std::string::npos) << text.out;
}

TEST(InfoCli, BrokenFoldersExitNonZeroNamingTheProblem) {
  test::ScratchDir dir("clibroken");
  test::copy_model("smolvlm-tiny", dir.path());
  const std::string model = "info --model '" + dir.path().string() + "'";

  rewrite_weights("smolvlm-tiny", dir.path(), [](std::vector<TensorToWrite>& v) {
    find_tensor(v, "model.text_model.norm.weight")->shape = {8, 8};
  });
  auto r = test::run_cli(model);
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("tensor \"model.text_model.norm.weight\" has shape [8, 8], expected [64]"), std::string::npos)
      << r.out;

  std::string truncated = test::read_bytes(dir / "model.safetensors");
  truncated.resize(truncated.size() / 2);
  test::write_bytes(dir / "model.safetensors", truncated);
  r = test::run_cli(model);
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("out of bounds of the data section"), std::string::npos) << r.out;

  test::write_bytes(dir / "config.json", R"({"architectures": ["GPT2LMHeadModel"]})");
  r = test::run_cli(model);
  EXPECT_EQ(r.exit_code, 4) << r.out;
  EXPECT_NE(r.out.find("architecture \"GPT2LMHeadModel\" is not supported"), std::string::npos) << r.out;

  r = test::run_cli("info --model '" + (dir / "nonexistent").string() + "'");
  EXPECT_NE(r.exit_code, 0);
}

}  // namespace
}  // namespace smolvlm
