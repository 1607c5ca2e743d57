// s3:// URLs resolved into S3Options (ResolveS3Url, s3_client.h): parameters of
// the URL first, then the AWS environment variables, then the profile in
// ~/.aws/credentials and ~/.aws/config; and OpenS3Url, the s3:// scheme of
// OpenObjectStore.
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <type_traits>

#include <strata/core/strings.h>
#include <strata/objstore/s3_client.h>

#include "objstore/s3_client_impl.h"
#include "objstore/store_common.h"

namespace strata::objstore {
namespace {

// "[name]" sections of an INI file; keys indented under "key =" (e.g. "s3 =")
// are stored as "key.subkey".
using IniFile = std::map<std::string, std::map<std::string, std::string>>;

IniFile ReadIni(const std::string& path) {
  IniFile out;
  std::ifstream in(path);
  if (!in) return out;
  std::string line, section, parent;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string_view l = line;
    const bool indented = !l.empty() && (l[0] == ' ' || l[0] == '\t');
    l = Trim(l);
    if (l.empty() || l[0] == '#' || l[0] == ';') continue;
    if (l.front() == '[' && l.back() == ']') {
      section = std::string(Trim(l.substr(1, l.size() - 2)));
      parent.clear();
      out[section];
      continue;
    }
    const size_t eq = l.find('=');
    if (eq == std::string_view::npos || section.empty()) continue;
    std::string k = ToLower(Trim(l.substr(0, eq)));
    std::string v(Trim(l.substr(eq + 1)));
    if (indented && !parent.empty()) {
      out[section][parent + "." + k] = v;
    } else {
      out[section][k] = v;
      parent = v.empty() ? k : std::string();
    }
  }
  return out;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

std::string HomeFile(const char* env_override, const char* rel) {
  std::string p = Env(env_override);
  if (!p.empty()) return p;
  std::string home = Env("HOME");
  return home.empty() ? std::string() : home + "/" + rel;
}

}  // namespace

Result<std::pair<S3Options, S3Location>> ResolveS3Url(std::string_view url) {
  STRATA_ASSIGN_OR_RETURN(StoreUrl u, ParseStoreUrl(url));
  if (u.scheme != "s3") {
    return Status::InvalidArgument("\"" + std::string(url) + "\" is not an s3:// URL");
  }
  if (u.host.empty()) {
    return Status::InvalidArgument("s3:// URL \"" + std::string(url) + "\" names no bucket");
  }
  S3Options o;
  S3Location loc{u.host, NormalizePrefix(u.path)};
  auto& p = u.params;
  auto take = [&](const char* name) -> std::optional<std::string> {
    auto it = p.find(name);
    if (it == p.end()) return std::nullopt;
    std::string v = it->second;
    p.erase(it);
    return v;
  };
  auto bad = [&](const std::string& name, const std::string& v) {
    return Status::InvalidArgument("bad value \"" + v + "\" for " + name + " in \"" +
                                   std::string(url) + "\"");
  };

  const std::string profile =
      take("profile").value_or(Env("AWS_PROFILE").empty() ? "default" : Env("AWS_PROFILE"));
  IniFile creds_file = ReadIni(HomeFile("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials"));
  IniFile config_file = ReadIni(HomeFile("AWS_CONFIG_FILE", ".aws/config"));
  const auto& cred_section = creds_file[profile];
  const auto& conf_section = config_file[profile == "default" ? "default" : "profile " + profile];
  auto file_value = [&](const char* key) -> std::string {
    if (auto it = cred_section.find(key); it != cred_section.end()) return it->second;
    if (auto it = conf_section.find(key); it != conf_section.end()) return it->second;
    return "";
  };

  // Credentials: URL, environment, profile.
  auto ak = take("access_key");
  auto sk = take("secret_key");
  auto token = take("session_token");
  if (ak || sk) {
    o.credentials.access_key = ak.value_or("");
    o.credentials.secret_key = sk.value_or("");
    o.credentials.session_token = token.value_or("");
  } else if (!Env("AWS_ACCESS_KEY_ID").empty()) {
    o.credentials.access_key = Env("AWS_ACCESS_KEY_ID");
    o.credentials.secret_key = Env("AWS_SECRET_ACCESS_KEY");
    o.credentials.session_token = token.value_or(Env("AWS_SESSION_TOKEN"));
  } else {
    o.credentials.access_key = file_value("aws_access_key_id");
    o.credentials.secret_key = file_value("aws_secret_access_key");
    o.credentials.session_token = token.value_or(file_value("aws_session_token"));
  }

  // Region and endpoint.
  if (auto r = take("region")) {
    o.region = *r;
  } else if (!Env("AWS_REGION").empty()) {
    o.region = Env("AWS_REGION");
  } else if (!Env("AWS_DEFAULT_REGION").empty()) {
    o.region = Env("AWS_DEFAULT_REGION");
  } else if (auto it = conf_section.find("region"); it != conf_section.end()) {
    o.region = it->second;
  }
  if (auto e = take("endpoint")) {
    o.endpoint = *e;
  } else if (!Env("AWS_ENDPOINT_URL_S3").empty()) {
    o.endpoint = Env("AWS_ENDPOINT_URL_S3");
  } else if (!Env("AWS_ENDPOINT_URL").empty()) {
    o.endpoint = Env("AWS_ENDPOINT_URL");
  } else if (auto it = conf_section.find("s3.endpoint_url"); it != conf_section.end()) {
    o.endpoint = it->second;
  } else if (auto it2 = conf_section.find("endpoint_url"); it2 != conf_section.end()) {
    o.endpoint = it2->second;
  }

  // Everything else.
  auto flag = [&](const char* name, bool& field) -> Status {
    if (auto v = take(name)) {
      auto b = ParseBool(*v);
      if (!b) return bad(name, *v);
      field = *b;
    }
    return Status::Ok();
  };
  auto number = [&](const char* name, auto& field) -> Status {
    if (auto v = take(name)) {
      auto n = ParseUint64(*v);
      if (!n) return bad(name, *v);
      field = static_cast<std::remove_reference_t<decltype(field)>>(*n);
    }
    return Status::Ok();
  };
  auto rate = [&](const char* name, double& field) -> Status {
    if (auto v = take(name)) {
      char* end = nullptr;
      double d = std::strtod(v->c_str(), &end);
      if (end == v->c_str() || *end != '\0' || d < 0 || d > 1) return bad(name, *v);
      field = d;
    }
    return Status::Ok();
  };
  if (auto v = take("path_style")) {
    auto b = ParseBool(*v);
    if (!b) return bad("path_style", *v);
    o.path_style = *b;
  }
  if (auto v = take("verify_md5")) {
    const std::string m = ToLower(*v);
    if (m == "always" || m == "true")
      o.verify_md5 = S3Options::EtagCheck::kAlways;
    else if (m == "never" || m == "false")
      o.verify_md5 = S3Options::EtagCheck::kNever;
    else if (m == "when_no_checksum")
      o.verify_md5 = S3Options::EtagCheck::kWhenNoChecksum;
    else
      return bad("verify_md5", *v + " (always|never|when_no_checksum)");
  }
  STRATA_RETURN_IF_ERROR(flag("verify_checksum", o.verify_checksum));
  STRATA_RETURN_IF_ERROR(flag("sign_payload", o.sign_payload));
  STRATA_RETURN_IF_ERROR(flag("tls_verify", o.http.tls_verify));
  if (auto v = take("rename_object")) {
    auto b = ParseBool(*v);
    if (!b) return bad("rename_object", *v);
    o.rename_object = *b;
  }
  if (auto v = take("ca_file")) o.http.tls_ca_file = *v;
  STRATA_RETURN_IF_ERROR(number("part_size", o.part_size));
  STRATA_RETURN_IF_ERROR(number("multipart_threshold", o.multipart_threshold));
  STRATA_RETURN_IF_ERROR(number("connect_timeout_ms", o.http.connect_timeout_ms));
  STRATA_RETURN_IF_ERROR(number("timeout_ms", o.http.io_timeout_ms));
  STRATA_RETURN_IF_ERROR(number("max_idle_connections", o.http.max_idle_per_host));
  if (auto v = take("max_retries")) {
    auto n = ParseUint64(*v);
    if (!n || *n > 100) return bad("max_retries", *v);
    o.retry.max_attempts = static_cast<int>(*n) + 1;
  }
  STRATA_RETURN_IF_ERROR(rate("fault_error_rate", o.http.faults.error_rate));
  STRATA_RETURN_IF_ERROR(rate("fault_drop_rate", o.http.faults.drop_rate));
  STRATA_RETURN_IF_ERROR(number("fault_seed", o.http.faults.seed));
  if (o.part_size < (5ull << 20) || o.part_size > kMaxSinglePut) {
    return bad("part_size", std::to_string(o.part_size) + " (5 MiB to 5 GiB)");
  }
  if (!p.empty()) {
    return Status::InvalidArgument("unknown parameter \"" + p.begin()->first + "\" in \"" +
                                   std::string(url) + "\"");
  }
  return std::make_pair(std::move(o), std::move(loc));
}

Result<std::unique_ptr<ObjectStore>> OpenS3Url(std::string_view url) {
  STRATA_ASSIGN_OR_RETURN(auto resolved, ResolveS3Url(url));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<S3Client> client,
                          S3Client::Create(std::move(resolved.first)));
  return client->OpenBucket(std::move(resolved.second.bucket), std::move(resolved.second.prefix));
}

}  // namespace strata::objstore
