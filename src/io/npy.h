// NumPy .npy files (format 1.0/2.0/3.0, little-endian, C order): the exchange format of the
// reference data and of stage dumps.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace smolvlm {

struct NpyArray {
  std::string dtype;            // numpy kind+size without byte order: "f4", "f8", "u1", "i8", "i4", "b1", ...
  std::vector<int64_t> shape;   // empty = scalar
  std::vector<uint8_t> bytes;   // C-order raw little-endian data

  int64_t numel() const;
  // Typed view; throws Error(BadInput) when the dtype does not match T.
  template <typename T>
  const T* data() const;
  template <typename T>
  std::vector<T> to_vector() const { const T* p = data<T>(); return std::vector<T>(p, p + numel()); }
};

NpyArray read_npy(const std::filesystem::path& path);           // throws Error on any malformation
NpyArray parse_npy(const std::string& file_bytes, const std::string& name_for_errors);
std::string serialize_npy(const std::string& dtype, const std::vector<int64_t>& shape, const void* data,
                          size_t nbytes);
// Atomic write (temp + rename).
void write_npy(const std::filesystem::path& path, const std::string& dtype, const std::vector<int64_t>& shape,
               const void* data, size_t nbytes);

template <typename T>
constexpr const char* npy_dtype_of();
template <> constexpr const char* npy_dtype_of<float>() { return "f4"; }
template <> constexpr const char* npy_dtype_of<double>() { return "f8"; }
template <> constexpr const char* npy_dtype_of<uint8_t>() { return "u1"; }
template <> constexpr const char* npy_dtype_of<int8_t>() { return "i1"; }
template <> constexpr const char* npy_dtype_of<uint16_t>() { return "u2"; }
template <> constexpr const char* npy_dtype_of<int16_t>() { return "i2"; }
template <> constexpr const char* npy_dtype_of<int32_t>() { return "i4"; }
template <> constexpr const char* npy_dtype_of<int64_t>() { return "i8"; }

}  // namespace smolvlm
