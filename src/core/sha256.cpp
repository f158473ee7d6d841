#include "core/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <fstream>
#include <vector>

#include "core/error.h"

namespace smolvlm {

struct Sha256::State {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
  state_->ctx = EVP_MD_CTX_new();
  if (!state_->ctx || EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr) != 1)
    throw internal_error("sha256: cannot initialise the digest");
}

Sha256::~Sha256() { EVP_MD_CTX_free(state_->ctx); }

void Sha256::update(const void* data, size_t size) {
  if (size && EVP_DigestUpdate(state_->ctx, data, size) != 1) throw internal_error("sha256: update failed");
}

std::string Sha256::final_hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(state_->ctx, digest, &len) != 1) throw internal_error("sha256: final failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(hex[digest[i] >> 4]);
    out.push_back(hex[digest[i] & 15]);
  }
  return out;
}

std::string sha256_hex(const void* data, size_t size) {
  Sha256 h;
  h.update(data, size);
  return h.final_hex();
}

std::string sha256_file_hex(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw io_error(path.string() + ": cannot open for reading");
  Sha256 h;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.update(buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw io_error(path.string() + ": read failed");
  return h.final_hex();
}

}  // namespace smolvlm
