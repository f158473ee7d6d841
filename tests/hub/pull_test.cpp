// `pull` against a stand-in hub on 127.0.0.1 (tests/hub/fake_hub_server.py): fresh pulls, the
// cache layout, resumes, corrupt data, HTTP errors, offline mode, and the CLI's exit codes.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/sha256.h"
#include "hub/http.h"
#include "hub/model_ref.h"
#include "hub/pull.h"
#include "hub_test_util.h"
#include "test_util.h"

extern char** environ;

namespace smolvlm::hub {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::ScopedEnv;
using test::TempDir;

const std::string kRepo = "test-org/smolvlm-tiny";
const std::string kShardedRepo = "test-org/sharded";

fs::path tiny_dir() { return test::data_dir() / "models" / "smolvlm-tiny"; }
// The tiny model's weights are two LFS shards; the first is downloaded first.
const std::string kFirstShard = "model-00001-of-00002.safetensors";
fs::path first_shard() { return tiny_dir() / kFirstShard; }

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

using test::write_text_file;

// The stand-in hub, one per test process, serving the tiny model as kRepo and as the default id, and
// a sharded repository made up here.
class FakeHub {
 public:
  FakeHub() {
    fs::path dir = tmp_.path();
    fs::path sharded = dir / "sharded";
    write_text_file(sharded / "config.json", slurp(tiny_dir() / "config.json"));
    write_text_file(sharded / "model-00001-of-00002.safetensors", std::string(3000, 'a'));
    write_text_file(sharded / "model-00002-of-00002.safetensors", std::string(5000, 'b'));
    write_text_file(sharded / "model.safetensors.index.json",
          R"({"metadata": {}, "weight_map": {"x": "model-00001-of-00002.safetensors",)"
          R"( "y": "model-00002-of-00002.safetensors", "z": "model-00001-of-00002.safetensors"}})");
    write_text_file(sharded / "README.md", "not needed by the engine");
    fs::path port_file = dir / "port";
    std::string script = (test::data_dir().parent_path() / "hub" / "fake_hub_server.py").string();
    std::vector<std::string> args = {"/usr/bin/python3", script, "--port-file", port_file.string(),
                                     "--repo", kRepo + "=" + tiny_dir().string(),
                                     "--repo", std::string(kDefaultModelId) + "=" + tiny_dir().string(),
                                     "--repo", kShardedRepo + "=" + sharded.string()};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0) pid_ = -1;
    // The server writes its port once it listens; the bound (60 s) only catches a hang.
    for (int i = 0; i < 1200 && pid_ > 0 && !fs::exists(port_file); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (fs::exists(port_file)) base_ = "http://127.0.0.1:" + slurp(port_file);
  }
  ~FakeHub() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  bool running() const { return !base_.empty(); }
  // The endpoint that selects a scenario (see fake_hub_server.py).
  std::string endpoint(const std::string& scenario) const { return base_ + "/s/" + scenario; }
  // The requests the server answered for a scenario.
  json log(const std::string& scenario) const {
    HttpClient http;
    HttpResponse r = http.get(base_ + "/_log?scenario=" + url_escape(scenario, false));
    return json::parse(r.body);
  }

 private:
  TempDir tmp_;
  pid_t pid_ = -1;
  std::string base_;
};

FakeHub* hub_server = nullptr;

class Pull : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { hub_server = new FakeHub(); }
  static void TearDownTestSuite() {
    delete hub_server;
    hub_server = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(hub_server->running()) << "the stand-in hub did not start";
    scenario_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  PullOptions options(const std::string& knobs = "") {
    PullOptions o;
    o.endpoint = hub_server->endpoint(knobs.empty() ? scenario_ : knobs + "+" + scenario_);
    o.cache_root = cache_.path();
    o.token = "";
    return o;
  }
  json log(const std::string& knobs = "") { return hub_server->log(knobs.empty() ? scenario_ : knobs + "+" + scenario_); }
  RepoCache repo() const { return RepoCache(cache_.path(), kRepo); }

  static size_t count(const json& log, const std::string& method, const std::string& path_part) {
    size_t n = 0;
    for (const json& e : log)
      if (e["method"] == method && e["path"].get<std::string>().find(path_part) != std::string::npos) ++n;
    return n;
  }

  // The pull's failure, or a test failure when it succeeds.
  PullFailure failure_of(const std::string& ref, const PullOptions& o, std::string* message = nullptr) {
    try {
      pull(ref, o);
    } catch (const PullError& e) {
      if (message) *message = e.what();
      return e.failure();
    }
    ADD_FAILURE() << "pull of " << ref << " succeeded";
    return PullFailure::Server;
  }

  TempDir cache_;
  std::string scenario_;
  ScopedEnv offline_{"HF_HUB_OFFLINE", std::nullopt};
  ScopedEnv offline2_{"TRANSFORMERS_OFFLINE", std::nullopt};
};

std::string sha256_of(const fs::path& p) { return sha256_file_hex(p); }

// git's blob id, which the hub (and our stand-in) sends as the ETag of non-LFS files.
std::string git_blob_sha1(const std::string& content) {
  std::string object = "blob " + std::to_string(content.size()) + std::string(1, '\0') + content;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(object.data(), object.size(), digest, &n, EVP_sha1(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

// A loopback port nothing listens on (it was free a moment ago).
int closed_port() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(s);
  return port;
}

test::CommandResult run_cli_env(const std::string& shell_prefix, const std::string& args, bool merge_stderr) {
  return test::run_cli(args, merge_stderr, shell_prefix);
}

TEST_F(Pull, FreshPullWritesTheHuggingfaceHubLayout) {
  PullResult r = pull(kRepo, options());
  ASSERT_TRUE(is_commit_hash(r.commit));
  EXPECT_EQ(r.snapshot_dir, repo().snapshot_dir(r.commit));
  // refs/main holds the commit, no newline.
  EXPECT_EQ(slurp(repo().ref_file("main")), r.commit);
  // Every file of the tiny model is an engine file: all are there, identical to the source.
  size_t n = 0;
  for (const auto& entry : fs::directory_iterator(tiny_dir())) {
    std::string name = entry.path().filename().string();
    fs::path link = r.snapshot_dir / name;
    ASSERT_TRUE(fs::is_symlink(link)) << name;
    fs::path target = fs::read_symlink(link);
    EXPECT_EQ(target.parent_path(), fs::path("../../blobs")) << name;
    std::string etag = target.filename().string();
    std::string content = slurp(entry.path());
    // LFS files are named by their sha256, others by their git blob id.
    EXPECT_EQ(etag, name.ends_with(".safetensors") ? sha256_of(entry.path()) : git_blob_sha1(content)) << name;
    EXPECT_EQ(slurp(link), content) << name;
    EXPECT_FALSE(fs::exists(repo().incomplete_blob(etag)));
    ++n;
  }
  EXPECT_EQ(n, r.files.size());
  uint64_t bytes = 0, lfs_files = 0;
  for (const auto& entry : fs::directory_iterator(tiny_dir())) {
    bytes += fs::file_size(entry.path());
    lfs_files += entry.path().extension() == ".safetensors";
  }
  EXPECT_EQ(lfs_files, 2u);
  EXPECT_EQ(r.bytes_downloaded, bytes);
  // Nothing but blobs/, refs/ and snapshots/ in the repo folder.
  std::set<std::string> top;
  for (const auto& entry : fs::directory_iterator(repo().dir())) top.insert(entry.path().filename().string());
  EXPECT_EQ(top, (std::set<std::string>{"blobs", "refs", "snapshots"}));
  // HEAD for each file; the safetensors came through the CDN redirect, the rest from resolve/.
  json l = log();
  EXPECT_EQ(count(l, "HEAD", "/resolve/"), n);
  EXPECT_EQ(count(l, "GET", "/cdn/"), lfs_files);
  EXPECT_EQ(count(l, "HEAD", "/cdn/"), 0u);  // HEAD does not follow the redirect to the CDN
  EXPECT_EQ(count(l, "GET", "/resolve/"), n - lfs_files);
  // The pulled model resolves by hub id, with and without the revision.
  ScopedEnv c("HF_HUB_CACHE", cache_.path().string());
  EXPECT_EQ(resolve_model_dir(kRepo), r.snapshot_dir);
  EXPECT_EQ(resolve_model_dir(kRepo + "@" + r.commit), r.snapshot_dir);
}

TEST_F(Pull, SecondPullDownloadsNothing) {
  PullResult first = pull(kRepo, options());
  size_t requests = log().size();
  PullResult second = pull(kRepo, options());
  EXPECT_EQ(second.commit, first.commit);
  EXPECT_EQ(second.bytes_downloaded, 0u);
  for (const PulledFile& f : second.files) EXPECT_FALSE(f.downloaded) << f.name;
  json l = log();
  ASSERT_EQ(l.size(), requests + 1);  // only the revision lookup
  EXPECT_NE(l.back()["path"].get<std::string>().find("/api/models/"), std::string::npos);
}

TEST_F(Pull, ResumesAfterTheConnectionIsCutHalfway) {
  std::vector<PullEvent::Kind> kinds;
  PullOptions o = options("cut-once");
  o.on_event = [&](const PullEvent& e) { kinds.push_back(e.kind); };
  PullResult r = pull(kRepo, o);
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), PullEvent::Kind::Retry), kinds.end());
  json l = log("cut-once");
  ASSERT_EQ(count(l, "GET", "/cdn/"), 3u);  // the first shard cut and resumed, then the second
  uint64_t size = fs::file_size(first_shard());
  std::vector<json> cdn;
  for (const json& e : l)
    if (e["path"].get<std::string>().find("/cdn/") != std::string::npos) cdn.push_back(e);
  EXPECT_EQ(cdn[0]["range"], "");
  EXPECT_EQ(cdn[0]["sent"], size / 2);
  EXPECT_EQ(cdn[1]["range"], "bytes=" + std::to_string(size / 2) + "-");
  EXPECT_EQ(cdn[1]["status"], 206);
  EXPECT_NE(cdn[0]["path"].get<std::string>().find(sha256_of(first_shard())), std::string::npos);
  EXPECT_EQ(cdn[2]["range"], "");
  EXPECT_EQ(sha256_of(r.snapshot_dir / kFirstShard), sha256_of(first_shard()));
}

TEST_F(Pull, ResumesThePartialBlobOfAnEarlierRun) {
  fs::path weights = first_shard();
  std::string sha = sha256_of(weights);
  std::string content = slurp(weights);
  const size_t kept = content.size() / 2;
  write_text_file(repo().incomplete_blob(sha), content.substr(0, kept));
  PullResult r = pull(kRepo, options());
  auto it = std::find_if(r.files.begin(), r.files.end(), [](auto& f) { return f.name == kFirstShard; });
  ASSERT_NE(it, r.files.end());
  EXPECT_EQ(it->resumed_from, kept);
  EXPECT_EQ(it->bytes_downloaded, content.size() - kept);
  json l = log();
  for (const json& e : l) {
    if (e["path"].get<std::string>().find("/cdn/") != std::string::npos &&
        e["path"].get<std::string>().find(sha) != std::string::npos) {
      EXPECT_EQ(e["range"], "bytes=" + std::to_string(kept) + "-");
    }
  }
  EXPECT_EQ(slurp(r.snapshot_dir / kFirstShard), content);
  EXPECT_FALSE(fs::exists(repo().incomplete_blob(sha)));
}

TEST_F(Pull, ServerIgnoringRangeStartsOver) {
  fs::path weights = first_shard();
  std::string sha = sha256_of(weights);
  write_text_file(repo().incomplete_blob(sha), std::string(1000, 'x'));  // not even the right bytes
  PullResult r = pull(kRepo, options("no-range"));
  EXPECT_EQ(sha256_of(r.snapshot_dir / kFirstShard), sha);
}

TEST_F(Pull, WrongSha256IsRejectedAndNothingLandsInTheSnapshot) {
  std::string message;
  EXPECT_EQ(failure_of(kRepo, options("bad-blob"), &message), PullFailure::Checksum);
  EXPECT_NE(message.find("sha256"), std::string::npos) << message;
  EXPECT_NE(message.find(kFirstShard), std::string::npos) << message;
  std::string sha = sha256_of(first_shard());
  EXPECT_FALSE(fs::exists(repo().blob(sha)));
  EXPECT_FALSE(fs::exists(repo().incomplete_blob(sha)));
  EXPECT_FALSE(fs::exists(repo().ref_file("main")));
  for (const auto& entry : fs::recursive_directory_iterator(repo().dir() / "snapshots"))
    EXPECT_NE(entry.path().extension(), ".safetensors") << entry.path();
  ScopedEnv c("HF_HUB_CACHE", cache_.path().string());
  EXPECT_THROW(resolve_model_dir(kRepo), Error);
}

TEST_F(Pull, GatedRepositoryNeedsTheRightToken) {
  std::string message;
  EXPECT_EQ(failure_of(kRepo, options("auth"), &message), PullFailure::Auth);
  EXPECT_NE(message.find("HF_TOKEN"), std::string::npos) << message;
  EXPECT_NE(message.find("401"), std::string::npos) << message;
  PullOptions wrong = options("auth");
  wrong.token = "hf_wrong";
  EXPECT_EQ(failure_of(kRepo, wrong, &message), PullFailure::Auth);
  EXPECT_NE(message.find("403"), std::string::npos) << message;
  PullOptions right = options("auth");
  right.token = "hf_test_token";
  EXPECT_NO_THROW(pull(kRepo, right));
  size_t answered = 0;
  for (const json& e : log("auth")) {
    if (e["status"] != 200 && e["status"] != 302) continue;
    EXPECT_EQ(e["auth"], "Bearer hf_test_token");
    ++answered;
  }
  EXPECT_GT(answered, 9u);
  // HF_TOKEN is used when no token is given.
  TempDir other;
  PullOptions from_env = options("auth");
  from_env.token.reset();
  from_env.cache_root = other.path();
  ScopedEnv t("HF_TOKEN", "hf_test_token");
  EXPECT_NO_THROW(pull(kRepo, from_env));
}

TEST_F(Pull, UnknownRepositoryOrRevisionIsNotFound) {
  std::string message;
  EXPECT_EQ(failure_of("test-org/no-such-model", options(), &message), PullFailure::NotFound);
  EXPECT_NE(message.find("no repository test-org/no-such-model"), std::string::npos) << message;
  EXPECT_EQ(failure_of(kRepo + "@no-such-branch", options(), &message), PullFailure::NotFound);
  EXPECT_NE(message.find("no revision \"no-such-branch\""), std::string::npos) << message;
  PullOptions inc = options();
  inc.include = {"*.bin"};
  EXPECT_EQ(failure_of(kRepo, inc, &message), PullFailure::NotFound);
  EXPECT_FALSE(fs::exists(cache_.path() / "models--test-org--no-such-model" / "snapshots"));
}

TEST_F(Pull, ConnectionRefusedIsANetworkError) {
  int port = closed_port();
  ASSERT_GT(port, 0);
  PullOptions o = options();
  o.endpoint = "http://127.0.0.1:" + std::to_string(port);
  std::string message;
  EXPECT_EQ(failure_of(kRepo, o, &message), PullFailure::Network);
  EXPECT_NE(message.find("cannot reach " + o.endpoint), std::string::npos) << message;
  EXPECT_NE(message.find("HF_HUB_OFFLINE=1"), std::string::npos) << message;
}

TEST_F(Pull, OfflineModeUsesTheCacheAndNeverConnects) {
  ScopedEnv off("HF_HUB_OFFLINE", "1");
  std::string message;
  EXPECT_EQ(failure_of(kRepo, options(), &message), PullFailure::Offline);
  EXPECT_NE(message.find("smolvlm pull " + kRepo), std::string::npos) << message;
  EXPECT_TRUE(log().empty());
  {
    ScopedEnv on("HF_HUB_OFFLINE", std::nullopt);
    pull(kRepo, options());
  }
  size_t requests = log().size();
  PullResult r = pull(kRepo, options());
  EXPECT_TRUE(r.offline);
  EXPECT_EQ(r.bytes_downloaded, 0u);
  EXPECT_EQ(r.files.size(), 11u);  // 8 configs and tokenizer files, the index, 2 shards
  EXPECT_EQ(log().size(), requests);
  ScopedEnv c("HF_HUB_CACHE", cache_.path().string());
  EXPECT_EQ(ensure_model(kRepo, options()), r.snapshot_dir);
  EXPECT_EQ(log().size(), requests);
}

TEST_F(Pull, ShardedCheckpointBringsIndexAndShardsOnly) {
  PullResult r = pull(kShardedRepo, options());
  std::set<std::string> names;
  for (const PulledFile& f : r.files) names.insert(f.name);
  EXPECT_EQ(names, (std::set<std::string>{"config.json", "model.safetensors.index.json",
                                          "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}));
  EXPECT_EQ(fs::file_size(r.snapshot_dir / "model-00002-of-00002.safetensors"), 5000u);
  // Every file counts in the totals, the index too (it is fetched first, to learn the shard names).
  uint64_t bytes = 0;
  for (const PulledFile& f : r.files) {
    EXPECT_TRUE(f.downloaded) << f.name;
    bytes += fs::file_size(r.snapshot_dir / f.name);
  }
  EXPECT_EQ(r.bytes_downloaded, bytes);
  ScopedEnv c("HF_HUB_CACHE", cache_.path().string());
  EXPECT_EQ(resolve_model_dir(kShardedRepo), r.snapshot_dir);
}

TEST_F(Pull, IncludeGlobsPickFiles) {
  PullOptions o = options();
  o.include = {"*.json"};
  PullResult r = pull(kShardedRepo, o);
  EXPECT_EQ(r.files.size(), 2u);
  EXPECT_FALSE(fs::exists(r.snapshot_dir / "model-00001-of-00002.safetensors"));
  o.include = {"README*", "model-0000[2]-*"};
  r = pull(kShardedRepo, o);
  EXPECT_EQ(r.files.size(), 2u);
  EXPECT_TRUE(fs::exists(r.snapshot_dir / "README.md"));
  EXPECT_TRUE(fs::exists(r.snapshot_dir / "model-00002-of-00002.safetensors"));
}

TEST_F(Pull, DefaultModelIsPulledWhenAbsent) {
  ScopedEnv c("HF_HUB_CACHE", cache_.path().string());
  EXPECT_THROW(resolve_model_dir(""), Error);
  fs::path dir = ensure_model("", options());
  EXPECT_EQ(resolve_model_dir(""), dir);
  EXPECT_EQ(dir.parent_path().parent_path(), cache_.path() / "models--HuggingFaceTB--SmolVLM-256M-Instruct");
}

// --- the command line ---------------------------------------------------------------------------

class PullCli : public Pull {
 protected:
  std::string env_prefix(const std::string& knobs = "") {
    return "HF_HUB_CACHE='" + cache_.path().string() + "' HF_ENDPOINT='" +
           hub_server->endpoint(knobs.empty() ? scenario_ : knobs + "+" + scenario_) + "' HF_TOKEN= HF_HOME='" +
           cache_.path().string() + "' ";
  }
  test::CommandResult cli(const std::string& args, const std::string& knobs = "", bool merge = true) {
    return run_cli_env(env_prefix(knobs), args, merge);
  }
};

TEST_F(PullCli, JsonSummaryAndASecondPullDownloadsNothing) {
  auto first = cli("pull " + kRepo + " --json", "", false);
  ASSERT_EQ(first.exit_code, 0) << first.out;
  json j = json::parse(first.out);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["files"].size(), 11u);
  EXPECT_GT(j["bytes_downloaded"].get<uint64_t>(), 16000000u);
  auto second = cli("pull " + kRepo + " --json", "", false);
  ASSERT_EQ(second.exit_code, 0) << second.out;
  EXPECT_EQ(json::parse(second.out)["bytes_downloaded"], 0);
  auto plain = cli("pull " + kRepo);
  EXPECT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_NE(plain.out.find(kFirstShard + ": already in the cache"), std::string::npos) << plain.out;
}

TEST_F(PullCli, PlainProgressLines) {
  auto r = cli("pull " + kRepo);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("10 file(s) to download"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(kFirstShard + ": done"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\r"), std::string::npos) << "no bar redraws when not on a terminal";
}

TEST_F(PullCli, ErrorsHaveDistinctExitCodes) {
  auto auth = cli("pull " + kRepo, "auth");
  EXPECT_EQ(auth.exit_code, 10) << auth.out;
  EXPECT_NE(auth.out.find("needs a token"), std::string::npos) << auth.out;
  auto missing = cli("pull test-org/nope");
  EXPECT_EQ(missing.exit_code, 11) << missing.out;
  EXPECT_NE(missing.out.find("no repository test-org/nope"), std::string::npos) << missing.out;
  std::string nowhere = "http://127.0.0.1:" + std::to_string(closed_port());
  auto refused = run_cli_env("HF_HUB_CACHE='" + cache_.path().string() + "' ", "pull " + kRepo + " --endpoint " + nowhere, true);
  EXPECT_EQ(refused.exit_code, 12) << refused.out;
  EXPECT_NE(refused.out.find("cannot reach " + nowhere), std::string::npos) << refused.out;
  auto corrupt = cli("pull " + kRepo, "bad-blob");
  EXPECT_EQ(corrupt.exit_code, 14) << corrupt.out;
  auto offline = run_cli_env(env_prefix() + "HF_HUB_OFFLINE=1 ", "pull " + kRepo, true);
  EXPECT_EQ(offline.exit_code, 15) << offline.out;
  EXPECT_NE(offline.out.find("smolvlm pull " + kRepo), std::string::npos) << offline.out;
  auto bad_id = cli("pull not-an-id");
  EXPECT_EQ(bad_id.exit_code, 3) << bad_id.out;
}

TEST_F(PullCli, DiskFullIsReportedAndTheDownloadResumesLater) {
  // A 4 MB file size limit (SIGXFSZ ignored, so writes fail with EFBIG) stands for a full disk.
  TempDir other;
  std::string prefix = "HF_HUB_CACHE='" + other.path().string() + "' HF_ENDPOINT='" + hub_server->endpoint(scenario_) + "' ";
  auto r = run_cli_env("trap '' XFSZ; ulimit -f 4096; " + prefix, "pull " + kRepo, true);
  EXPECT_EQ(r.exit_code, 13) << r.out;
  EXPECT_NE(r.out.find("free some space"), std::string::npos) << r.out;
  std::string sha = sha256_of(first_shard());
  RepoCache repo2(other.path(), kRepo);
  EXPECT_FALSE(fs::exists(repo2.blob(sha)));
  auto again = run_cli_env(prefix, "pull " + kRepo + " --json", false);
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_EQ(sha256_of(repo2.dir() / "blobs" / sha), sha);
}

TEST_F(PullCli, PulledModelWorksWithOtherCommands) {
  ASSERT_EQ(cli("pull " + kRepo + " --json", "", false).exit_code, 0);
  auto info = cli("info --model " + kRepo);
  EXPECT_EQ(info.exit_code, 0) << info.out;
  // Captioning through the hub id gives the reference's greedy tokens for this case.
  json golden = json::parse(slurp(test::data_dir() / "goldens" / "vlm_jpeg" / "case.json"));
  ASSERT_EQ(golden["model"], "models/smolvlm-tiny");
  ASSERT_EQ(golden["images"][0], "images/model/photo1.jpg");
  auto caption = run_cli_env("HF_HUB_CACHE='" + cache_.path().string() + "' HF_HUB_OFFLINE=1 ",
                             "caption '" + (test::data_dir() / "image" / "model_images" / "photo1.jpg").string() +
                                 "' --model " + kRepo + " --prompt '" + golden["prompt"].get<std::string>() +
                                 "' --max-new-tokens " + std::to_string(golden["max_new_tokens"].get<int>()) + " --json",
                             false);
  ASSERT_EQ(caption.exit_code, 0) << caption.out;
  EXPECT_EQ(json::parse(caption.out)["token_ids"], golden["generated_ids"]) << caption.out;
  auto missing = run_cli_env("HF_HUB_CACHE='" + cache_.path().string() + "' HF_HUB_OFFLINE=1 ",
                                   "info --model test-org/other", true);
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.out.find("smolvlm pull test-org/other"), std::string::npos) << missing.out;
}

}  // namespace

}  // namespace smolvlm::hub
