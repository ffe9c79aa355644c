#include "mm/backends/blas/blas_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>
#include <system_error>

namespace mm::blas {
namespace {

// The libraries loaded in this process, by path: loaded once, never unloaded.
std::mutex& LoadedMutex() {
  static std::mutex mutex;
  return mutex;
}
std::map<std::string, std::shared_ptr<const BlasLibrary>>& Loaded() {
  static auto* loaded = new std::map<std::string, std::shared_ptr<const BlasLibrary>>();
  return *loaded;
}

// The version at the end of a shared object's canonical name: "libblas.so.3.11.0" -> "3.11.0";
// "" when the name ends in ".so" or a single number (the soname, not the version).
std::string VersionFromFileName(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  const std::size_t so = name.rfind(".so.");
  if (so == std::string::npos) return {};
  const std::string version = name.substr(so + 4);
  if (version.find('.') == std::string::npos) return {};
  return version;
}

// The word after "OpenBLAS " in its config string: "0.3.21".
std::string OpenBlasVersion(const std::string& config) {
  const std::string prefix = "OpenBLAS ";
  if (config.rfind(prefix, 0) != 0) return {};
  const std::size_t end = config.find(' ', prefix.size());
  return config.substr(prefix.size(), end == std::string::npos ? end : end - prefix.size());
}

template <class Fn>
Fn Symbol(void* handle, const char* name) {
  return reinterpret_cast<Fn>(dlsym(handle, name));
}

}  // namespace

const std::vector<BlasLibraryDescription>& DebianBlasLibraries() {
  static const auto* libraries = new std::vector<BlasLibraryDescription>{
      {"openblas", "OpenBLAS", "libopenblas0-pthread", "openblas-pthread", "libopenblas.so.0",
       ThreadControl::kOpenBlas},
      // BLIS's libblas.so.3 hides its bli_* functions; libblis.so.4 exports them and the BLAS.
      {"blis", "BLIS", "libblis4-openmp", "blis-openmp", "libblis.so.4", ThreadControl::kBlis},
      {"atlas", "ATLAS", "libatlas3-base", "atlas", "libblas.so.3", ThreadControl::kSerial},
      {"netlib", "reference BLAS (netlib)", "libblas3", "blas", "libblas.so.3",
       ThreadControl::kSerial},
  };
  return *libraries;
}

std::filesystem::path BlasLibDir() {
  if (const char* dir = std::getenv("MM_BLAS_LIBDIR"); dir != nullptr && *dir != '\0') return dir;
  return MM_BLAS_DEFAULT_LIBDIR;
}

std::filesystem::path BlasLibraryPath(const BlasLibraryDescription& description,
                                      const std::filesystem::path& lib_dir) {
  std::string variable = "MM_BLAS_" + description.name + "_LIB";
  std::transform(variable.begin(), variable.end(), variable.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (const char* file = std::getenv(variable.c_str()); file != nullptr && *file != '\0') {
    return file;
  }
  return lib_dir / description.directory / description.file;
}

std::string BlasLibrary::Core() const {
  if (openblas_corename_ != nullptr) {
    const char* core = openblas_corename_();
    return core == nullptr ? std::string() : std::string(core);
  }
  if (blis_arch_id_ != nullptr && blis_arch_string_ != nullptr) {
    const char* arch = blis_arch_string_(blis_arch_id_());
    return arch == nullptr ? std::string() : std::string(arch);
  }
  return {};
}

std::string BlasLibrary::ThreadingName() const {
  switch (description_.threads) {
    case ThreadControl::kOpenBlas:
      return "pthreads";
    case ThreadControl::kBlis:
      return "OpenMP";
    case ThreadControl::kSerial:
      break;
  }
  return "serial";
}

void BlasLibrary::SetThreads(int threads) const {
  threads = std::max(1, threads);
  if (openblas_set_threads_ != nullptr && openblas_get_threads_() != threads) {
    openblas_set_threads_(threads);
  }
  if (blis_set_threads_ != nullptr && blis_get_threads_() != threads) {
    blis_set_threads_(threads);
  }
}

int BlasLibrary::Threads() const {
  if (openblas_get_threads_ != nullptr) return openblas_get_threads_();
  if (blis_get_threads_ != nullptr) return static_cast<int>(blis_get_threads_());
  return 1;
}

StatusOr<std::shared_ptr<const BlasLibrary>> BlasLibrary::Load(
    const BlasLibraryDescription& description, const std::filesystem::path& path) {
  std::lock_guard<std::mutex> lock(LoadedMutex());
  if (auto it = Loaded().find(path.string()); it != Loaded().end()) return it->second;
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    return NotFoundError(path.string() + " not found (Debian package " + description.package + ")");
  }
  // RTLD_LOCAL: the libraries all define sgemm_ and dgemm_; each keeps its own.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* message = dlerror();
    return FailedPreconditionError(path.string() + " fails to load: " +
                                   (message == nullptr ? "unknown dlopen error" : message));
  }
  auto library = std::shared_ptr<BlasLibrary>(new BlasLibrary());
  library->description_ = description;
  library->path_ = path;
  library->real_path_ = std::filesystem::canonical(path, error);
  if (error) library->real_path_ = path;

  std::string missing;
  auto require = [&](auto& slot, const char* name) {
    using Fn = std::remove_reference_t<decltype(slot)>;
    slot = Symbol<Fn>(handle, name);
    if (slot == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(name);
  };
  require(library->sgemm_, "sgemm_");
  require(library->dgemm_, "dgemm_");
  library->sbgemm_ = Symbol<SbgemmFn>(handle, "sbgemm_");
  char* (*openblas_config)() = nullptr;
  const char* (*blis_version)() = nullptr;
  std::int64_t (*blis_openmp)() = nullptr;
  switch (description.threads) {
    case ThreadControl::kOpenBlas:
      require(library->openblas_set_threads_, "openblas_set_num_threads");
      require(library->openblas_get_threads_, "openblas_get_num_threads");
      require(library->openblas_corename_, "openblas_get_corename");
      require(openblas_config, "openblas_get_config");
      break;
    case ThreadControl::kBlis:
      require(library->blis_set_threads_, "bli_thread_set_num_threads");
      require(library->blis_get_threads_, "bli_thread_get_num_threads");
      require(library->blis_arch_id_, "bli_arch_query_id");
      require(library->blis_arch_string_, "bli_arch_string");
      require(blis_version, "bli_info_get_version_str");
      blis_openmp = Symbol<std::int64_t (*)()>(handle, "bli_info_get_enable_openmp");
      break;
    case ThreadControl::kSerial:
      break;
  }
  if (!missing.empty()) {
    // Nothing of it has run; the handle is released.
    dlclose(handle);
    return FailedPreconditionError(path.string() + " lacks " + missing);
  }
  if (openblas_config != nullptr) {
    const char* config = openblas_config();
    library->config_ = config == nullptr ? "" : config;
    library->version_ = OpenBlasVersion(library->config_);
  }
  if (blis_version != nullptr) {
    const char* version = blis_version();
    library->version_ = version == nullptr ? "" : version;
    library->config_ = "BLIS " + library->version_ +
                       (blis_openmp != nullptr && blis_openmp() != 0 ? ", OpenMP" : "");
  }
  if (library->version_.empty()) library->version_ = VersionFromFileName(library->real_path_);
  Loaded().emplace(path.string(), library);
  return std::shared_ptr<const BlasLibrary>(library);
}

}  // namespace mm::blas
