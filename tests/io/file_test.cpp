#include "io/file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>

#include "core/error.h"
#include "io/safetensors.h"
#include "io_test_util.h"

namespace smolvlm {
namespace {

std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + i / 4093) & 0xff);
  return s;
}

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Sizes around a page and a huge page, so that the last page read is partly past the end.
TEST(MappedFile, ReadIntoMemoryHoldsTheSameBytesAsTheMap) {
  test::ScratchDir dir("file");
  for (size_t n : {size_t(1), size_t(4095), size_t(4096), size_t(4097), (size_t(2) << 20) + 5}) {
    const std::string bytes = pattern(n);
    write_bytes(dir / "f.bin", bytes);
    const MappedFile mapped(dir / "f.bin", FileResidency::Mapped);
    const MappedFile read(dir / "f.bin", FileResidency::Read);
    EXPECT_EQ(mapped.residency(), FileResidency::Mapped);
    EXPECT_EQ(read.residency(), FileResidency::Read);
    ASSERT_EQ(read.size(), n);
    ASSERT_EQ(mapped.size(), n);
    EXPECT_NE(read.data(), mapped.data());
    EXPECT_EQ(std::memcmp(read.data(), bytes.data(), n), 0) << n;
    EXPECT_EQ(std::memcmp(mapped.data(), bytes.data(), n), 0) << n;
    // On a huge page boundary, so that the kernel may back all of it with huge pages.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(read.data()) % (uintptr_t(2) << 20), 0u) << n;
  }
}

TEST(MappedFile, ReadIntoMemoryKeepsItsBytesWhenMovedAndWhenTheFileChanges) {
  test::ScratchDir dir("file_move");
  const std::string bytes = pattern(10000);
  write_bytes(dir / "f.bin", bytes);
  MappedFile a(dir / "f.bin", FileResidency::Read);
  const uint8_t* data = a.data();
  MappedFile b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(b.residency(), FileResidency::Read);
  MappedFile c;
  c = std::move(b);
  ASSERT_EQ(c.size(), bytes.size());
  write_bytes(dir / "f.bin", std::string(bytes.size(), 'x'));  // the copy is the process's own
  EXPECT_EQ(std::memcmp(c.data(), bytes.data(), bytes.size()), 0);
}

TEST(MappedFile, EmptyMissingAndNonRegularFiles) {
  test::ScratchDir dir("file_bad");
  write_bytes(dir / "empty.bin", "");
  for (FileResidency r : {FileResidency::Mapped, FileResidency::Read}) {
    const MappedFile empty(dir / "empty.bin", r);
    EXPECT_EQ(empty.size(), 0u);
    EXPECT_EQ(empty.data(), nullptr);
    const std::string missing = (dir / "missing.bin").string();
    test::expect_error([&] { MappedFile f(missing, r); }, ErrorKind::Io, missing + ": cannot open");
    test::expect_error([&] { MappedFile f(dir.path(), r); }, ErrorKind::Io, dir.path().string() + ": not a regular file");
  }
}

TEST(Checkpoint, ReadIntoMemoryHoldsTheTensorsOfTheMap) {
  for (const char* name : {"smolvlm-tiny", "llama-tiny"}) {  // sharded, one file
    const auto mapped = Checkpoint::open(test::data_dir() / "models" / name, FileResidency::Mapped);
    const auto read = Checkpoint::open(test::data_dir() / "models" / name, FileResidency::Read);
    EXPECT_EQ(read->residency(), FileResidency::Read);
    EXPECT_EQ(mapped->residency(), FileResidency::Mapped);
    EXPECT_EQ(read->identity(), mapped->identity());
    ASSERT_EQ(read->tensors().size(), mapped->tensors().size());
    for (const auto& [tensor, m] : mapped->tensors()) {
      const TensorView& r = read->tensor(tensor);
      EXPECT_NE(r.data, m.data) << tensor;
      ASSERT_EQ(r.nbytes, m.nbytes) << tensor;
      EXPECT_EQ(std::memcmp(r.data, m.data, m.nbytes), 0) << tensor;
    }
  }
}

}  // namespace
}  // namespace smolvlm
