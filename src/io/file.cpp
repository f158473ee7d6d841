#include "io/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

#include "core/error.h"

namespace smolvlm {

namespace {
std::string errno_text() { return std::strerror(errno); }

// Huge pages of 2 MiB (x86-64, and aarch64 with 4 KiB pages): memory starting on such a boundary can
// be backed by them whole.
constexpr size_t kHugePageBytes = size_t(2) << 20;

// Anonymous read-write memory of `bytes` (whole pages) starting on a kHugePageBytes boundary, advised
// for huge pages; nullptr when the system has none to give.
uint8_t* reserve_memory(size_t bytes) {
  void* p = ::mmap(nullptr, bytes + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const uintptr_t base = reinterpret_cast<uintptr_t>(p);
  const uintptr_t start = (base + kHugePageBytes - 1) & ~uintptr_t(kHugePageBytes - 1);
  if (start > base) ::munmap(p, start - base);
  if (const size_t tail = base + kHugePageBytes - start) ::munmap(reinterpret_cast<void*>(start + bytes), tail);
  // Advice only: fine where refused. Populating the memory before reading into it made reading the
  // 256M model's 513 MB from the page cache 0.09-0.10 s instead of 0.76-0.95 s (huge pages faulted in
  // one at a time by the read).
#ifdef MADV_HUGEPAGE
  ::madvise(reinterpret_cast<void*>(start), bytes, MADV_HUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
  ::madvise(reinterpret_cast<void*>(start), bytes, MADV_POPULATE_WRITE);
#endif
  return reinterpret_cast<uint8_t*>(start);
}

// Reads bytes [0, n) of the open file into dst.
void read_whole(int fd, uint8_t* dst, size_t n, const std::filesystem::path& path) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, dst + done, std::min(n - done, size_t(1) << 30), static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw io_error(path.string() + ": cannot read: " + errno_text());
    if (got == 0)
      throw io_error(path.string() + ": ended after " + std::to_string(done) + " of its " + std::to_string(n) +
                     " bytes (changed while being read?)");
    done += static_cast<size_t>(got);
  }
}

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path, FileResidency residency)
    : path_(path), residency_(residency) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw io_error(path.string() + ": cannot open: " + errno_text());
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw io_error(path.string() + ": cannot stat: " + errno_text());
  if (!S_ISREG(st.st_mode)) throw io_error(path.string() + ": not a regular file");
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0) return;
  if (residency_ == FileResidency::Mapped) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) throw io_error(path.string() + ": cannot mmap: " + errno_text());
    data_ = static_cast<const uint8_t*>(p);
    return;
  }
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t bytes = (size_ + page - 1) / page * page;
  uint8_t* memory = reserve_memory(bytes);
  if (!memory)
    throw io_error(path.string() + ": cannot get " + std::to_string(bytes) + " bytes of memory to read it into: " +
                   errno_text());
  data_ = memory;
  try {
    read_whole(fd, memory, size_, path);
  } catch (...) {
    release();
    throw;
  }
  // Read-only from here on, as a mapped file is: a stray write faults instead of changing a weight.
  ::mprotect(memory, bytes, PROT_READ);
}

// Either kind of memory is released by munmap, which takes the length in whole pages.
void MappedFile::release() noexcept {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& o) noexcept
    : path_(std::move(o.path_)), data_(o.data_), size_(o.size_), residency_(o.residency_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    release();
    path_ = std::move(o.path_);
    data_ = o.data_;
    size_ = o.size_;
    residency_ = o.residency_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

namespace {

// The number after `key` in a file of "key value" lines or of one value ("max" reads as absent).
std::optional<uint64_t> number_in(const char* path, std::string_view key) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, key.size(), key) != 0) continue;
    const char* p = line.c_str() + key.size();
    while (*p == ' ' || *p == '\t') ++p;
    if (*p < '0' || *p > '9') return std::nullopt;
    return std::strtoull(p, nullptr, 10);
  }
  return std::nullopt;
}

}  // namespace

std::optional<uint64_t> available_memory_bytes() {
  std::optional<uint64_t> bytes;
  if (const auto kb = number_in("/proc/meminfo", "MemAvailable:")) bytes = *kb * 1024;
  // cgroup v2 (a container's own where it has a cgroup namespace): its limit less what it holds,
  // the page cache it could drop not counted.
  const auto limit = number_in("/sys/fs/cgroup/memory.max", "");
  auto used = number_in("/sys/fs/cgroup/memory.current", "");
  if (limit && used) {
    const uint64_t cache = number_in("/sys/fs/cgroup/memory.stat", "file ").value_or(0);
    *used -= std::min(*used, cache);
    const uint64_t left = *limit > *used ? *limit - *used : 0;
    bytes = bytes ? std::min(*bytes, left) : left;
  }
  return bytes;
}

std::string read_file(const std::filesystem::path& path, size_t max_bytes) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw io_error(path.string() + ": no such file");
  if (std::filesystem::is_directory(path, ec)) throw io_error(path.string() + ": is a directory, expected a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw io_error(path.string() + ": cannot open for reading");
  in.seekg(0, std::ios::end);
  std::streamoff n = in.tellg();
  if (n < 0) throw io_error(path.string() + ": cannot determine the size");
  if (static_cast<uint64_t>(n) > max_bytes)
    throw bad_input(path.string() + ": file is " + std::to_string(n) + " bytes, more than the limit of " +
                    std::to_string(max_bytes));
  in.seekg(0);
  std::string s(static_cast<size_t>(n), '\0');
  if (n > 0 && !in.read(s.data(), n)) throw io_error(path.string() + ": read failed");
  return s;
}

void write_file_atomic(const std::filesystem::path& path, std::string_view bytes) {
  std::random_device rd;
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw io_error(tmp.string() + ": cannot create: " + errno_text());
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      std::string why = errno_text();
      ::close(fd);
      ::unlink(tmp.c_str());
      throw io_error(path.string() + ": write failed: " + why);
    }
    done += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw io_error(path.string() + ": cannot flush: " + why);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw io_error(path.string() + ": cannot rename into place: " + why);
  }
}

}  // namespace smolvlm
