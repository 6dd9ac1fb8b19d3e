#include "backend_table.hpp"

namespace octet::test {

const std::vector<int32_t>& all_dtypes() {
  static const std::vector<int32_t> dtypes = {OCTET_DTYPE_FP32,     OCTET_DTYPE_BF16, OCTET_DTYPE_FP16,
                                              OCTET_DTYPE_E4M3,     OCTET_DTYPE_E5M2, OCTET_DTYPE_E4M3FNUZ,
                                              OCTET_DTYPE_E5M2FNUZ, OCTET_DTYPE_E8M0};
  return dtypes;
}

int32_t BackendTable::open(octet_backend_entry_fn entry) {
  EXPECT_EQ(entry(OCTET_PLUGIN_ABI_MAJOR, OCTET_PLUGIN_ABI_MINOR, &api_), OCTET_STATUS_SUCCESS);
  if (api_ == nullptr) {
    ADD_FAILURE() << "the entry point gave no table";
    return OCTET_STATUS_BACKEND_ERROR;
  }
  host_.struct_size = sizeof host_;
  host_.abi_major = OCTET_PLUGIN_ABI_MAJOR;
  host_.abi_minor = OCTET_PLUGIN_ABI_MINOR;
  host_.report_error = &BackendTable::record_error;
  host_.host_data = &errors_;
  caps_.struct_size = sizeof caps_;
  const int32_t status = api_->initialize(&host_, &caps_);
  if (status != OCTET_STATUS_SUCCESS) return status;
  initialized_ = true;
  EXPECT_EQ(api_->context_create(nullptr, &context_), OCTET_STATUS_SUCCESS);
  EXPECT_NE(context_, nullptr);
  return status;
}

void BackendTable::close() {
  if (!initialized_) return;
  if (context_ != nullptr) api_->context_destroy(context_);
  context_ = nullptr;
  if (api_->shutdown != nullptr) api_->shutdown();
  initialized_ = false;
}

std::vector<int32_t> BackendTable::declared_dtypes() const {
  std::vector<int32_t> out;
  for (int32_t dtype : all_dtypes())
    if ((caps_.dtypes & OCTET_DTYPE_BIT(dtype)) != 0) out.push_back(dtype);
  return out;
}

void BackendTable::record_error(void* host_data, int32_t status, const char* message) {
  static_cast<std::vector<ReportedError>*>(host_data)->push_back({status, message});
}

void BackendTable::expect_failure(int32_t returned, int32_t status, std::initializer_list<const char*> fragments) {
  EXPECT_EQ(returned, status);
  ASSERT_EQ(errors_.size(), 1u) << "exactly one reported error expected";
  EXPECT_EQ(errors_[0].status, status);
  for (const char* fragment : fragments) {
    EXPECT_NE(errors_[0].message.find(fragment), std::string::npos)
        << "message \"" << errors_[0].message << "\" should mention \"" << fragment << "\"";
  }
  errors_.clear();
}

void BackendTable::expect_success(int32_t returned) {
  EXPECT_EQ(returned, OCTET_STATUS_SUCCESS);
  for (const ReportedError& e : errors_) ADD_FAILURE() << "unexpected error: " << e.message;
  errors_.clear();
}

void BackendTableTest::SetUp() {
  const BackendFactory& factory = GetParam();
  const std::string suite = ::testing::UnitTest::GetInstance()->current_test_suite()->name();
  const std::string bare_suite = suite.substr(suite.find('/') + 1);  // "BackendTable/X" -> "X"
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  const std::string bare_test = bare_suite + "." + test.substr(0, test.find('/'));  // "T/cpu" -> "T"
  for (const std::string& key : {bare_suite, bare_test}) {
    const auto not_joined = factory.not_joined.find(key);
    if (not_joined != factory.not_joined.end())
      GTEST_SKIP() << factory.name << " does not join " << key << ": " << not_joined->second;
  }
  std::string unavailable;
  const octet_backend_entry_fn entry = factory.entry(&unavailable);
  if (entry == nullptr) {
    if (!unavailable.empty()) GTEST_SKIP() << factory.name << " is not available: " << unavailable;
    FAIL() << factory.name << " gave no entry point";
  }
  const int32_t status = open(entry);
  if (status != OCTET_STATUS_SUCCESS) {
    const std::string message = errors_.empty() ? "no message" : errors_.back().message;
    if (factory.needs_device) GTEST_SKIP() << factory.name << " has no usable device: " << message;
    FAIL() << factory.name << "'s initialize failed (" << status << "): " << message;
  }
  if (HasFatalFailure() || HasNonfatalFailure()) return;
  if (caps_.memory_kind == OCTET_MEMORY_DEVICE)
    GTEST_SKIP() << factory.name
                 << " keeps its memory on the device (memory_kind DEVICE), and these suites pass host "
                    "matrices to the table: its own tests and octet conformance drive it";
}

}  // namespace octet::test
