#include "core/error.h"

#include <gtest/gtest.h>

#include "core/sha256.h"
#include "io/npy.h"
#include "test_util.h"

namespace smolvlm {

TEST(Error, KindsMapToDistinctExitCodes) {
  ErrorKind kinds[] = {ErrorKind::BadInput, ErrorKind::Unsupported, ErrorKind::Io, ErrorKind::State,
                       ErrorKind::Internal};
  for (auto a : kinds)
    for (auto b : kinds)
      if (a != b) {
        EXPECT_NE(error_exit_code(a), error_exit_code(b));
      }
  for (auto a : kinds) EXPECT_NE(error_exit_code(a), 0);
  Error e = state_error("decode before prefill");
  EXPECT_EQ(e.kind(), ErrorKind::State);
  EXPECT_STREQ(e.what(), "decode before prefill");
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 h;
  h.update("a", 1);
  h.update("bc", 2);
  EXPECT_EQ(h.final_hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Npy, RoundTripAndRejectsGarbage) {
  float v[6] = {1, 2, 3, 4, 5, -0.5f};
  std::string bytes = serialize_npy("f4", {2, 3}, v, sizeof v);
  NpyArray a = parse_npy(bytes, "mem");
  ASSERT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.to_vector<float>(), std::vector<float>(v, v + 6));
  EXPECT_THROW(a.data<int64_t>(), Error);
  EXPECT_THROW(parse_npy("not numpy at all", "mem"), Error);
  EXPECT_THROW(parse_npy(bytes.substr(0, bytes.size() - 1), "mem"), Error);
}

TEST(Npy, FortranOrderIsReorderedToCOrder) {
  float col_major[6] = {1, 4, 2, 5, 3, 6};  // [[1,2,3],[4,5,6]] stored column by column
  std::string bytes = serialize_npy("f4", {2, 3}, col_major, sizeof col_major);
  size_t at = bytes.find("'fortran_order': False");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 22, "'fortran_order': True ");  // same length keeps the header aligned
  NpyArray a = parse_npy(bytes, "mem");
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

}  // namespace smolvlm
