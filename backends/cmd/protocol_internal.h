// What runtime_protocol.cc and family_protocol.cc share of the protocol's encoding (not an API):
// frames, and the checks of a driver's declarations.
#ifndef MM_BACKENDS_CMD_PROTOCOL_INTERNAL_H_
#define MM_BACKENDS_CMD_PROTOCOL_INTERNAL_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "mm/backends/cmd/runtime_protocol.h"
#include "mm/engine/io/json.h"

namespace mm::runtime::internal {

using Field = io::JsonField<nlohmann::json>;

// A frame's prefix and header; `data_bytes` of data follow it.
std::string Frame(const nlohmann::json& header, std::uint32_t data_bytes);

// A driver's text field: a string, cleaned by DriverText; the optional one is "" when absent.
StatusOr<std::string> TextAt(const Field& object, std::string_view key);
StatusOr<std::string> OptionalTextAt(const Field& object, std::string_view key);

// The reason of an entry that is a refusal, {"refused": TEXT} (cleaned by DriverText; an empty
// one is an error); nullopt when the entry is no refusal.
StatusOr<std::optional<std::string>> RefusalOf(const Field& entry);

// One entry declaring the arithmetic of `dtype`: {"accumulation": DTYPE, "flushes_subnormals":
// BOOL, "conversion": TEXT} or {"refused": TEXT}; the rules of plugin ABI v2's arithmetic().
StatusOr<DTypeDeclaration> ParseDeclaration(DType dtype, const Field& entry);

// The operators of a version 2 hello (its optional "operators" member) into `hello`; every
// operator it does not declare refused with the reason why.
Status ParseOperators(const Field& root, Hello& hello);

}  // namespace mm::runtime::internal

#endif  // MM_BACKENDS_CMD_PROTOCOL_INTERNAL_H_
