// The server's request parsing and media rules without a socket: every field check, data: URLs,
// file:// under the media folder (no escape through .. or symlinks) and the private-address rule.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "server/http_error.h"
#include "server/media.h"
#include "server/request.h"
#include "test_util.h"

namespace smolvlm::server {
namespace {

namespace fs = std::filesystem;

// A tiny valid PNG header is enough for the parser's format check.
const std::string kPngB64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

int status_of(const std::string& body, Endpoint e = Endpoint::Chat, const MediaPolicy& p = {}, std::string* param = nullptr) {
  try {
    parse_request(body, e, p);
  } catch (const HttpError& err) {
    if (param) *param = err.param;
    return err.status;
  }
  return 200;
}

TEST(ServerRequest, ParsesChatFields) {
  const std::string body = R"({"model":"m","max_completion_tokens":7,"temperature":0,"top_p":0.5,"seed":3,"stop":["a","b"],
    "stream":true,"stream_options":{"include_usage":true},"unknown_field":{"x":1},
    "messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,)" +
                           kPngB64 + R"("}},{"type":"text","text":"q"}]}]})";
  ParsedRequest r = parse_request(body, Endpoint::Chat, {});
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_EQ(r.sampling.temperature, 0.0f);
  EXPECT_EQ(r.sampling.top_p, 0.5f);
  EXPECT_EQ(r.sampling.seed, 3u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  ASSERT_EQ(r.images.size(), 1u);
  EXPECT_EQ(r.images[0]->substr(1, 3), "PNG");
  smolvlm_request req;
  smolvlm_request_init(&req);
  r.fill(req);
  ASSERT_EQ(req.n_messages, 2u);
  EXPECT_EQ(req.messages[0].role, SMOLVLM_ROLE_SYSTEM);
  ASSERT_EQ(req.messages[1].n_parts, 2u);
  EXPECT_EQ(req.messages[1].parts[0].kind, SMOLVLM_PART_IMAGE);
  EXPECT_EQ(req.messages[1].parts[0].image.kind, SMOLVLM_IMAGE_ENCODED);
  EXPECT_EQ(req.messages[1].parts[0].image.size, r.images[0]->size());
  EXPECT_STREQ(req.messages[1].parts[1].text, "q");
  EXPECT_EQ(req.max_new_tokens, 7);
  EXPECT_EQ(req.n_stop, 2u);
  EXPECT_EQ(req.split, -1);  // the model's default unless the request says
  ParsedRequest unsplit = parse_request(R"({"messages":[{"role":"user","content":"hi"}],"split":false})", Endpoint::Chat, {});
  unsplit.fill(req);
  EXPECT_EQ(req.split, 0);
}

TEST(ServerRequest, EachBadFieldIsA400NamingIt) {
  const std::string msgs = R"("messages":[{"role":"user","content":"hi"}])";
  const std::pair<std::string, std::string> cases[] = {
      {"{" + msgs + ",\"n\":2}", "n"},
      {"{" + msgs + ",\"temperature\":3}", "temperature"},
      {"{" + msgs + ",\"temperature\":\"hot\"}", "temperature"},
      {"{" + msgs + ",\"top_p\":0}", "top_p"},
      {"{" + msgs + ",\"max_tokens\":0}", "max_tokens"},
      {"{" + msgs + ",\"max_tokens\":1.5}", "max_tokens"},
      {"{" + msgs + ",\"frequency_penalty\":0.5}", "frequency_penalty"},
      {"{" + msgs + ",\"presence_penalty\":1}", "presence_penalty"},
      {"{" + msgs + ",\"stop\":[1]}", "stop"},
      {"{" + msgs + ",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", "stop"},
      {"{" + msgs + ",\"stream\":\"yes\"}", "stream"},
      {"{" + msgs + ",\"split\":1}", "split"},
      {"{" + msgs + ",\"logprobs\":true}", "logprobs"},
      {"{" + msgs + ",\"model\":5}", "model"},
      {R"({"messages":[]})", "messages"},
      {R"({})", "messages"},
      {R"({"messages":[{"role":"tool","content":"x"}]})", "messages[0].role"},
      {R"({"messages":[{"role":"user","content":5}]})", "messages[0].content"},
      {R"({"messages":[{"role":"user","content":[{"type":"audio"}]}]})", "messages[0].content[0].type"},
      {R"({"messages":[{"role":"user","content":[{"type":"text","text":"a\u0000b"}]}]})", "messages[0].content[0].text"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,!!!"}}]}]})",
       "messages[0].content[0].image_url"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,aGVsbG8="}}]}]})",
       "messages[0].content[0].image_url"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"http://127.0.0.1/x.png"}}]}]})",
       "messages[0].content[0].image_url"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"file:///etc/passwd"}}]}]})",
       "messages[0].content[0].image_url"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}]})",
       "messages[0].content[0].image_url"},
  };
  for (const auto& [body, param] : cases) {
    std::string got;
    EXPECT_EQ(status_of(body, Endpoint::Chat, {}, &got), 400) << body;
    EXPECT_EQ(got, param) << body;
  }
  EXPECT_EQ(status_of("{not json"), 400);
  EXPECT_EQ(status_of("[1,2]"), 400);
  EXPECT_EQ(status_of(R"({"prompt":""})", Endpoint::Completion), 400);
  EXPECT_EQ(status_of(R"({"prompt":["a","b"]})", Endpoint::Completion), 400);
  EXPECT_EQ(status_of(R"({"prompt":"fine"})", Endpoint::Completion), 200);
  EXPECT_EQ(status_of("{" + msgs + ",\"frequency_penalty\":0,\"n\":1}"), 200);
}

TEST(ServerMedia, Base64AndDataUrls) {
  std::string out;
  EXPECT_TRUE(decode_base64("aGVsbG8=", out));
  EXPECT_EQ(out, "hello");
  EXPECT_TRUE(decode_base64("aGVsbG8", out));
  EXPECT_EQ(out, "hello");
  EXPECT_FALSE(decode_base64("aGVs bG8=", out));
  EXPECT_FALSE(decode_base64("a", out));
  EXPECT_THROW(decode_data_url("data:text/plain;base64,aGVsbG8=", 100, "p"), HttpError);
  EXPECT_THROW(decode_data_url("data:image/png,raw", 100, "p"), HttpError);
  EXPECT_THROW(decode_data_url("data:image/png;base64,aGVsbG8=", 3, "p"), HttpError);  // over the cap
  EXPECT_EQ(decode_data_url("data:image/png;base64,aGVsbG8=", 100, "p"), "hello");
}

TEST(ServerMedia, PrivateAddresses) {
  for (const char* ip : {"127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
                         "0.0.0.0", "224.0.0.1", "::1", "::", "fc00::1", "fd12::3", "fe80::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
                         "not-an-ip"})
    EXPECT_TRUE(is_private_address(ip)) << ip;
  for (const char* ip : {"8.8.8.8", "1.1.1.1", "172.32.0.1", "192.169.0.1", "2606:4700::1111", "::ffff:8.8.8.8"})
    EXPECT_FALSE(is_private_address(ip)) << ip;
}

TEST(ServerMedia, FilesOnlyInsideTheMediaFolder) {
  const fs::path root = fs::temp_directory_path() / ("smolvlm_media_" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "media" / "sub");
  std::ofstream(root / "media" / "sub" / "a.png") << "\x89PNG....";
  std::ofstream(root / "secret.png") << "\x89PNG secret";
  fs::create_symlink(root / "secret.png", root / "media" / "link.png");
  MediaPolicy p;
  p.media_path = (root / "media").string();
  const std::string m = p.media_path;
  EXPECT_EQ(read_media_file("file://" + m + "/sub/a.png", p, "x"), "\x89PNG....");
  EXPECT_EQ(read_media_file("file://" + m + "/sub/../sub/a.png", p, "x"), "\x89PNG....");
  for (const std::string& escape : {m + "/../secret.png", m + "/link.png", (root / "secret.png").string(), m + "/sub/../../secret.png",
                                    m, m + "/sub", m + "/missing.png", std::string("/etc/passwd"), std::string("relative.png")})
    EXPECT_THROW(read_media_file("file://" + escape, p, "x"), HttpError) << escape;
  // A sibling folder whose name starts with the media folder's is outside too.
  fs::create_directories(root / "media2");
  std::ofstream(root / "media2" / "b.png") << "\x89PNG";
  EXPECT_THROW(read_media_file("file://" + (root / "media2" / "b.png").string(), p, "x"), HttpError);
  MediaPolicy none;
  EXPECT_THROW(read_media_file("file://" + m + "/sub/a.png", none, "x"), HttpError);
  fs::remove_all(root);
}

}  // namespace
}  // namespace smolvlm::server
