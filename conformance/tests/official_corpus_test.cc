// SHA-256 and the official-corpus tripwire.
#include "mm/conformance/official/official_corpus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "mm/conformance/official/sha256.h"
#include "onnx_fixtures.h"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;

TEST(Sha256Test, KnownVectors) {
  // FIPS 180-2 examples and the empty message.
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, FileDigestEqualsBufferDigest) {
  TempDir dir;
  // Larger than the 64 KiB read buffer, so several updates are needed.
  const std::string bytes(200000, 'x');
  testing::WriteBytes(dir.path() / "f", bytes);
  auto digest = Sha256HexOfFile(dir.path() / "f");
  ASSERT_TRUE(digest.ok()) << digest.status();
  EXPECT_EQ(*digest, Sha256Hex(bytes));
  EXPECT_FALSE(Sha256HexOfFile(dir.path() / "absent").ok());
}

TEST(OfficialCasesTest, SevenCasesOfFourFilesEach) {
  std::vector<std::string> names;
  for (const OfficialCase& c : OfficialCases()) {
    names.push_back(c.name);
    EXPECT_EQ(c.files.size(), 4u) << c.name;
  }
  EXPECT_THAT(names, ElementsAre("test_matmul_1d_1d", "test_matmul_1d_3d", "test_matmul_2d",
                                 "test_matmul_3d", "test_matmul_4d", "test_matmul_4d_1d",
                                 "test_matmul_bcast"));
  EXPECT_TRUE(IsOfficialCase("test_matmul_bcast"));
  EXPECT_FALSE(IsOfficialCase("test_cc_matmul_2d"));
}

TEST(ParseSha256SumsTest, RefusesMalformedLines) {
  auto bad = ParseSha256Sums("not a checksum  ./x/y\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("line 1"));
  EXPECT_FALSE(ParseSha256Sums(std::string(64, 'a') + "  ./no_slash\n").ok());
  EXPECT_FALSE(ParseSha256Sums("").ok());
}

// A private "official corpus" of one case written here, so the tripwire's logic is tested without
// the real data.
struct Corpus {
  TempDir root;
  std::vector<OfficialCase> official;
  fs::path dir;
  Corpus() {
    dir = testing::WriteFloatCase(root.path(), "test_fake_official", {2, 3}, {3, 4});
    OfficialCase c{"test_fake_official", {}};
    for (const char* file : {"model.onnx", "test_data_set_0/input_0.pb",
                             "test_data_set_0/input_1.pb", "test_data_set_0/output_0.pb"}) {
      c.files.push_back({file, Sha256HexOfFile(dir / file).value()});
    }
    official.push_back(c);
  }
  OfficialStatus Check() const {
    return CheckOfficialCorpus({{root.path(), "--data-dir"}}, official).cases.at(0);
  }
};

TEST(CheckOfficialCorpusTest, IntactWhenEveryByteMatches) {
  Corpus corpus;
  OfficialStatus s = corpus.Check();
  EXPECT_EQ(s.state, OfficialStatus::State::kIntact);
  EXPECT_EQ(s.dir, corpus.dir);
}

TEST(CheckOfficialCorpusTest, MissingWhenNoRootHoldsIt) {
  Corpus corpus;
  TempDir empty;
  auto report = CheckOfficialCorpus({{empty.path(), "--data-dir"}}, corpus.official);
  EXPECT_EQ(report.cases.at(0).state, OfficialStatus::State::kMissing);
  EXPECT_FALSE(report.complete());
}

TEST(CheckOfficialCorpusTest, AlteredWhenABytesChanges) {
  Corpus corpus;
  std::string bytes;
  {
    std::ifstream in(corpus.dir / "test_data_set_0/output_0.pb", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes.back() ^= 1;
  testing::WriteBytes(corpus.dir / "test_data_set_0/output_0.pb", bytes);
  OfficialStatus s = corpus.Check();
  EXPECT_EQ(s.state, OfficialStatus::State::kAltered);
  EXPECT_THAT(s.problems, ElementsAre(HasSubstr("test_data_set_0/output_0.pb: SHA-256")));
}

TEST(CheckOfficialCorpusTest, AlteredWhenAFileIsMissingOrAdded) {
  Corpus corpus;
  fs::remove(corpus.dir / "test_data_set_0/input_1.pb");
  fs::copy(corpus.dir / "test_data_set_0", corpus.dir / "test_data_set_1");
  OfficialStatus s = corpus.Check();
  EXPECT_EQ(s.state, OfficialStatus::State::kAltered);
  EXPECT_THAT(s.problems, ::testing::Contains(HasSubstr("test_data_set_0/input_1.pb: missing")));
  EXPECT_THAT(s.problems,
              ::testing::Contains(HasSubstr("test_data_set_1/input_0.pb: not an official file")));
}

// A run that lacks official cases says how many and how to get them (Debian's package has 3 of the
// 7); cases that are present, intact or altered, are not missing: fetching would not replace them.
TEST(MissingOfficialHintTest, NamesTheFetchScriptOnlyWhenSomeAreMissing) {
  OfficialReport report;
  for (const OfficialCase& c : OfficialCases()) {
    report.cases.push_back({c.name, OfficialStatus::State::kIntact, {}, {}});
  }
  EXPECT_EQ(MissingOfficialHint(report), "");
  report.cases.at(0).state = OfficialStatus::State::kAltered;
  EXPECT_EQ(MissingOfficialHint(report), "");
  report.cases.at(1).state = OfficialStatus::State::kMissing;
  report.cases.at(2).state = OfficialStatus::State::kMissing;
  const std::string hint = MissingOfficialHint(report);
  EXPECT_THAT(hint, HasSubstr("2 of the 7 official ONNX MatMul node tests are missing"));
  EXPECT_THAT(hint, HasSubstr("scripts/fetch-onnx-testdata.sh"));
  EXPECT_THAT(hint, HasSubstr("MM_ONNX_DATA"));
}

// The real checksums against the real data, where this machine has it: MM_ONNX_DATA (CI sets it
// to the 7 official cases) or Debian's libonnx-testdata (2d, 3d, 4d, byte-identical).
TEST(CheckOfficialCorpusTest, RealDataMatchesTheEmbeddedChecksums) {
  const OfficialReport report = CheckOfficialCorpus(testing::OfficialDataRootsForTests());
  int found = 0;
  for (const OfficialStatus& s : report.cases) {
    if (s.state == OfficialStatus::State::kMissing) continue;
    ++found;
    EXPECT_EQ(s.state, OfficialStatus::State::kIntact)
        << s.name << " at " << s.dir << ": " << ::testing::PrintToString(s.problems);
  }
  if (found == 0) GTEST_SKIP() << "no official data on this machine";
}

}  // namespace
}  // namespace mm::conformance
