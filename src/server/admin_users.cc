// The admin API for users (see admin_users.h).
#include "server/admin_users.h"

#include <string>

#include <nlohmann/json.hpp>

#include <strata/core/strings.h>

namespace strata::server {

namespace {

using nlohmann::json;

void Reply(http::ResponseWriter& w, int status, const json& body) {
  w.SetStatus(status);
  w.AddHeader("Content-Type", "application/json");
  (void)w.Send(body.dump() + "\n");
}

void Error(http::ResponseWriter& w, int status, std::string_view code, std::string_view message) {
  Reply(w, status, json{{"error", code}, {"message", message}});
}

// Compares without leaking the position of the first difference.
bool SecretEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size() || b.empty()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

void FromStatus(http::ResponseWriter& w, const Status& st) {
  std::string m = st.message();
  // S3 frontend errors are "Code: text" (MalformedPolicy from the policy parser).
  size_t colon = m.find(": ");
  std::string code;
  if (colon != std::string::npos && colon < 48 && m.find(' ') > colon) {
    code = m.substr(0, colon);
    m = m.substr(colon + 2);
  }
  int status = 500;
  switch (st.code()) {
    case StatusCode::kNotFound:
      status = 404;
      if (code.empty()) code = "NoSuchUser";
      break;
    case StatusCode::kAlreadyExists:
      status = 409;
      if (code.empty()) code = "UserExists";
      break;
    case StatusCode::kResourceExhausted:
      status = 413;
      if (code.empty()) code = "TooLarge";
      break;
    case StatusCode::kInvalidArgument:
      status = 400;
      if (code.empty()) code = "InvalidArgument";
      break;
    default:
      if (code.empty()) code = "InternalError";
      break;
  }
  Error(w, status, code, m);
}

}  // namespace

void AdminUsers(http::Request& req, http::ResponseWriter& w, s3::UserStore* store,
                const s3::User& root) {
  if (store == nullptr) return Error(w, 503, "Unavailable", "the S3 service is not running");
  auto auth = req.Header("authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (!auth || !StartsWith(*auth, kBearer) ||
      !SecretEquals(Trim(auth->substr(kBearer.size())), root.secret_key)) {
    w.AddHeader("WWW-Authenticate", "Bearer");
    return Error(w, 401, "Unauthorized",
                 "admin calls need \"Authorization: Bearer <root secret key>\"");
  }
  std::string_view rest =
      std::string_view(req.path).substr(std::string_view(kAdminUsersPath).size());
  auto body = [&]() -> Result<std::string> { return req.ReadAllBody(64 * 1024); };
  if (rest.empty() || rest == "/") {
    if (req.method == "GET") {
      json users = json::array();
      for (const s3::User& u : store->List()) {
        users.push_back({{"name", u.name},
                         {"access_key", u.access_key},
                         {"admin", u.admin},
                         {"has_policy", !u.policy.empty()}});
      }
      return Reply(w, 200, json{{"users", std::move(users)}});
    }
    if (req.method == "POST") {
      auto b = body();
      if (!b.ok()) return FromStatus(w, b.error());
      json j = json::parse(*b, nullptr, false);
      if (j.is_discarded() || !j.is_object() || !j.contains("name") || !j["name"].is_string())
        return Error(w, 400, "InvalidArgument",
                     "expected {\"name\": ..., \"access_key\"?, \"secret_key\"?}");
      s3::User u;
      u.name = j["name"].get<std::string>();
      if (j.contains("access_key") && j["access_key"].is_string())
        u.access_key = j["access_key"].get<std::string>();
      if (j.contains("secret_key") && j["secret_key"].is_string())
        u.secret_key = j["secret_key"].get<std::string>();
      auto added = store->Add(std::move(u));
      if (!added.ok()) return FromStatus(w, added.error());
      return Reply(w, 201,
                   json{{"name", added->name},
                        {"access_key", added->access_key},
                        {"secret_key", added->secret_key}});
    }
    return Error(w, 405, "MethodNotAllowed", "use GET or POST on " + std::string(kAdminUsersPath));
  }
  // /NAME or /NAME/policy
  rest.remove_prefix(1);
  std::string_view name = rest.substr(0, rest.find('/'));
  std::string_view sub = rest.size() > name.size() ? rest.substr(name.size()) : "";
  auto decoded = UriDecode(name);
  if (!decoded || decoded->empty())
    return Error(w, 400, "InvalidArgument", "bad user name in path");
  if (sub.empty()) {
    if (req.method == "GET") {
      auto u = store->Find(*decoded);
      if (!u) return Error(w, 404, "NoSuchUser", "user \"" + *decoded + "\" does not exist");
      return Reply(w, 200,
                   json{{"name", u->name},
                        {"access_key", u->access_key},
                        {"has_policy", !u->policy.empty()}});
    }
    if (req.method == "DELETE") {
      Status st = store->Remove(*decoded);
      if (!st.ok()) return FromStatus(w, st);
      w.SetStatus(204);
      (void)w.Send("");
      return;
    }
    return Error(w, 405, "MethodNotAllowed", "use GET or DELETE on a user");
  }
  if (sub != "/policy")
    return Error(w, 404, "NotFound", "unknown admin path " + std::string(req.path));
  if (req.method == "GET") {
    auto u = store->Find(*decoded);
    if (!u) return Error(w, 404, "NoSuchUser", "user \"" + *decoded + "\" does not exist");
    if (u->policy.empty())
      return Error(w, 404, "NoSuchUserPolicy", "user \"" + *decoded + "\" has no policy");
    w.SetStatus(200);
    w.AddHeader("Content-Type", "application/json");
    (void)w.Send(u->policy);
    return;
  }
  if (req.method == "PUT" || req.method == "DELETE") {
    std::optional<std::string> doc;
    if (req.method == "PUT") {
      auto b = body();
      if (!b.ok()) return FromStatus(w, b.error());
      doc = std::move(*b);
    }
    Status st = store->SetPolicy(*decoded, std::move(doc));
    if (!st.ok()) return FromStatus(w, st);
    w.SetStatus(204);
    (void)w.Send("");
    return;
  }
  Error(w, 405, "MethodNotAllowed", "use GET, PUT or DELETE on a user's policy");
}

}  // namespace strata::server
