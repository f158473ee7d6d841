#include "io/safetensors.h"

#include "io/json_fields.h"

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <random>
#include <set>

#include "core/error.h"
#include "core/sha256.h"

namespace smolvlm {

using nlohmann::json;

namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Multiplies non-negative sizes; false on int64 overflow.
bool checked_mul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Parses JSON and reports the first key repeated inside one object: nlohmann keeps the last of
// duplicate keys silently, which would let two headers disagree on what a file holds.
json parse_json_rejecting_duplicates(const char* begin, const char* end, const std::string& name) {
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  auto on_event = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (event == json::parse_event_t::key && !open_objects.empty() && parsed.is_string()) {
      if (!open_objects.back().insert(parsed.get<std::string>()).second && duplicate.empty())
        duplicate = parsed.get<std::string>();
    }
    return true;
  };
  json j;
  try {
    j = json::parse(begin, end, on_event);
  } catch (const json::exception& e) {
    throw bad_input(name + ": header is not valid JSON: " + e.what());
  }
  if (!duplicate.empty()) throw bad_input(name + ": header has a duplicate key \"" + duplicate + "\"");
  return j;
}

uint64_t json_offset(const json& v, const std::string& where) {
  if (!v.is_number_integer()) throw bad_input(where + ": data_offsets entries must be non-negative integers");
  if (!v.is_number_unsigned()) throw bad_input(where + ": data_offsets entries must not be negative");
  return v.get<uint64_t>();
}

}  // namespace

DType parse_safetensors_dtype(const std::string& s, const std::string& where) {
  static const std::pair<const char*, DType> kNames[] = {
      {"F32", DType::F32}, {"F16", DType::F16}, {"BF16", DType::BF16}, {"F64", DType::F64},
      {"I8", DType::I8},   {"U8", DType::U8},   {"I16", DType::I16},   {"I32", DType::I32},
      {"I64", DType::I64}, {"BOOL", DType::BOOL}};
  for (const auto& [n, t] : kNames)
    if (s == n) return t;
  throw unsupported(where + ": unknown dtype \"" + s + "\" (known: F32, F16, BF16, F64, I8, U8, I16, I32, I64, BOOL)");
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path, FileResidency residency) : map_(path, residency) {
  parse(map_.data(), map_.size(), path.string());
}

SafetensorsFile::SafetensorsFile(const uint8_t* data, size_t size, const std::string& name) {
  parse(data, size, name);
}

void SafetensorsFile::parse(const uint8_t* data, size_t size, const std::string& name) {
  size_ = size;
  if (size < 8)
    throw bad_input(name + ": file is " + std::to_string(size) + " bytes, too short for the 8-byte header length");
  uint64_t header_len = read_u64_le(data);
  if (header_len > kMaxSafetensorsHeaderBytes)
    throw bad_input(name + ": header length " + std::to_string(header_len) + " exceeds the limit of " +
                    std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  if (header_len > size - 8)
    throw bad_input(name + ": header length " + std::to_string(header_len) + " exceeds the file size (" +
                    std::to_string(size) + " bytes, truncated file?)");
  const char* header = reinterpret_cast<const char*>(data + 8);
  json j = parse_json_rejecting_duplicates(header, header + header_len, name);
  if (!j.is_object()) throw bad_input(name + ": header must be a JSON object, got " + std::string(j.type_name()));

  const uint8_t* data_section = data + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  struct Range {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Range> ranges;
  std::vector<TensorView> tensors;
  std::map<std::string, std::string> metadata;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    if (key == "__metadata__") {
      if (v.is_null()) continue;
      if (!v.is_object()) throw bad_input(name + ": __metadata__ must be an object of strings, got " + v.type_name());
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          throw bad_input(name + ": __metadata__ value of \"" + m.key() + "\" must be a string, got " +
                          m.value().type_name());
        metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    std::string where = name + ": tensor \"" + key + "\"";
    if (!v.is_object()) throw bad_input(where + ": entry must be an object, got " + v.type_name());
    if (!v.contains("dtype") || !v["dtype"].is_string()) throw bad_input(where + ": missing string \"dtype\"");
    if (!v.contains("shape") || !v["shape"].is_array()) throw bad_input(where + ": missing list \"shape\"");
    if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
      throw bad_input(where + ": \"data_offsets\" must be a list of two integers");
    TensorView t;
    t.name = key;
    t.file = name;
    t.dtype = parse_safetensors_dtype(v["dtype"].get<std::string>(), where);
    int64_t numel = 1;
    for (const json& d : v["shape"]) {
      if (!d.is_number_integer()) throw bad_input(where + ": shape entries must be integers, got " + d.type_name());
      if (!d.is_number_unsigned()) throw bad_input(where + ": shape entries must not be negative");
      uint64_t dim = d.get<uint64_t>();
      if (dim > uint64_t(kInt64Max) || !checked_mul(numel, int64_t(dim), &numel))
        throw bad_input(where + ": shape " + v["shape"].dump() + " has more elements than fit in 64 bits");
      t.shape.push_back(int64_t(dim));
    }
    int64_t expected_bytes = 0;
    if (!checked_mul(numel, int64_t(dtype_size(t.dtype)), &expected_bytes))
      throw bad_input(where + ": shape " + shape_text(t.shape) + " is too large in bytes");
    uint64_t begin = json_offset(v["data_offsets"][0], where);
    uint64_t end = json_offset(v["data_offsets"][1], where);
    if (begin > end)
      throw bad_input(where + ": data_offsets begin " + std::to_string(begin) + " is after end " + std::to_string(end));
    if (end > data_size)
      throw bad_input(where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                      "] out of bounds of the data section (" + std::to_string(data_size) + " bytes)");
    if (end - begin != uint64_t(expected_bytes))
      throw bad_input(where + ": byte range holds " + std::to_string(end - begin) + " bytes but shape " +
                      shape_text(t.shape) + " of " + dtype_name(t.dtype) + " needs " + std::to_string(expected_bytes));
    t.data = data_section + begin;
    t.nbytes = size_t(end - begin);
    ranges.push_back({begin, end, tensors.size()});
    tensors.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const Range* previous = nullptr;  // the non-empty range ending last so far
  for (const Range& r : ranges) {
    if (r.begin == r.end) continue;  // empty tensors occupy no bytes
    if (previous && r.begin < previous->end)
      throw bad_input(name + ": tensors \"" + tensors[previous->index].name + "\" and \"" + tensors[r.index].name +
                      "\" overlap (bytes [" + std::to_string(previous->begin) + ", " + std::to_string(previous->end) +
                      ") and [" + std::to_string(r.begin) + ", " + std::to_string(r.end) + "))");
    previous = &r;
  }
  tensors_ = std::move(tensors);
  metadata_ = std::move(metadata);
}

// ---------------------------------------------------------------------------------------------
// Writing

namespace {

std::string header_bytes(const std::vector<TensorSpec>& tensors, const std::vector<size_t>& layout_order,
                         const std::map<std::string, std::string>& metadata, std::vector<uint64_t>* offsets) {
  std::set<std::string> names;
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  offsets->assign(tensors.size(), 0);
  uint64_t offset = 0;
  for (size_t i : layout_order) {
    const TensorSpec& t = tensors[i];
    if (t.name == "__metadata__" || !names.insert(t.name).second)
      throw bad_input("write_safetensors: tensor name \"" + t.name + "\" is reserved or repeated");
    int64_t bytes = int64_t(dtype_size(t.dtype));
    for (int64_t d : t.shape)
      if (d < 0 || !checked_mul(bytes, d, &bytes))
        throw bad_input("write_safetensors: tensor \"" + t.name + "\" has an invalid shape " + shape_text(t.shape));
    (*offsets)[i] = offset;
    offset += uint64_t(bytes);
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorSpec& t = tensors[i];
    uint64_t begin = (*offsets)[i];
    int64_t bytes = int64_t(dtype_size(t.dtype));
    for (int64_t d : t.shape) bytes *= d;
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape},
                      {"data_offsets", {begin, begin + uint64_t(bytes)}}};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out[i] = char((n >> (8 * i)) & 0xff);
  return out + text;
}

// A file written under a temporary name and renamed into place by commit(); removed if not committed.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(const std::filesystem::path& path) : path_(path) {
    std::random_device rd;
    tmp_ = path;
    tmp_ += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd());
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0) throw io_error(tmp_.string() + ": cannot create: " + std::strerror(errno));
  }
  ~AtomicFileWriter() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_.c_str());
  }
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        throw io_error(path_.string() + ": write failed: " + std::strerror(errno));
      }
      p += w;
      n -= size_t(w);
    }
  }
  void commit(bool flush_to_disk) {
    int fd = fd_;
    fd_ = -1;
    if ((flush_to_disk && ::fsync(fd) != 0) || ::close(fd) != 0) throw io_error(path_.string() + ": cannot flush: " + std::strerror(errno));
    if (::rename(tmp_.c_str(), path_.c_str()) != 0)
      throw io_error(path_.string() + ": cannot rename into place: " + std::strerror(errno));
    committed_ = true;
  }

 private:
  std::filesystem::path path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

void write_safetensors_streaming(const std::filesystem::path& path, const std::vector<TensorSpec>& tensors,
                                 const TensorFill& fill, const std::map<std::string, std::string>& metadata,
                                 bool flush_to_disk) {
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return dtype_size(tensors[a].dtype) > dtype_size(tensors[b].dtype);
  });
  std::vector<uint64_t> offsets;
  std::string header = header_bytes(tensors, order, metadata, &offsets);
  AtomicFileWriter out(path);
  out.write(header.data(), header.size());
  std::vector<uint8_t> buffer;
  for (size_t i : order) {
    const TensorSpec& t = tensors[i];
    size_t bytes = dtype_size(t.dtype);
    for (int64_t d : t.shape) bytes *= size_t(d);
    buffer.resize(bytes);
    fill(i, buffer.data(), bytes);
    out.write(buffer.data(), bytes);
  }
  out.commit(flush_to_disk);
}

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<TensorSpec> specs;
  for (const TensorToWrite& t : tensors) {
    specs.push_back({t.name, t.dtype, t.shape});
    size_t bytes = dtype_size(t.dtype);
    for (int64_t d : t.shape) bytes *= size_t(d < 0 ? 0 : d);
    if (bytes != t.nbytes)
      throw bad_input("write_safetensors: tensor \"" + t.name + "\" has " + std::to_string(t.nbytes) +
                      " bytes but shape " + shape_text(t.shape) + " of " + dtype_name(t.dtype) + " needs " +
                      std::to_string(bytes));
  }
  write_safetensors_streaming(
      path, specs, [&](size_t i, uint8_t* out, size_t n) { if (n) std::memcpy(out, tensors[i].data, n); }, metadata);
}

// ---------------------------------------------------------------------------------------------
// Checkpoints

namespace {

constexpr size_t kMaxIndexFileBytes = size_t(64) << 20;

// Buffers that older Llama checkpoints saved but HF ignores when loading (recomputed from the config).
bool is_ignored_buffer(const std::string& name) {
  const std::string suffix = ".rotary_emb.inv_freq";
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_plain_file_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos && s.find('\0') == std::string::npos;
}

// weight_map of model.safetensors.index.json: tensor name -> shard file name.
std::map<std::string, std::string> read_weight_map(const std::filesystem::path& index_path) {
  std::string text = read_file(index_path, kMaxIndexFileBytes);
  json j = parse_json_rejecting_duplicates(text.data(), text.data() + text.size(), index_path.string());
  std::string name = index_path.string();
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw bad_input(name + ": expected an object with a \"weight_map\" object");
  std::map<std::string, std::string> map;
  for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
    if (!it.value().is_string())
      throw bad_input(name + ": weight_map entry for tensor \"" + it.key() + "\" must be a file name string");
    std::string file = it.value().get<std::string>();
    if (!is_plain_file_name(file))
      throw bad_input(name + ": weight_map entry for tensor \"" + it.key() + "\" names \"" + file +
                      "\", which is not a file name in the model folder");
    map[it.key()] = file;
  }
  if (map.empty()) throw bad_input(name + ": weight_map is empty");
  return map;
}

uint64_t identity_of(const std::string& config_text, const std::map<std::string, TensorView, std::less<>>& tensors) {
  Sha256 h;
  h.update(config_text.data(), config_text.size());
  for (const auto& [name, t] : tensors) {
    std::string line = "\n" + name + " " + dtype_name(t.dtype) + " " + shape_text(t.shape);
    h.update(line.data(), line.size());
  }
  std::string hex = h.final_hex();
  return std::stoull(hex.substr(0, 16), nullptr, 16);
}

}  // namespace

std::unique_ptr<Checkpoint> Checkpoint::open(const std::filesystem::path& dir, FileResidency residency) {
  std::unique_ptr<Checkpoint> ck(new Checkpoint());
  ck->dir_ = dir;
  ck->residency_ = residency;
  std::error_code config_ec;
  if (!std::filesystem::exists(dir / "config.json", config_ec))
    throw bad_input(dir.string() + ": no config.json in this folder (is it a model folder?)");
  std::error_code ec;
  const std::filesystem::path index_path = dir / "model.safetensors.index.json";
  const std::filesystem::path single_path = dir / "model.safetensors";
  std::string where;
  if (std::filesystem::exists(index_path, ec)) {
    where = index_path.string();
    std::map<std::string, std::string> weight_map = read_weight_map(index_path);
    std::set<std::string> shard_names;
    for (const auto& [tensor, file] : weight_map) shard_names.insert(file);
    for (const std::string& file : shard_names) {
      if (std::filesystem::is_regular_file(dir / file, ec)) continue;
      std::string example;
      for (const auto& [tensor, f] : weight_map)
        if (f == file) { example = tensor; break; }
      throw bad_input(where + ": shard \"" + file + "\" (holding e.g. tensor \"" + example + "\") does not exist in " +
                      dir.string());
    }
    std::map<std::string, std::string> seen_in;  // tensor -> shard holding it
    for (const std::string& file : shard_names) {
      auto shard = std::make_unique<SafetensorsFile>(dir / file, residency);
      for (const TensorView& t : shard->tensors()) {
        auto prior = seen_in.find(t.name);
        if (prior != seen_in.end())
          throw bad_input(where + ": tensor \"" + t.name + "\" is stored in two shards, " + prior->second + " and " + file);
        seen_in[t.name] = file;
        auto mapped = weight_map.find(t.name);
        if (mapped == weight_map.end() && !is_ignored_buffer(t.name))
          throw bad_input(where + ": tensor \"" + t.name + "\" is in shard " + file + " but not in the index");
        if (mapped != weight_map.end() && mapped->second != file)
          throw bad_input(where + ": tensor \"" + t.name + "\" is in shard " + file + " but the index places it in " +
                          mapped->second);
      }
      ck->files_.push_back(file);
      ck->shards_.push_back(std::move(shard));
    }
    for (const auto& [tensor, file] : weight_map)
      if (!seen_in.count(tensor))
        throw bad_input(where + ": the index places tensor \"" + tensor + "\" in shard " + file +
                        ", but that shard has no such tensor");
  } else if (std::filesystem::exists(single_path, ec)) {
    where = single_path.string();
    ck->shards_.push_back(std::make_unique<SafetensorsFile>(single_path, residency));
    ck->files_.push_back("model.safetensors");
  } else {
    throw bad_input(dir.string() + ": no weights: neither model.safetensors nor model.safetensors.index.json exists");
  }
  ck->source_ = where;
  for (const auto& shard : ck->shards_)
    for (const TensorView& t : shard->tensors())
      if (!is_ignored_buffer(t.name)) ck->tensors_.emplace(t.name, t);
  const std::string config_text = read_file(dir / "config.json");
  ck->identity_ = identity_of(config_text, ck->tensors_);
  const std::string config_name = (dir / "config.json").string();
  ck->quantization_ = parse_quantization_config(parse_json_object(config_text, config_name), config_name);
  return ck;
}

bool Checkpoint::has_weights(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::exists(dir / "model.safetensors.index.json", ec) ||
         std::filesystem::exists(dir / "model.safetensors", ec);
}

const TensorView* Checkpoint::find(std::string_view name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const TensorView& Checkpoint::tensor(std::string_view name) const {
  const TensorView* t = find(name);
  if (!t) throw bad_input(dir_.string() + ": checkpoint has no tensor \"" + std::string(name) + "\"");
  return *t;
}

size_t Checkpoint::file_bytes() const {
  size_t total = 0;
  for (const auto& s : shards_) total += s->file_bytes();
  return total;
}

}  // namespace smolvlm
