// Builds the images (images/build-images.sh, which runs images/assemble.py), the five Linux
// platforms (amd64, arm64, arm/v7, ppc64le, s390x) joined in one OCI image index each, and reads
// each archive as a runtime or a registry would: what the index says, each platform's image
// config (its labels name the build its binary says it is), what each image holds (the binary of
// its architecture, the licences and third-party notices, the SBOM, the files scanners read) and
// each platform's attestations (SBOM, provenance, VEX). Then it runs the registrar inside its
// (amd64) image with buildah, as a container runtime would: --version, and a real registration
// round trip with the sample driver's socket mounted in. Needs root and buildah
// (test/install-deps.sh installs it); runs outside Bazel's sandbox.
#include <elf.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kubeletclient/util/sha256.h"
#include "nlohmann/json.hpp"
#include "test/util/elf.h"
#include "test/util/poll.h"
#include "test/util/subprocess.h"
#include "test/util/temp_dir.h"

namespace ndr {
namespace {

using ::ndr::kubelet::Sha256Hex;
using ::ndr::testing::PollUntil;
using ::ndr::testing::ReadElf;
using ::ndr::testing::ReadFile;
using ::ndr::testing::RpcDeadline;
using ::ndr::testing::Runfile;
using ::ndr::testing::Subprocess;
using ::ndr::testing::TempDir;
using ::testing::HasSubstr;
using json = nlohmann::json;

// Where the images built here say their source is (build-images.sh --source-url): a checkout.
constexpr char kSource[] = "file:///src/csi-node-driver-registrar";

// The platforms of the Go registrar's image index beside amd64, each with the directory of its
// cross build (toolchain/cross) and the ELF machine of its binaries.
struct CrossPlatform {
  const char* platform;  // OCI architecture[/variant], as build-images.sh takes it
  const char* build;     // toolchain/cross/<build>_binaries
  int machine;
};
constexpr CrossPlatform kEveryCrossPlatform[] = {
    {"arm64", "arm64", EM_AARCH64},
    {"arm/v7", "armv7", EM_ARM},
    {"ppc64le", "ppc64le", EM_PPC64},
    {"s390x", "s390x", EM_S390},
};

// The cross builds this machine could not make (NDR_CROSS_MISSING: toolchain/cross/sysroots.bzl,
// comma-separated), left out of the images here; EveryPlatformIsBuiltHere reports them skipped.
std::set<std::string> MissingBuilds() {
  std::set<std::string> missing;
  const char* list = getenv("NDR_CROSS_MISSING");
  for (absl::string_view name : absl::StrSplit(list == nullptr ? "" : list, ',', absl::SkipEmpty())) {
    missing.insert(std::string(name));
  }
  return missing;
}

const std::vector<CrossPlatform>& kCrossPlatforms = *[] {
  auto* built = new std::vector<CrossPlatform>;
  const std::set<std::string> missing = MissingBuilds();
  for (const CrossPlatform& cross : kEveryCrossPlatform) {
    if (missing.count(cross.build) == 0) built->push_back(cross);
  }
  return built;
}();

// The process in `group` whose command name is `comm` (a name is at most 15 characters), or 0.
pid_t FindInGroup(pid_t group, const std::string& comm) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &pid)) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    std::string state, ppid, pgid;
    rest >> state >> ppid >> pgid;
    if (stat.substr(open + 1, close - open - 1) == comm && pgid == std::to_string(group)) {
      return pid;
    }
  }
  return 0;
}

bool IsStatic(const std::string& path) { return !ReadElf(path).dynamic; }

// The digest of an in-toto statement's one subject, as "sha256:<hex>".
std::string SubjectDigest(const json& statement) {
  const json subjects = statement.value("subject", json::array());
  if (subjects.size() < 1 || !subjects[0].is_object()) return "";
  return "sha256:" + subjects[0].value("digest", json::object()).value("sha256", "");
}

// One architecture's image in an OCI archive, as a registry or `ctr images import` reads it.
struct PlatformImage {
  std::string digest;                                          // of its manifest
  std::string architecture, variant, os;                       // the index entry's platform
  std::string config_architecture, config_variant, config_os;  // the image's own config
  json labels;                                                 // the config's Labels
  std::string created;                                         // the config's created
  int64_t layer_bytes = 0;                     // compressed, as a registry stores them
  int binary_machine = -1;                     // ELF e_machine of `binary` in the layers
  std::string binary_sha256;                   // of `binary` in the layers
  std::string root;                            // where the layers were unpacked
  std::string sbom_in_image;                   // /sbom/<binary>.spdx.json in the layers
  // The index's attestation manifest for this image: each layer's descriptor and the in-toto
  // statement it holds, by the predicate type the layer is annotated with.
  std::map<std::string, std::pair<json, json>> attestation;
  int attestations = 0;  // how many attestation manifests name this image
};

std::string PlatformName(const PlatformImage& image) {
  return image.variant.empty() ? image.architecture : image.architecture + "/" + image.variant;
}

// Unpacks `archive` into `dir` and reads every platform of the image index it holds (index.json
// names the index; the index names one manifest per platform), unpacking each image's layers to
// find `binary`. Fails the test, and returns what it has, on anything malformed.
std::vector<PlatformImage> ReadIndex(const std::string& archive, const std::string& dir,
                                     const std::string& binary) {
  std::vector<PlatformImage> images;
  std::filesystem::create_directories(dir);
  Subprocess untar({"/bin/tar", "-xf", archive, "-C", dir}, dir + ".log");
  EXPECT_EQ(untar.Wait(), 0) << untar.Describe();
  auto parse = [&](const std::string& path) {
    std::string contents;
    ReadFile(path, &contents);
    return json::parse(contents, nullptr, /*allow_exceptions=*/false);
  };
  // The archive's JSON is read without trusting its shape: a missing member is null.
  auto member = [](const json& object, const char* key) {
    return object.is_object() && object.contains(key) ? object[key] : json();
  };
  auto text = [&](const json& object, const char* key) {
    const json value = member(object, key);
    return value.is_string() ? value.get<std::string>() : std::string();
  };
  // A descriptor's blob file. The digest comes from the archive: it must be sha256:<64 hex> before
  // it becomes a path.
  auto blob = [&](const json& descriptor) {
    const std::string digest = text(descriptor, "digest");
    const bool valid = absl::StartsWith(digest, "sha256:") && digest.size() == 7 + 64 &&
                       digest.find_first_not_of("0123456789abcdef", 7) == std::string::npos;
    EXPECT_TRUE(valid) << "bad digest in " << descriptor.dump();
    return valid ? absl::StrCat(dir, "/blobs/sha256/", digest.substr(7)) : dir + "/invalid";
  };
  const json top = parse(dir + "/index.json");
  const json indexes = member(top, "manifests");
  if (!indexes.is_array() || indexes.size() != 1) {
    ADD_FAILURE() << "index.json should name one image index: " << top.dump();
    return images;
  }
  EXPECT_EQ(text(indexes[0], "mediaType"), "application/vnd.oci.image.index.v1+json");
  const json entries = member(parse(blob(indexes[0])), "manifests");
  // BuildKit's attestation manifests, by the digest of the image they are about.
  std::multimap<std::string, json> attestations;
  for (const json& entry : entries.is_array() ? entries : json::array()) {
    const json annotations = member(entry, "annotations");
    if (text(annotations, "vnd.docker.reference.type") == "attestation-manifest") {
      EXPECT_EQ(text(member(entry, "platform"), "architecture"), "unknown") << entry.dump();
      attestations.emplace(text(annotations, "vnd.docker.reference.digest"), entry);
    }
  }
  for (const json& entry : entries.is_array() ? entries : json::array()) {
    if (text(member(entry, "annotations"), "vnd.docker.reference.type") == "attestation-manifest") {
      continue;
    }
    PlatformImage image;
    const std::string digest = text(entry, "digest");
    image.digest = digest;
    image.attestations = static_cast<int>(attestations.count(digest));
    if (auto found = attestations.find(digest); found != attestations.end()) {
      const json layers = member(parse(blob(found->second)), "layers");
      for (const json& layer : layers.is_array() ? layers : json::array()) {
        image.attestation[text(member(layer, "annotations"), "in-toto.io/predicate-type")] = {
            layer, parse(blob(layer))};
      }
    }
    image.architecture = text(member(entry, "platform"), "architecture");
    image.variant = text(member(entry, "platform"), "variant");
    image.os = text(member(entry, "platform"), "os");
    const json manifest = parse(blob(entry));
    const json config = parse(blob(member(manifest, "config")));
    image.config_architecture = text(config, "architecture");
    image.config_variant = text(config, "variant");
    image.config_os = text(config, "os");
    image.labels = member(member(config, "config"), "Labels");
    image.created = text(config, "created");
    // The architecture and variant name a directory: letters and digits only.
    constexpr char kPlain[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    if (image.architecture.empty() ||
        image.architecture.find_first_not_of(kPlain) != std::string::npos ||
        image.variant.find_first_not_of(kPlain) != std::string::npos) {
      ADD_FAILURE() << "bad architecture in " << entry.dump();
      continue;
    }
    const std::string root = absl::StrCat(dir, "/rootfs-", image.architecture, image.variant);
    image.root = root;
    std::filesystem::create_directories(root);
    const json layers = member(manifest, "layers");
    for (const json& layer : layers.is_array() ? layers : json::array()) {
      const json size = member(layer, "size");
      image.layer_bytes += size.is_number_integer() ? size.get<int64_t>() : 0;
      Subprocess unpack({"/bin/tar", "-xzf", blob(layer), "-C", root}, root + ".log");
      EXPECT_EQ(unpack.Wait(), 0) << unpack.Describe();
    }
    image.binary_machine = ReadElf(root + "/" + binary).machine;
    std::string contents;
    if (ReadFile(root + "/" + binary, &contents)) image.binary_sha256 = Sha256Hex(contents);
    ReadFile(absl::StrCat(root, "/sbom/", binary, ".spdx.json"), &image.sbom_in_image);
    images.push_back(image);
  }
  return images;
}

class ImageTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    registrar_ = Runfile("registrar/csi-node-driver-registrar");
    driver_ = Runfile("test/csidriver/sample-csi-driver");
    kubeletclient_ = Runfile("kubeletclient/kubeletclient");
    if (!IsStatic(registrar_)) return;  // sanitizer builds: see the test bodies
    dir_ = new TempDir("img");
    // Which build the binaries are: the images' labels and tags must say the same.
    Subprocess version({registrar_, "--version"}, dir_->Join("version.log"));
    version.Wait();
    for (absl::string_view line : absl::StrSplit(version.Log(), '\n')) {
      if (absl::ConsumePrefix(&line, "csi-node-driver-registrar ")) version_ = std::string(line);
      if (absl::ConsumePrefix(&line, "commit: ")) commit_ = std::string(line);
      if (absl::ConsumePrefix(&line, "built: ")) built_ = std::string(line);
    }
    std::string tag = version_;
    std::replace(tag.begin(), tag.end(), '+', '_');
    registrar_image_ = "localhost/ndr/csi-node-driver-registrar:" + tag;
    std::vector<std::string> argv = {"/bin/bash", Runfile("images/build-images.sh"),
                                     absl::StrCat("--source-url=", kSource), dir_->Join("out"),
                                     absl::StrCat("amd64=", registrar_, ",", driver_, ",",
                                                  kubeletclient_)};
    for (const CrossPlatform& cross : kCrossPlatforms) {
      const std::string binaries = absl::StrCat("toolchain/cross/", cross.build, "_binaries/");
      argv.push_back(absl::StrCat(cross.platform, "=",
                                  Runfile(binaries + "csi-node-driver-registrar.stripped"), ",",
                                  Runfile(binaries + "sample-csi-driver.stripped"), ",",
                                  Runfile(binaries + "kubeletclient.stripped")));
    }
    Subprocess build(argv, dir_->Join("build.log"));
    build_exit_ = build.Wait(absl::Minutes(10)).value_or(-1);
    build_log_ = build.Log();
  }
  static void TearDownTestSuite() { delete dir_; }

  void SetUp() override {
    if (!IsStatic(registrar_)) GTEST_SKIP() << "sanitizer build: the binaries are not static";
    ASSERT_EQ(build_exit_, 0) << build_log_;
  }

  // buildah with the test's own storage.
  std::vector<std::string> Buildah(std::vector<std::string> args) {
    std::vector<std::string> argv = {
        "/usr/bin/buildah", "--storage-driver",       "vfs", "--root", dir_->Join("storage/root"),
        "--runroot",        dir_->Join("storage/run")};
    // A container made by `from` gets buildah's default open-files and process limits (1048576
    // each from buildah 1.39), which `run` cannot set where the machine's hard limits are lower:
    // this process's own limits instead, as options of `from` (right after it). The programs
    // here need a few dozen of each.
    std::vector<std::string> limits;
    if (!args.empty() && args[0] == "from") {
      for (const auto& [name, resource] : {std::pair<const char*, int>{"nofile", RLIMIT_NOFILE},
                                           std::pair<const char*, int>{"nproc", RLIMIT_NPROC}}) {
        struct rlimit limit;
        if (getrlimit(resource, &limit) == 0 && limit.rlim_max != RLIM_INFINITY) {
          limits.insert(limits.end(), {"--ulimit", absl::StrCat(name, "=", limit.rlim_max, ":",
                                                                 limit.rlim_max)});
        }
      }
    }
    for (size_t i = 0; i < args.size(); ++i) {
      argv.push_back(args[i]);
      if (i == 0) argv.insert(argv.end(), limits.begin(), limits.end());
    }
    return argv;
  }

  // Runs buildah to completion; returns its exit code and output.
  int RunBuildah(std::vector<std::string> args, std::string* output) {
    static int runs = 0;
    Subprocess run(Buildah(args), dir_->Join(absl::StrCat("buildah", runs++, ".log")));
    const int code = run.Wait().value_or(-1);
    *output = run.Log();
    return code;
  }

  // A container of the registrar's image, from its OCI archive: buildah picks this machine's
  // (amd64) image from the index, as a node's runtime does.
  std::string RegistrarContainer() {
    std::string output;
    EXPECT_EQ(RunBuildah({"from", "--quiet",
                          "oci-archive:" + dir_->Join("out/csi-node-driver-registrar.oci.tar")},
                         &output),
              0)
        << output;
    return std::string(absl::StripAsciiWhitespace(output));
  }

  // The sample driver on the host (into `*driver`) and the registrar in a container of its image
  // beside it, in the manifest's layout: the driver's socket directory at /csi, kubelet's
  // registry at /registration, both under `host`.
  std::unique_ptr<Subprocess> StartRegistrarInImage(const TempDir& host,
                                                    std::unique_ptr<Subprocess>* driver) {
    EXPECT_EQ(mkdir(host.Join("csi").c_str(), 0755), 0);
    EXPECT_EQ(mkdir(host.Join("registration").c_str(), 0755), 0);
    *driver = std::make_unique<Subprocess>(
        std::vector<std::string>{driver_, "--endpoint=" + host.Join("csi/csi.sock"),
                                 "--nodeid=node-1"},
        host.Join("driver.log"));
    const std::string container = RegistrarContainer();
    return std::make_unique<Subprocess>(
        Buildah({"run", "--isolation", "chroot", "-v", host.Join("csi") + ":/csi", "-v",
                 host.Join("registration") + ":/registration", container, "--",
                 "/csi-node-driver-registrar", "--csi-address=/csi/csi.sock",
                 "--kubelet-registration-path=/var/lib/kubelet/plugins/sample/csi.sock"}),
        host.Join("registrar.log"));
  }

  static inline std::string registrar_, driver_, kubeletclient_, build_log_;
  static inline std::string version_, commit_, built_, registrar_image_;
  static inline int build_exit_ = -1;
  static inline TempDir* dir_ = nullptr;
};

// Each archive is one multi-architecture tag: an image index with an entry for each of the five
// Linux platforms, each image's config agreeing with its entry, and each holding a binary of its
// own architecture.
// Every platform the Go registrar's image covers is built here; one that could not be is skipped
// with the reason its cross test gives, and the images here lack it.
TEST(ImagePlatforms, EveryPlatformIsBuiltHere) {
  const std::set<std::string> missing = MissingBuilds();
  if (!missing.empty()) {
    GTEST_SKIP() << "not built on this machine (see toolchain/cross:<arch>_test for why): "
                 << absl::StrJoin(missing, ", ");
  }
  EXPECT_EQ(kCrossPlatforms.size(), std::size(kEveryCrossPlatform));
}

TEST_F(ImageTest, IndexHoldsEveryPlatform) {
  EXPECT_THAT(build_log_, HasSubstr(registrar_image_ + " index sha256:"));
  // The registrar's target: under 6 MB compressed, per platform, its symbol table included (for
  // the crash report's names: about 0.9 MB of it). The sample driver also links OpenSSL's
  // libcrypto (it verifies tokens): under 9 MB. The judge's image holds kubeletclient and the
  // registrar: under 16 MB.
  const std::tuple<const char*, const char*, int64_t> archives[] = {
      {"csi-node-driver-registrar.oci.tar", "csi-node-driver-registrar", 6'000'000},
      {"sample-csi-driver.oci.tar", "sample-csi-driver", 9'000'000},
      {"kubeletclient.oci.tar", "kubeletclient", 16'000'000}};
  for (const auto& [archive, binary, limit] : archives) {
    SCOPED_TRACE(archive);
    const std::vector<PlatformImage> images =
        ReadIndex(dir_->Join(std::string("out/") + archive),
                  dir_->Join(std::string("unpacked/") + binary), binary);
    ASSERT_EQ(images.size(), 1 + kCrossPlatforms.size());
    std::map<std::string, int> machines;
    for (const PlatformImage& image : images) {
      const std::string platform =
          image.variant.empty() ? image.architecture : image.architecture + "/" + image.variant;
      SCOPED_TRACE(platform);
      EXPECT_EQ(image.os, "linux");
      EXPECT_EQ(image.config_architecture, image.architecture);
      EXPECT_EQ(image.config_variant, image.variant);
      EXPECT_EQ(image.config_os, "linux");
      EXPECT_GT(image.layer_bytes, 1'000'000);
      EXPECT_LT(image.layer_bytes, limit);
      machines[platform] = image.binary_machine;
      // The labels name the build the binaries say they are (--version), as the tags do.
      EXPECT_EQ(image.labels.value("org.opencontainers.image.version", ""), version_);
      EXPECT_EQ(image.labels.value("org.opencontainers.image.revision", ""), commit_);
      EXPECT_EQ(image.labels.value("org.opencontainers.image.created", ""), built_);
      EXPECT_EQ(image.created, built_);
      EXPECT_EQ(image.labels.value("org.opencontainers.image.licenses", ""), "Apache-2.0");
      EXPECT_EQ(image.labels.value("org.opencontainers.image.title", ""), binary);
      EXPECT_EQ(image.labels.value("org.opencontainers.image.source", ""), kSource);
    }
    std::map<std::string, int> expected = {{"amd64", EM_X86_64}};
    for (const CrossPlatform& cross : kCrossPlatforms) expected[cross.platform] = cross.machine;
    EXPECT_EQ(machines, expected);
  }
}

// Each platform's image carries the SPDX document of the Debian packages linked into its binary
// (images/sbom.py), at /sbom/ and as the index's BuildKit-style attestation for that image: one
// attestation manifest, annotated with the image's digest, whose in-toto statement is about that
// digest and holds the same document, which names the image's binary by its checksum and the
// packages of the binary's own architecture (the cross builds' from their sysroots).
TEST_F(ImageTest, SbomForEveryPlatform) {
  const std::map<std::string, std::string> debian_arch = {{"amd64", "amd64"},
                                                          {"arm64", "arm64"},
                                                          {"arm/v7", "armhf"},
                                                          {"ppc64le", "ppc64el"},
                                                          {"s390x", "s390x"}};
  // A library each binary links, and one it must not list ("": none to name).
  const std::tuple<const char*, const char*, const char*, const char*> archives[] = {
      {"csi-node-driver-registrar.oci.tar", "csi-node-driver-registrar", "libgrpc-dev",
       "libssl-dev"},
      {"sample-csi-driver.oci.tar", "sample-csi-driver", "libssl-dev", "libevent-dev"},
      // The judge's image holds the registrar too: it links everything the others do.
      {"kubeletclient.oci.tar", "kubeletclient", "libyaml-cpp-dev", ""}};
  for (const auto& [archive, binary, linked, absent] : archives) {
    SCOPED_TRACE(archive);
    const std::vector<PlatformImage> images =
        ReadIndex(dir_->Join(std::string("out/") + archive),
                  dir_->Join(std::string("sbom/") + binary), binary);
    ASSERT_EQ(images.size(), 1 + kCrossPlatforms.size());
    for (const PlatformImage& image : images) {
      const std::string platform =
          image.variant.empty() ? image.architecture : image.architecture + "/" + image.variant;
      SCOPED_TRACE(platform);
      ASSERT_EQ(image.attestations, 1);
      ASSERT_EQ(image.attestation.count("https://spdx.dev/Document"), 1u);
      const auto& [layer, statement] = image.attestation.at("https://spdx.dev/Document");
      EXPECT_EQ(layer.value("mediaType", ""), "application/vnd.in-toto+json");
      ASSERT_TRUE(statement.is_object()) << statement.dump();
      EXPECT_EQ(statement.value("predicateType", ""), "https://spdx.dev/Document");
      EXPECT_EQ(SubjectDigest(statement), image.digest);
      const json document = statement.value("predicate", json());
      ASSERT_TRUE(document.is_object());
      EXPECT_EQ(document.value("spdxVersion", ""), "SPDX-2.3");
      EXPECT_EQ(json::parse(image.sbom_in_image, nullptr, false), document)
          << "/sbom/" << binary << ".spdx.json differs from the attestation's document";
      // The binary, by its checksum.
      bool binary_named = false;
      for (const json& file : document.value("files", json::array())) {
        for (const json& checksum : file.value("checksums", json::array())) {
          binary_named |= checksum.value("algorithm", "") == "SHA256" &&
                          checksum.value("checksumValue", "") == image.binary_sha256;
        }
      }
      EXPECT_TRUE(binary_named) << "no file with the image's binary's SHA-256";
      // Packages: of this architecture only; `linked` there, `absent` not.
      std::set<std::string> names;
      for (const json& package : document.value("packages", json::array())) {
        for (const json& ref : package.value("externalRefs", json::array())) {
          const std::string purl = ref.value("referenceLocator", "");
          if (purl.find("arch=source") != std::string::npos) continue;
          names.insert(package.value("name", ""));
          EXPECT_THAT(purl, HasSubstr("arch=" + debian_arch.at(platform))) << purl;
        }
      }
      EXPECT_TRUE(names.count(linked)) << "no " << linked << " in the SBOM";
      if (*absent != '\0') {
        EXPECT_FALSE(names.count(absent)) << absent << " in the SBOM, yet not linked";
      }
    }
  }
}

// Each platform's provenance (SLSA v1) is about its image and names the commit the binaries say
// they were built from; its VEX is about its image and states, per CVE, the packages of that
// image it applies to.
TEST_F(ImageTest, ProvenanceAndVexForEveryPlatform) {
  const std::vector<PlatformImage> images =
      ReadIndex(dir_->Join("out/csi-node-driver-registrar.oci.tar"),
                dir_->Join("attest/csi-node-driver-registrar"), "csi-node-driver-registrar");
  ASSERT_EQ(images.size(), 1 + kCrossPlatforms.size());
  for (const PlatformImage& image : images) {
    SCOPED_TRACE(PlatformName(image));
    ASSERT_EQ(image.attestation.count("https://slsa.dev/provenance/v1"), 1u);
    const json& provenance = image.attestation.at("https://slsa.dev/provenance/v1").second;
    EXPECT_EQ(provenance.value("_type", ""), "https://in-toto.io/Statement/v1");
    EXPECT_EQ(SubjectDigest(provenance), image.digest);
    const json source = provenance["predicate"]["buildDefinition"]["externalParameters"]["source"];
    EXPECT_EQ(source["digest"].value("gitCommit", ""), commit_);
    EXPECT_EQ(provenance["predicate"]["buildDefinition"]["externalParameters"].value("platform", ""),
              "linux/" + PlatformName(image));
    EXPECT_FALSE(provenance["predicate"]["runDetails"]["builder"]["builderDependencies"].empty());

    ASSERT_EQ(image.attestation.count("https://openvex.dev/ns/v0.2.0"), 1u);
    const json& vex = image.attestation.at("https://openvex.dev/ns/v0.2.0").second["predicate"];
    EXPECT_EQ(vex.value("@context", ""), "https://openvex.dev/ns/v0.2.0");
    ASSERT_FALSE(vex["statements"].empty());
    const std::string product =
        "pkg:oci/csi-node-driver-registrar@sha256%3A" + image.digest.substr(7);
    for (const json& statement : vex["statements"]) {
      ASSERT_EQ(statement["products"].size(), 1u) << statement.dump();
      EXPECT_EQ(statement["products"][0].value("@id", ""), product);
      EXPECT_FALSE(statement["products"][0]["subcomponents"].empty()) << statement.dump();
    }
  }
}

// Each image carries the project's licence and notice, the third-party notices of every package its
// binary links (as its SBOM lists them), and what lets scanners in their default mode see those
// packages: an os-release and debian_version naming the Debian release, and a dpkg status entry
// per package with the SBOM's version.
TEST_F(ImageTest, LicencesNoticesAndWhatScannersRead) {
  std::string license, notice;
  ASSERT_TRUE(ReadFile(Runfile("LICENSE"), &license));
  ASSERT_TRUE(ReadFile(Runfile("NOTICE"), &notice));
  for (const char* binary : {"csi-node-driver-registrar", "sample-csi-driver", "kubeletclient"}) {
    SCOPED_TRACE(binary);
    const std::vector<PlatformImage> images =
        ReadIndex(dir_->Join(absl::StrCat("out/", binary, ".oci.tar")),
                  dir_->Join(absl::StrCat("files/", binary)), binary);
    ASSERT_EQ(images.size(), 1 + kCrossPlatforms.size());
    for (const PlatformImage& image : images) {
      SCOPED_TRACE(PlatformName(image));
      std::string text;
      ASSERT_TRUE(ReadFile(image.root + "/licenses/LICENSE", &text));
      EXPECT_EQ(text, license);
      ASSERT_TRUE(ReadFile(image.root + "/licenses/NOTICE", &text));
      EXPECT_EQ(text, notice);
      std::string notices, os_release, debian_version;
      ASSERT_TRUE(ReadFile(image.root + "/licenses/THIRD-PARTY-NOTICES", &notices));
      ASSERT_TRUE(ReadFile(image.root + "/etc/os-release", &os_release));
      ASSERT_TRUE(ReadFile(image.root + "/etc/debian_version", &debian_version));
      EXPECT_THAT(os_release, HasSubstr("\nID=debian\n"));
      EXPECT_THAT(debian_version, ::testing::MatchesRegex("[0-9]+\n"));
      const json document = json::parse(image.sbom_in_image, nullptr, false);
      int libraries = 0;
      for (const json& package : document.value("packages", json::array())) {
        if (package.value("primaryPackagePurpose", "") != "LIBRARY") continue;
        ++libraries;
        const std::string name = package.value("name", ""), version = package.value("versionInfo", "");
        EXPECT_THAT(notices, HasSubstr(absl::StrCat(name, " ", version, " ("))) << name;
        std::string status;
        EXPECT_TRUE(ReadFile(absl::StrCat(image.root, "/var/lib/dpkg/status.d/", name), &status))
            << name;
        EXPECT_THAT(status, HasSubstr(absl::StrCat("\nVersion: ", version, "\n"))) << name;
      }
      EXPECT_GT(libraries, 5);
      // Every package's copyright file, in full: one "Its copyright file:" per package.
      int copyrights = 0;
      for (size_t at = notices.find("Its copyright file: "); at != std::string::npos;
           at = notices.find("Its copyright file: ", at + 1)) {
        ++copyrights;
      }
      EXPECT_EQ(copyrights, libraries);
      // And nothing else: a status entry per SBOM package, no more.
      EXPECT_EQ(static_cast<int>(std::distance(
                    std::filesystem::directory_iterator(image.root + "/var/lib/dpkg/status.d"),
                    std::filesystem::directory_iterator())),
                libraries);
    }
  }
}

TEST_F(ImageTest, VersionInsideTheImage) {
  const std::string container = RegistrarContainer();
  std::string output;
  EXPECT_EQ(RunBuildah({"run", "--isolation", "chroot", container, "--",
                        "/csi-node-driver-registrar", "--version"},
                       &output),
            0)
      << output;
  EXPECT_THAT(output, HasSubstr(absl::StrCat("csi-node-driver-registrar ", version_, "\ncommit: ",
                                             commit_, "\nbuilt: ", built_, "\n")));
}

// The judge's image: kubeletclient as the entrypoint, the registrar beside it, both of the
// build the labels name, and the judge answers inside it.
TEST_F(ImageTest, TheJudgesImageRunsBothPrograms) {
  std::string output;
  ASSERT_EQ(RunBuildah({"from", "--quiet", "oci-archive:" + dir_->Join("out/kubeletclient.oci.tar")},
                       &output),
            0)
      << output;
  const std::string container(absl::StripAsciiWhitespace(output));
  for (const char* program : {"kubeletclient", "csi-node-driver-registrar"}) {
    EXPECT_EQ(RunBuildah({"run", "--isolation", "chroot", container, "--",
                          absl::StrCat("/", program), "--version"},
                         &output),
              0)
        << output;
    EXPECT_THAT(output, HasSubstr(absl::StrCat(program, " ", version_, "\ncommit: ", commit_)));
  }
  EXPECT_EQ(RunBuildah({"run", "--isolation", "chroot", container, "--", "/kubeletclient", "sanity",
                        "--list"},
                       &output),
            0)
      << output;
  EXPECT_THAT(output, HasSubstr("registration/handshake"));
  ASSERT_EQ(RunBuildah({"inspect", "--format", "{{.OCIv1.Config.Entrypoint}}", container},
                       &output),
            0)
      << output;
  EXPECT_EQ(absl::StripAsciiWhitespace(output), "[/kubeletclient]");
}

TEST_F(ImageTest, RegistrationRoundTripFromInsideTheImage) {
  TempDir host("imgrt");
  std::unique_ptr<Subprocess> driver;
  std::unique_ptr<Subprocess> registrar_in_image = StartRegistrarInImage(host, &driver);
  Subprocess& registrar = *registrar_in_image;
  const std::string socket = host.Join("registration/sample.csi.example.com-reg.sock");
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(PollUntil([&] {
    auto stub = pluginregistration::Registration::NewStub(
        grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(RpcDeadline());
    return stub->GetInfo(&context, {}, &info).ok();
  })) << registrar.Log();
  EXPECT_EQ(info.name(), "sample.csi.example.com");
  EXPECT_EQ(info.endpoint(), "/var/lib/kubelet/plugins/sample/csi.sock");
  // SIGTERM to the registrar itself, as the kubelet's runtime sends it to a container's process
  // (signalling buildah instead makes it SIGKILL the container): the socket goes, buildah exits 0.
  const pid_t inside = FindInGroup(registrar.pid(), "csi-node-driver");
  ASSERT_NE(inside, 0) << "no registrar process under buildah";
  ASSERT_EQ(kill(inside, SIGTERM), 0);
  EXPECT_EQ(registrar.Wait(), 0) << registrar.Log();
  struct stat st;
  EXPECT_NE(lstat(socket.c_str(), &st), 0) << registrar.Log();
}

// A crash inside the image: the shipped binary (stripped of debug information only, its symbol
// table kept) names its functions in the crash report, with no other file.
TEST_F(ImageTest, CrashReportFromInsideTheImageNamesFunctions) {
  TempDir host("imgcr");
  std::unique_ptr<Subprocess> driver;
  std::unique_ptr<Subprocess> registrar_in_image = StartRegistrarInImage(host, &driver);
  Subprocess& registrar = *registrar_in_image;
  const std::string socket = host.Join("registration/sample.csi.example.com-reg.sock");
  struct stat st;
  ASSERT_TRUE(PollUntil([&] { return lstat(socket.c_str(), &st) == 0; })) << registrar.Log();
  const pid_t inside = FindInGroup(registrar.pid(), "csi-node-driver");
  ASSERT_NE(inside, 0) << "no registrar process under buildah";
  ASSERT_EQ(syscall(SYS_tgkill, inside, inside, SIGSEGV), 0);  // its main thread
  EXPECT_NE(registrar.Wait(), 0) << registrar.Log();
  const std::string log = registrar.Log();
  EXPECT_THAT(log, HasSubstr("\"Fatal signal\" signal=\"SIGSEGV\" code=\"SI_TKILL\""));
  EXPECT_THAT(log, HasSubstr(" ndr::registrar::Registrar::Run()\n")) << log;
  EXPECT_THAT(log, HasSubstr(" main\n")) << log;
}

}  // namespace
}  // namespace ndr
