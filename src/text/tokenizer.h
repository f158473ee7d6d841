// HF `tokenizers` (tokenizer.json) re-implemented: the same ids from `encode` and the same text from
// `decode` as the Rust library, for BPE models with the normalizers, pre-tokenizers, decoders and
// post-processors real models use. Anything else in a tokenizer.json is refused with an Error that
// names the component.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace smolvlm {

namespace text {
struct TokenizerImpl;
}

class Tokenizer {
 public:
  // Throws Error(Io) when the file cannot be read, Error(BadInput/Unsupported) when it is malformed
  // or uses a component we do not implement.
  static std::unique_ptr<Tokenizer> from_file(const std::filesystem::path& tokenizer_json);
  // `name` appears in error messages (a path or a label).
  static std::unique_ptr<Tokenizer> from_json(const std::string& json_text, const std::string& name);
  ~Tokenizer();

  // Text that is not valid UTF-8 is first repaired the way Rust's from_utf8_lossy does (each maximal
  // invalid subpart becomes U+FFFD), which is what reaches HF from a Python or JS string.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = false) const;
  // Same as encode, also returning the vocabulary strings of the ids.
  std::vector<int32_t> encode_with_tokens(std::string_view text, bool add_special_tokens,
                                          std::vector<std::string>* tokens) const;
  // Ids the tokenizer lacks decode to nothing, as in HF (a model may generate them: embeddings are
  // often padded past the tokenizer); a negative id throws Error(BadInput).
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const;
  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::string id_to_token(int32_t id) const;  // Error(BadInput) on out-of-range
  bool has_id(int32_t id) const;              // a vocabulary entry or an added token
  int64_t vocab_size() const;                 // including added tokens
  bool is_special(int32_t id) const;
  const std::string& name() const;

 private:
  explicit Tokenizer(std::unique_ptr<text::TokenizerImpl> impl);
  std::unique_ptr<text::TokenizerImpl> impl_;
};

// transformers' clean_up_tokenization, which its decode() applies after the tokenizer's own when
// tokenizer_config.json sets "clean_up_tokenization_spaces": true: " ." -> ".", " ?" -> "?",
// " !" -> "!", " ," -> ",", " ' " -> "'", " n't" -> "n't", " 'm" -> "'m", " 's" -> "'s",
// " 've" -> "'ve", " 're" -> "'re", each over the whole text, in that order.
std::string clean_up_tokenization(std::string text);

// Turns generated ids into text piece by piece for streaming. Holds back text that may still change
// (an incomplete UTF-8 sequence, which decodes to a trailing U+FFFD; with clean-up, a tail where a
// clean-up pattern may still match), so the concatenation of every push() and the final finish()
// equals tok.decode(all ids), passed through clean_up_tokenization when `clean_up_spaces`.
class StreamingDetokenizer {
 public:
  StreamingDetokenizer(const Tokenizer& tok, bool skip_special_tokens, bool clean_up_spaces = false);
  std::string push(int32_t id);  // newly printable text (may be empty)
  std::string finish();          // whatever remains (may contain U+FFFD, as decode would)
  // Pushed ids the tokenizer lacks (they decode to nothing).
  int64_t unprintable() const { return unprintable_; }

 private:
  std::string decode_range(size_t begin, size_t end) const;
  std::string release(std::string raw, bool final);
  const Tokenizer& tok_;
  bool skip_special_;
  bool clean_up_;
  std::string held_;  // decoded text not yet cleaned up and emitted (clean-up only)
  std::vector<int32_t> ids_;
  size_t prefix_offset_ = 0;  // ids before this are fully emitted and no longer decoded
  size_t read_offset_ = 0;    // text of ids [prefix_offset_, read_offset_) has been emitted
  int64_t unprintable_ = 0;
};

}  // namespace smolvlm
