#include "io/npy.h"

#include <cstring>

#include "core/error.h"
#include "io/file.h"

namespace smolvlm {

namespace {

size_t dtype_bytes(const std::string& d, const std::string& name) {
  static const char* known[] = {"f2", "f4", "f8", "u1", "i1", "u2", "i2", "u4", "i4", "u8", "i8", "b1"};
  for (const char* k : known)
    if (d == k) return static_cast<size_t>(d[1] - '0');
  throw unsupported(name + ": unsupported npy dtype '" + d + "'");
}

// Value of `key` in the header dict text, e.g. "'descr': '<f4'" -> "'<f4'".
std::string header_value(const std::string& h, const std::string& key, const std::string& name) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) throw bad_input(name + ": npy header lacks '" + key + "'");
  size_t colon = h.find(':', k);
  if (colon == std::string::npos) throw bad_input(name + ": malformed npy header");
  size_t start = h.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos) throw bad_input(name + ": malformed npy header");
  size_t end;
  if (h[start] == '(') {
    end = h.find(')', start);
    if (end == std::string::npos) throw bad_input(name + ": malformed npy shape");
    ++end;
  } else if (h[start] == '\'') {
    end = h.find('\'', start + 1);
    if (end == std::string::npos) throw bad_input(name + ": malformed npy header");
    ++end;
  } else {
    end = h.find_first_of(",}", start);
    if (end == std::string::npos) throw bad_input(name + ": malformed npy header");
  }
  std::string value = h.substr(start, end - start);
  while (!value.empty() && value.back() == ' ') value.pop_back();
  return value;
}

// Reorders column-major (Fortran) data into row-major order.
std::vector<uint8_t> fortran_to_c_order(const std::vector<uint8_t>& in, const std::vector<int64_t>& shape,
                                        size_t esize) {
  std::vector<uint8_t> out(in.size());
  size_t dims = shape.size();
  std::vector<int64_t> idx(dims, 0);
  size_t count = in.size() / esize;
  for (size_t c = 0; c < count; ++c) {  // c walks the C-order positions
    size_t f = 0, stride = 1;
    for (size_t d = 0; d < dims; ++d) {
      f += static_cast<size_t>(idx[d]) * stride;
      stride *= static_cast<size_t>(shape[d]);
    }
    std::memcpy(out.data() + c * esize, in.data() + f * esize, esize);
    for (size_t d = dims; d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

}  // namespace

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

#define SMOLVLM_NPY_DATA(T)                                                                       \
  template <>                                                                                     \
  const T* NpyArray::data<T>() const {                                                            \
    if (dtype != npy_dtype_of<T>())                                                               \
      throw bad_input("npy array has dtype " + dtype + ", expected " + npy_dtype_of<T>());        \
    return reinterpret_cast<const T*>(bytes.data());                                              \
  }
SMOLVLM_NPY_DATA(float)
SMOLVLM_NPY_DATA(double)
SMOLVLM_NPY_DATA(uint8_t)
SMOLVLM_NPY_DATA(int8_t)
SMOLVLM_NPY_DATA(uint16_t)
SMOLVLM_NPY_DATA(int16_t)
SMOLVLM_NPY_DATA(int32_t)
SMOLVLM_NPY_DATA(int64_t)
#undef SMOLVLM_NPY_DATA

NpyArray parse_npy(const std::string& f, const std::string& name) {
  if (f.size() < 10 || std::memcmp(f.data(), "\x93NUMPY", 6) != 0) throw bad_input(name + ": not an .npy file");
  int major = static_cast<uint8_t>(f[6]);
  size_t hlen, hstart;
  if (major == 1) {
    hlen = static_cast<uint8_t>(f[8]) | (static_cast<size_t>(static_cast<uint8_t>(f[9])) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (f.size() < 12) throw bad_input(name + ": truncated .npy header");
    hlen = 0;
    for (int i = 0; i < 4; ++i) hlen |= static_cast<size_t>(static_cast<uint8_t>(f[8 + i])) << (8 * i);
    hstart = 12;
  } else {
    throw unsupported(name + ": npy format version " + std::to_string(major));
  }
  if (hstart + hlen > f.size()) throw bad_input(name + ": truncated .npy header");
  std::string h = f.substr(hstart, hlen);
  NpyArray a;
  std::string descr = header_value(h, "descr", name);
  if (descr.size() < 4) throw bad_input(name + ": bad npy descr " + descr);
  char order = descr[1];
  a.dtype = descr.substr(2, descr.size() - 3);
  size_t esize = dtype_bytes(a.dtype, name);
  if (order == '>' && esize > 1) throw unsupported(name + ": big-endian npy data");
  std::string fortran = header_value(h, "fortran_order", name);
  if (fortran != "False" && fortran != "True") throw bad_input(name + ": bad npy fortran_order " + fortran);
  std::string shape = header_value(h, "shape", name);
  size_t i = 1;
  int64_t count = 1;
  while (i < shape.size()) {
    size_t j = shape.find_first_of("0123456789", i);
    if (j == std::string::npos) break;
    size_t k = shape.find_first_not_of("0123456789", j);
    int64_t d = std::stoll(shape.substr(j, k - j));
    if (d < 0 || (d > 0 && count > (int64_t(1) << 40) / d)) throw bad_input(name + ": npy shape too large");
    count *= d;
    a.shape.push_back(d);
    i = k;
  }
  size_t nbytes = static_cast<size_t>(count) * esize;
  size_t data_start = hstart + hlen;
  if (f.size() - data_start != nbytes)
    throw bad_input(name + ": npy data is " + std::to_string(f.size() - data_start) + " bytes, expected " +
                    std::to_string(nbytes));
  a.bytes.assign(f.begin() + static_cast<std::ptrdiff_t>(data_start), f.end());
  if (fortran == "True" && a.shape.size() > 1) a.bytes = fortran_to_c_order(a.bytes, a.shape, esize);
  return a;
}

NpyArray read_npy(const std::filesystem::path& path) { return parse_npy(read_file(path, size_t(4) << 30), path.string()); }

std::string serialize_npy(const std::string& dtype, const std::vector<int64_t>& shape, const void* data,
                          size_t nbytes) {
  std::string descr = (dtype == "u1" || dtype == "i1" || dtype == "b1" ? "|" : "<") + dtype;
  std::string shp = "(";
  for (size_t i = 0; i < shape.size(); ++i) shp += std::to_string(shape[i]) + (shape.size() == 1 ? "," : (i + 1 < shape.size() ? ", " : ""));
  shp += ")";
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shp + ", }";
  size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(h.size() & 0xff));
  out.push_back(static_cast<char>(h.size() >> 8));
  out += h;
  out.append(static_cast<const char*>(data), nbytes);
  return out;
}

void write_npy(const std::filesystem::path& path, const std::string& dtype, const std::vector<int64_t>& shape,
               const void* data, size_t nbytes) {
  write_file_atomic(path, serialize_npy(dtype, shape, data, nbytes));
}

}  // namespace smolvlm
