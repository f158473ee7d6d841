#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "core/error.h"
#include "io/file.h"
#include "runtime/model.h"

namespace smolvlm {
namespace {

constexpr uint64_t kGiB = uint64_t(1) << 30;

TEST(WeightResidency, MappedWhenAskedWhateverTheMemory) {
  for (std::optional<uint64_t> available : {std::optional<uint64_t>(), std::optional<uint64_t>(0), std::optional<uint64_t>(64 * kGiB)})
    EXPECT_EQ(weight_residency(FileResidency::Mapped, 4 * kGiB, available, "m"), FileResidency::Mapped);
}

TEST(WeightResidency, UnsetReadsWhatTakesAtMostThreeQuartersOfTheMemory) {
  EXPECT_EQ(weight_residency(std::nullopt, 3 * kGiB, 4 * kGiB, "m"), FileResidency::Read);
  EXPECT_EQ(weight_residency(std::nullopt, 3 * kGiB + 1, 4 * kGiB, "m"), FileResidency::Mapped);
  EXPECT_EQ(weight_residency(std::nullopt, 1, 0, "m"), FileResidency::Mapped);
  EXPECT_EQ(weight_residency(std::nullopt, 0, 0, "m"), FileResidency::Read);
  EXPECT_EQ(weight_residency(std::nullopt, 64 * kGiB, std::nullopt, "m"), FileResidency::Read) << "memory unknown";
}

TEST(WeightResidency, ReadWhenAskedIsAnErrorOnlyWhereTheFilesDoNotFit) {
  EXPECT_EQ(weight_residency(FileResidency::Read, 4 * kGiB, 4 * kGiB, "m"), FileResidency::Read);
  EXPECT_EQ(weight_residency(FileResidency::Read, 4 * kGiB, std::nullopt, "m"), FileResidency::Read);
  try {
    weight_residency(FileResidency::Read, 4 * kGiB + 1, 4 * kGiB, "/models/big");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("/models/big: its weight files take 4294967297 bytes, more than the 4294967296 "
                                         "bytes of memory available"),
              std::string::npos)
        << e.what();
  }
}

TEST(WeightResidency, AvailableMemoryIsReadOnLinux) {
#ifdef __linux__
  const std::optional<uint64_t> bytes = available_memory_bytes();
  ASSERT_TRUE(bytes.has_value());
  EXPECT_GT(*bytes, uint64_t(16) << 20) << "a machine that runs the tests has more than 16 MiB free";
#else
  GTEST_SKIP() << "MemAvailable is Linux's";
#endif
}

}  // namespace
}  // namespace smolvlm
