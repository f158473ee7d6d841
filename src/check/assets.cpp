#include "check/assets.h"

#include <zlib.h>

#include <cstdlib>
#include <vector>

#include "check/embedded.h"
#include "core/error.h"
#include "io/file.h"

namespace smolvlm {

std::string CheckAssets::bytes(std::string_view name) const {
  if (dir_) return read_file(*dir_ / std::string(name));
  auto f = embedded_file(name);
  if (!f) throw internal_error("check asset '" + std::string(name) + "' is not in this binary");
  return std::string(reinterpret_cast<const char*>(f->data()), f->size());
}

nlohmann::json CheckAssets::json(std::string_view name) const {
  std::string text = bytes(name);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw bad_input("check asset '" + std::string(name) + "' is not valid JSON");
  return j;
}

std::string CheckAssets::gunzip(std::string_view name) const {
  std::string in = bytes(name);
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw internal_error("zlib: cannot initialise");
  zs.next_in = reinterpret_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  std::string out;
  std::vector<char> buf(1 << 16);
  int rc;
  do {
    zs.next_out = reinterpret_cast<Bytef*>(buf.data());
    zs.avail_out = static_cast<uInt>(buf.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&zs);
      throw bad_input("check asset '" + std::string(name) + "' is not valid gzip data");
    }
    out.append(buf.data(), buf.size() - zs.avail_out);
  } while (rc != Z_STREAM_END);
  inflateEnd(&zs);
  return out;
}

void CheckAssets::extract_model(const std::filesystem::path& dir) const {
  static const char* files[] = {"config.json", "generation_config.json", "preprocessor_config.json",
                                "processor_config.json", "chat_template.json", "tokenizer_config.json",
                                "special_tokens_map.json", "model.safetensors"};
  for (const char* f : files) write_file_atomic(dir / f, bytes(std::string("model/") + f));
  write_file_atomic(dir / "tokenizer.json", gunzip("model/tokenizer.json.gz"));
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "smolvlm-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw io_error("cannot create a temporary folder in " + tmpl);
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace smolvlm
