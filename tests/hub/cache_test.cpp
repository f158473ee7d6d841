// The HuggingFace cache without the network: ids, cache location, layout, resolution by hub id.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "core/error.h"
#include "hub/cache.h"
#include "hub/http.h"
#include "hub/model_ref.h"
#include "hub_test_util.h"
#include "test_util.h"

namespace smolvlm::hub {
namespace {

namespace fs = std::filesystem;
using test::ScopedEnv;
using test::TempDir;

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";

using test::write_text_file;

TEST(HubId, ParsesOrgNameAndRevision) {
  auto id = parse_hub_id("HuggingFaceTB/SmolVLM-256M-Instruct");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->repo, "HuggingFaceTB/SmolVLM-256M-Instruct");
  EXPECT_EQ(id->revision, "main");
  EXPECT_EQ(id->display(), "HuggingFaceTB/SmolVLM-256M-Instruct");
  id = parse_hub_id("org/name@v1.0");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->repo, "org/name");
  EXPECT_EQ(id->revision, "v1.0");
  EXPECT_EQ(id->display(), "org/name@v1.0");
  id = parse_hub_id("org/name@refs/pr/1");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->revision, "refs/pr/1");
}

TEST(HubId, RejectsWhatIsNotAnId) {
  for (const char* bad : {"", "name", "/abs/path", "org/", "/name", "a/b/c", "org/na--me", "org/na..me", "./x",
                          "../x", "org/-name", "org/name.", "org/name@", "org/name@../x", "org/name@a//b",
                          "org/name@/x", "org/na me", "org/name@a b", "tests/data/models/smolvlm-tiny"})
    EXPECT_FALSE(parse_hub_id(bad)) << bad;
}

TEST(HubId, CommitHashIsFortyLowerHex) {
  EXPECT_TRUE(is_commit_hash(kCommit));
  EXPECT_FALSE(is_commit_hash("main"));
  EXPECT_FALSE(is_commit_hash(kCommit.substr(1)));
  EXPECT_FALSE(is_commit_hash("0123456789ABCDEF0123456789abcdef01234567"));
}

TEST(CacheDir, FollowsHuggingfaceHubPrecedence) {
  ScopedEnv a("HF_HUB_CACHE", std::nullopt), b("HUGGINGFACE_HUB_CACHE", std::nullopt), c("HF_HOME", std::nullopt),
      d("XDG_CACHE_HOME", std::nullopt), e("HOME", "/home/someone");
  EXPECT_EQ(cache_dir(), fs::path("/home/someone/.cache/huggingface/hub"));
  {
    ScopedEnv x("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(cache_dir(), fs::path("/xdg/huggingface/hub"));
    ScopedEnv h("HF_HOME", "~/hfhome");
    EXPECT_EQ(cache_dir(), fs::path("/home/someone/hfhome/hub"));
    ScopedEnv l("HUGGINGFACE_HUB_CACHE", "/legacy");
    EXPECT_EQ(cache_dir(), fs::path("/legacy"));
    ScopedEnv n("HF_HUB_CACHE", "/new");
    EXPECT_EQ(cache_dir(), fs::path("/new"));
  }
}

TEST(CacheDir, OfflineModeAcceptsHuggingfaceHubTrueValues) {
  ScopedEnv t("TRANSFORMERS_OFFLINE", std::nullopt);
  for (const char* yes : {"1", "ON", "yes", "True"}) {
    ScopedEnv o("HF_HUB_OFFLINE", yes);
    EXPECT_TRUE(offline_mode()) << yes;
  }
  for (const char* no : {"0", "off", "", "2"}) {
    ScopedEnv o("HF_HUB_OFFLINE", no);
    EXPECT_FALSE(offline_mode()) << no;
  }
  ScopedEnv o("HF_HUB_OFFLINE", std::nullopt);
  EXPECT_FALSE(offline_mode());
  ScopedEnv tr("TRANSFORMERS_OFFLINE", "1");
  EXPECT_TRUE(offline_mode());
}

TEST(CacheDir, EndpointAndTokenFromEnvironment) {
  {
    ScopedEnv e("HF_ENDPOINT", std::nullopt);
    EXPECT_EQ(default_endpoint(), "https://huggingface.co");
  }
  ScopedEnv e("HF_ENDPOINT", "http://127.0.0.1:1234/mirror//");
  EXPECT_EQ(default_endpoint(), "http://127.0.0.1:1234/mirror");

  TempDir home;
  ScopedEnv h("HF_HOME", home.path().string()), p("HF_TOKEN_PATH", std::nullopt);
  {
    ScopedEnv t("HF_TOKEN", std::nullopt);
    EXPECT_EQ(default_token(), "");
    write_text_file(home.path() / "token", "hf_from_file\n");
    EXPECT_EQ(default_token(), "hf_from_file");
  }
  ScopedEnv t("HF_TOKEN", "hf_from_env");
  EXPECT_EQ(default_token(), "hf_from_env");
}

TEST(RepoCache, PathsMatchHuggingfaceHubLayout) {
  RepoCache repo("/c", "HuggingFaceTB/SmolVLM-256M-Instruct");
  EXPECT_EQ(repo.dir(), fs::path("/c/models--HuggingFaceTB--SmolVLM-256M-Instruct"));
  EXPECT_EQ(repo.blob("abc"), fs::path("/c/models--HuggingFaceTB--SmolVLM-256M-Instruct/blobs/abc"));
  EXPECT_EQ(repo.incomplete_blob("abc"),
            fs::path("/c/models--HuggingFaceTB--SmolVLM-256M-Instruct/blobs/abc.incomplete"));
  EXPECT_EQ(repo.snapshot_file(kCommit, "config.json"),
            fs::path("/c/models--HuggingFaceTB--SmolVLM-256M-Instruct/snapshots/" + kCommit + "/config.json"));
  EXPECT_EQ(repo.ref_file("main"), fs::path("/c/models--HuggingFaceTB--SmolVLM-256M-Instruct/refs/main"));
  EXPECT_EQ(repo.lock_file("abc"), fs::path("/c/.locks/models--HuggingFaceTB--SmolVLM-256M-Instruct/abc.lock"));
}

TEST(RepoCache, LinksAreRelativeAndRefsHoldTheCommit) {
  TempDir tmp;
  RepoCache repo(tmp.path(), "org/name");
  write_text_file(repo.blob("e1"), "hello");
  write_text_file(repo.blob("e2"), "nested");
  repo.link_snapshot_file(kCommit, "config.json", "e1");
  repo.link_snapshot_file(kCommit, "sub/dir/file.json", "e2");
  EXPECT_EQ(fs::read_symlink(repo.snapshot_file(kCommit, "config.json")), fs::path("../../blobs/e1"));
  EXPECT_EQ(fs::read_symlink(repo.snapshot_file(kCommit, "sub/dir/file.json")), fs::path("../../../../blobs/e2"));
  std::ifstream in(repo.snapshot_file(kCommit, "sub/dir/file.json"));
  std::string text;
  in >> text;
  EXPECT_EQ(text, "nested");
  repo.link_snapshot_file(kCommit, "config.json", "e2");  // relinking replaces
  EXPECT_EQ(fs::read_symlink(repo.snapshot_file(kCommit, "config.json")), fs::path("../../blobs/e2"));

  EXPECT_FALSE(repo.commit_for("main"));
  repo.write_ref("main", kCommit);
  EXPECT_EQ(repo.commit_for("main"), kCommit);
  std::ifstream ref(repo.ref_file("main"));
  std::string stored((std::istreambuf_iterator<char>(ref)), std::istreambuf_iterator<char>());
  EXPECT_EQ(stored, kCommit);  // no newline, as huggingface_hub writes it
  repo.write_ref(kCommit, kCommit);
  EXPECT_FALSE(fs::exists(repo.ref_file(kCommit)));  // a commit needs no ref
  EXPECT_EQ(repo.commit_for(kCommit), kCommit);
  write_text_file(repo.ref_file("broken"), "not a commit");
  EXPECT_THROW(repo.commit_for("broken"), Error);
}

// A cache laid out by hand, as huggingface_hub would leave it.
void make_cached_model(const fs::path& root, const std::string& repo_id, bool with_weights) {
  RepoCache repo(root, repo_id);
  write_text_file(repo.blob("cfg"), "{}");
  repo.link_snapshot_file(kCommit, "config.json", "cfg");
  if (with_weights) {
    write_text_file(repo.blob("w"), "weights");
    repo.link_snapshot_file(kCommit, "model.safetensors", "w");
  }
  repo.write_ref("main", kCommit);
}

TEST(ResolveModelDir, FindsHubIdsInTheCache) {
  TempDir tmp;
  ScopedEnv c("HF_HUB_CACHE", tmp.path().string());
  make_cached_model(tmp.path(), "org/name", true);
  fs::path snapshot = RepoCache(tmp.path(), "org/name").snapshot_dir(kCommit);
  EXPECT_EQ(resolve_model_dir("org/name"), snapshot);
  EXPECT_EQ(resolve_model_dir("org/name@main"), snapshot);
  EXPECT_EQ(resolve_model_dir("org/name@" + kCommit), snapshot);
  try {
    resolve_model_dir("org/name@v2");
    FAIL() << "unknown revision resolved";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("smolvlm pull org/name@v2"), std::string::npos) << e.what();
  }
}

TEST(ResolveModelDir, IncompleteSnapshotIsNotAModel) {
  TempDir tmp;
  ScopedEnv c("HF_HUB_CACHE", tmp.path().string());
  make_cached_model(tmp.path(), "org/name", false);
  EXPECT_THROW(resolve_model_dir("org/name"), Error);
  // A dangling link (blob deleted) is not a file either.
  make_cached_model(tmp.path(), "org/name", true);
  fs::remove(RepoCache(tmp.path(), "org/name").blob("w"));
  EXPECT_THROW(resolve_model_dir("org/name"), Error);
}

TEST(ResolveModelDir, MissingDefaultModelNamesThePullCommand) {
  TempDir tmp;
  ScopedEnv c("HF_HUB_CACHE", tmp.path().string());
  try {
    resolve_model_dir("");
    FAIL() << "empty cache resolved the default model";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(std::string("download it with: smolvlm pull ") + kDefaultModelId), std::string::npos) << m;
    EXPECT_NE(m.find(tmp.path().string()), std::string::npos) << m;
  }
}

TEST(ResolveModelDir, LocalFoldersWinAndFilesAreRefused) {
  fs::path tiny = test::data_dir() / "models" / "smolvlm-tiny";
  EXPECT_EQ(resolve_model_dir(tiny.string()), tiny);
  EXPECT_THROW(resolve_model_dir((tiny / "config.json").string()), Error);
  EXPECT_THROW(resolve_model_dir("no/such/folder/here"), Error);
}

TEST(Http, EscapesAndResolvesLocations) {
  EXPECT_EQ(url_escape("refs/pr/1", false), "refs%2Fpr%2F1");
  EXPECT_EQ(url_escape("sub dir/a+b.json", true), "sub%20dir/a%2Bb.json");
  EXPECT_EQ(resolve_location("http://h:1/a/b?x=1", "http://cdn/x"), "http://cdn/x");
  EXPECT_EQ(resolve_location("http://h:1/a/b?x=1", "/c/d"), "http://h:1/c/d");
  EXPECT_EQ(resolve_location("http://h:1/a/b?x=1", "c"), "http://h:1/a/c");
}

}  // namespace
}  // namespace smolvlm::hub
