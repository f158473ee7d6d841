// UTF-8 and Unicode helpers of the text module: decoding code points, the lossy repair Rust's
// String::from_utf8_lossy performs, character classes as Rust's `char` methods define them, and
// Unicode normalization (utf8proc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace smolvlm::text {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when the bytes there are not one.
size_t utf8_sequence_length(std::string_view s, size_t i);
// Decodes the valid sequence at s[i] (caller checked utf8_sequence_length > 0).
char32_t utf8_decode_at(std::string_view s, size_t i, size_t len);
void utf8_append(std::string& out, char32_t cp);
// True when `s` is entirely valid UTF-8.
bool utf8_is_valid(std::string_view s);
// Replaces every maximal invalid subpart with U+FFFD, exactly as Rust's String::from_utf8_lossy.
std::string utf8_lossy(std::string_view s);
// The number of bytes at the end of `s` that form an incomplete (but so far valid) UTF-8 sequence.
size_t utf8_incomplete_tail(std::string_view s);

// Rust char::is_whitespace (Unicode White_Space).
bool is_whitespace(char32_t c);
// Rust char::is_numeric (general categories Nd, Nl, No).
bool is_numeric(char32_t c);
// Rust char::is_alphabetic approximated by the letter categories plus Nl.
bool is_alphabetic(char32_t c);
// Unicode punctuation (categories P*) or ASCII punctuation, as HF's Punctuation pre-tokenizer.
bool is_punctuation(char32_t c);

enum class NormalForm { NFC, NFD, NFKC, NFKD };
std::string normalize_unicode(std::string_view s, NormalForm form);  // `s` must be valid UTF-8
std::string to_lowercase(std::string_view s);                         // `s` must be valid UTF-8

}  // namespace smolvlm::text
