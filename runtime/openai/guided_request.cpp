// Structured outputs in a request: response_format (text / json_object /
// json_schema) and the guided_* extensions (Dynamo's nvext names, also
// accepted top-level as vLLM does), resolved into one
// protocol::guided_decoding and validated by building its grammar, so a bad
// schema, regex or grammar is a 400 here, before routing.
#include "runtime/grammar/guided.hpp"
#include "runtime/openai/json_fields.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace dynamo::openai::detail {

namespace {

using protocol::guided_kind;

/// One structured-output source found in the body: where, and what it asks for.
struct guided_source {
  std::string param;
  protocol::guided_decoding guided;
};

caf::error read_response_format(const json& obj, std::vector<guided_source>& out) {
  const json* f = field(obj, "response_format");
  if (!f)
    return {};
  if (!f->is_object())
    return type_error("response_format", "an object", *f);
  const json* type = field(*f, "type");
  if (!type)
    return missing_error("response_format.type");
  if (!type->is_string())
    return type_error("response_format.type", "a string", *type);
  if (*type == "text")
    return {};
  if (*type == "json_object") {
    out.push_back({"response_format", {guided_kind::json_object, ""}});
    return {};
  }
  if (*type != "json_schema")
    return value_error("response_format.type", fmt::format("must be 'text', 'json_object' or 'json_schema', got {}.",
                                                           type->dump()));
  const json* js = field(*f, "json_schema");
  if (!js)
    return missing_error("response_format.json_schema");
  if (!js->is_object())
    return type_error("response_format.json_schema", "an object", *js);
  const json* name = field(*js, "name");
  if (!name)
    return missing_error("response_format.json_schema.name");
  if (!name->is_string())
    return type_error("response_format.json_schema.name", "a string", *name);
  std::optional<bool> strict;
  if (auto err = read_bool(*js, "strict", strict))
    return err;
  const json* schema = field(*js, "schema");
  if (!schema) { // OpenAI allows it absent: any JSON object
    out.push_back({"response_format.json_schema", {guided_kind::json_object, ""}});
    return {};
  }
  if (!schema->is_object())
    return type_error("response_format.json_schema.schema", "an object", *schema);
  out.push_back({"response_format.json_schema.schema", {guided_kind::json_schema, schema->dump()}});
  return {};
}

/// guided_json / guided_regex / guided_choice / guided_grammar of `obj`
/// (the body or its nvext), params prefixed with `prefix`.
caf::error read_extensions(const json& obj, const std::string& prefix, std::vector<guided_source>& out) {
  if (const json* f = field(obj, "guided_json")) {
    const std::string param = prefix + "guided_json";
    if (f->is_string()) {
      const json parsed = json::parse(f->get_ref<const std::string&>(), nullptr, false);
      if (parsed.is_discarded() || !parsed.is_object())
        return value_error(param, "must be a JSON Schema (an object, or a string holding one).");
      out.push_back({param, {guided_kind::json_schema, parsed.dump()}});
    } else if (f->is_object()) {
      out.push_back({param, {guided_kind::json_schema, f->dump()}});
    } else {
      return type_error(param, "an object or a string", *f);
    }
  }
  for (const auto& [name, kind] : {std::pair{"guided_regex", guided_kind::regex}, std::pair{"guided_grammar", guided_kind::grammar}}) {
    const json* f = field(obj, name);
    if (!f)
      continue;
    const std::string param = prefix + name;
    if (!f->is_string())
      return type_error(param, "a string", *f);
    if (f->get_ref<const std::string&>().empty())
      return value_error(param, "must not be empty.");
    out.push_back({param, {kind, f->get<std::string>()}});
  }
  if (const json* f = field(obj, "guided_choice")) {
    const std::string param = prefix + "guided_choice";
    if (!f->is_array() || f->empty())
      return type_error(param, "a non-empty array of strings", *f);
    for (size_t i = 0; i < f->size(); ++i) {
      if (!(*f)[i].is_string())
        return type_error(fmt::format("{}[{}]", param, i), "a string", (*f)[i]);
      if ((*f)[i].get_ref<const std::string&>().empty())
        return value_error(fmt::format("{}[{}]", param, i), "must not be empty.");
    }
    out.push_back({param, {guided_kind::choice, f->dump()}});
  }
  return {};
}

} // namespace

caf::error read_guided(const json& obj, protocol::guided_decoding& out) {
  std::vector<guided_source> sources;
  if (auto err = read_response_format(obj, sources))
    return err;
  if (auto err = read_extensions(obj, "", sources))
    return err;
  if (const json* nvext = field(obj, "nvext")) {
    if (!nvext->is_object())
      return type_error("nvext", "an object", *nvext);
    if (auto err = read_extensions(*nvext, "nvext.", sources))
      return err;
  }
  if (sources.empty())
    return {};
  if (sources.size() > 1)
    return value_error(sources[1].param, fmt::format("only one structured-output constraint may be set; "
                                                     "'{}' is set too.", sources[0].param));
  if (auto ok = gram::validate(sources[0].guided); !ok) {
    return code_of(ok.error()) == errc::unsupported ? unsupported_error(sources[0].param, message_of(ok.error()))
                                                    : value_error(sources[0].param, message_of(ok.error()));
  }
  out = std::move(sources[0].guided);
  return {};
}

} // namespace dynamo::openai::detail
