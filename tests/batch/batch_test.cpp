// The batch job code under the unit (and sanitizer) builds: the shard hash is FNV-1a and the same
// everywhere, bad job lines are bad-input errors naming the key, and a run over the tiny model writes
// one line per input line, cuts off a torn last line and resumes without repeating an id.
#include <gtest/gtest.h>

#include <smolvlm.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <unistd.h>

#include "cli/batch.h"

namespace smolvlm::cli {
namespace {

namespace fs = std::filesystem;

TEST(BatchShard, IsFnv1aOfTheKey) {
  // FNV-1a 64 computed independently (Python): the shard of an id never depends on the machine.
  EXPECT_EQ(job_shard("s:a", 1000), 173);
  EXPECT_EQ(job_shard("n:7", 1000), 120);
  EXPECT_EQ(job_shard("s:job-000", 3), 1);
  EXPECT_EQ(job_shard("line:3", 3), 0);
  EXPECT_EQ(*job_key(nlohmann::json("a")), "s:a");
  EXPECT_EQ(*job_key(nlohmann::json(7)), "n:7");
  EXPECT_FALSE(job_key(nlohmann::json(1.5)));
  EXPECT_FALSE(job_key(nlohmann::json(nullptr)));
}

TEST(BatchParse, BadJobsNameTheKey) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"id": 1, "prompt": "x", "max_tokens": 3})", "unknown key \"max_tokens\""},
      {R"({"id": 1, "prompt": 5})", "\"prompt\" must be a string"},
      {R"({"id": 1, "images": "a.jpg"})", "\"images\" must be an array of strings"},
      {R"({"id": 1, "prompt": "x", "max_new_tokens": "8"})", "\"max_new_tokens\" must be an integer"},
      {R"({"id": 1, "prompt": "x", "top_k": 99999999999})", "\"top_k\" must be an integer in range"},
      {R"({"id": 1, "prompt": "x", "seed": -1})", "\"seed\" must be an integer in range"},
      {R"({"id": 1, "prompt": "x", "split": 1})", "\"split\" must be true or false"},
      {R"({"id": 1, "prompt": "x", "stop_ids": [4294967296]})", "\"stop_ids\" must be an array of token ids"},
      {R"({"id": 1, "prompt": "x", "messages": []})", "not both"},
      {R"({"id": 1})", "a job needs"},
      {R"({"id": 1, "messages": [{"role": "robot"}]})", "role"},
      {R"({"id": 1, "messages": []})", "\"messages\" is empty"},
  };
  for (const auto& [line, needle] : cases) {
    Job job;
    try {
      parse_job(nlohmann::json::parse(line), "jobs.jsonl:4", JobDefaults{}, job);
      ADD_FAILURE() << line << " was accepted";
    } catch (const api::Error& e) {
      EXPECT_EQ(e.status(), SMOLVLM_ERR_BAD_INPUT) << line;
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << line << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("jobs.jsonl:4"), std::string::npos) << e.what();
    }
  }
}

TEST(BatchParse, OptionsAndDefaults) {
  JobDefaults d;
  d.max_new_tokens = 9;
  d.sampling.temperature = 0.5f;
  Job job;
  parse_job(nlohmann::json::parse(R"({"id": "x", "images": ["a.jpg", "b.png"], "top_k": 4, "split": false,
                                      "stop": ["\n"], "stop_ids": [2]})"),
            "j:1", d, job);
  const smolvlm_request& r = job.request;
  EXPECT_EQ(r.max_new_tokens, 9);
  EXPECT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_EQ(r.sampling.top_k, 4);
  EXPECT_EQ(r.split, 0);
  ASSERT_EQ(r.n_stop, 1u);
  EXPECT_STREQ(r.stop[0], "\n");
  ASSERT_EQ(r.n_stop_ids, 1u);
  ASSERT_EQ(r.n_messages, 1u);
  ASSERT_EQ(r.messages[0].n_parts, 3u);  // two images, then the default prompt
  EXPECT_STREQ(r.messages[0].parts[1].image.path, "b.png");
  EXPECT_STREQ(r.messages[0].parts[2].text, "Describe this image.");
}

std::vector<std::string> lines_of(const fs::path& p) {
  std::ifstream f(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(f, l);) out.push_back(l);
  return out;
}

TEST(BatchRun, OneLinePerJobTornLineCutResumeOnce) {
  const fs::path dir = fs::temp_directory_path() / ("smolvlm-batch-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string image = std::string(SMOLVLM_TEST_DATA) + "/../../examples/flower.jpg";
  {
    std::ofstream in(dir / "jobs.jsonl");
    for (int i = 0; i < 6; ++i)
      in << R"({"id": )" << i << R"(, "images": [")" << image << R"("], "max_new_tokens": 2, "split": false})" << "\n";
    in << "oops\n\n" << R"({"id": "bad", "images": ["/nonexistent.png"]})" << "\n";
  }
  const api::Model model = api::Model::load(std::string(SMOLVLM_TEST_DATA) + "/models/smolvlm-tiny-tied");
  BatchOptions o;
  o.input = (dir / "jobs.jsonl").string();
  o.output = (dir / "out.jsonl").string();
  BatchSummary s = run_batch(model, o);
  EXPECT_EQ(s.lines, 8);
  EXPECT_EQ(s.done, 8);
  EXPECT_EQ(s.errors, 2);
  const auto full = lines_of(o.output);
  ASSERT_EQ(full.size(), 8u);
  EXPECT_NE(full[6].find(R"("line":7)"), std::string::npos) << full[6];
  EXPECT_NE(full[7].find(R"("code":"io")"), std::string::npos) << full[7];

  // without resume an output with results is refused; a torn last line is cut off, then redone
  EXPECT_THROW(run_batch(model, o), api::Error);
  {
    std::ofstream out(o.output, std::ios::trunc);
    for (int i = 0; i < 3; ++i) out << full[i] << "\n";
    out << full[3].substr(0, full[3].size() / 2);
  }
  o.resume = true;
  s = run_batch(model, o);
  EXPECT_EQ(s.skipped, 3);
  EXPECT_EQ(s.done, 5);
  const auto resumed = lines_of(o.output);
  ASSERT_EQ(resumed.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    auto a = nlohmann::json::parse(resumed[i]), b = nlohmann::json::parse(full[i]);
    a.erase("timings");
    b.erase("timings");
    EXPECT_EQ(a, b) << i;
  }
  // shards cover the lines once
  std::multiset<std::string> seen;
  for (int i = 0; i < 3; ++i) {
    BatchOptions so = o;
    so.resume = false;
    so.output = (dir / ("shard" + std::to_string(i) + ".jsonl")).string();
    so.shard_index = i;
    so.shard_count = 3;
    run_batch(model, so);
    for (const auto& l : lines_of(so.output)) seen.insert(l.substr(0, l.find(',')));
  }
  EXPECT_EQ(seen.size(), 8u);
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 8u);
  BatchOptions bad = o;
  bad.shard_index = 3;
  bad.shard_count = 3;
  EXPECT_THROW(run_batch(model, bad), api::Error);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace smolvlm::cli
