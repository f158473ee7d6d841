#include "io/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

#include "core/error.h"

namespace smolvlm {

namespace {
std::string errno_text() { return std::strerror(errno); }
}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw io_error(path.string() + ": cannot open: " + errno_text());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    std::string why = errno_text();
    ::close(fd);
    throw io_error(path.string() + ": cannot stat: " + why);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw io_error(path.string() + ": not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      std::string why = errno_text();
      ::close(fd);
      throw io_error(path.string() + ": cannot mmap: " + why);
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& o) noexcept : path_(std::move(o.path_)), data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    path_ = std::move(o.path_);
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
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
