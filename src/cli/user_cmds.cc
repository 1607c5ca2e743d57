// The user subcommands (see user_cmds.h). The admin call is authenticated
// with the root secret key: STRATA_ROOT_PASSWORD when set, else the one in
// DATA/credentials (the server's data directory, --data or STRATA_DATA).
#include "cli/user_cmds.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/http_client.h>
#include <strata/core/strings.h>

#include "cli/exit_codes.h"

namespace strata::cli {

namespace {

struct UserArgs {
  std::string endpoint;
  std::string data = "./strata-data";
  std::string name;
  std::string access_key;
  std::string secret_key;
  std::string policy_file;
  bool show = false;
  bool remove = false;
  bool json = false;
};

// The root secret for the admin API.
Result<std::string> RootSecret(const UserArgs& a, CLI::App* cmd) {
  if (const char* p = std::getenv("STRATA_ROOT_PASSWORD"); p != nullptr && *p)
    return std::string(p);
  std::string dir = a.data;
  if (const char* env = std::getenv("STRATA_DATA"); env != nullptr && cmd->count("--data") == 0)
    dir = env;
  std::ifstream in(dir + "/credentials");
  std::string line;
  while (in && std::getline(in, line)) {
    std::string_view t = Trim(line);
    if (t.empty() || t[0] == '#') continue;
    std::istringstream ls(line);
    std::string name, ak, sk;
    if (ls >> name >> ak >> sk) return sk;
  }
  return Status::PermissionDenied(
      "no root credentials: set STRATA_ROOT_PASSWORD or pass --data with the server's data "
      "directory (its credentials file holds the root secret)");
}

struct Reply {
  int status = 0;
  std::string body;
};

int ExitFor(int http_status) {
  switch (http_status) {
    case 400:
      return kExitUsage;
    case 401:
      return kExitAuth;
    case 404:
      return kExitNotFound;
    case 409:
      return kExitConflict;
    default:
      return kExitSomeFailed;
  }
}

class Admin {
 public:
  Admin(std::string cmd, const UserArgs& a) : cmd_(std::move(cmd)), a_(a) {}

  // One call; prints the error and sets *rc when it fails.
  std::optional<Reply> Call(CLI::App* app, std::string method, std::string target, std::string body,
                            int* rc) {
    auto secret = RootSecret(a_, app);
    if (!secret.ok()) {
      fmt::print(stderr, "strata user {}: {}\n", cmd_, secret.error().message());
      *rc = kExitAuth;
      return std::nullopt;
    }
    std::string ep = a_.endpoint;
    if (ep.empty()) {
      const char* env = std::getenv("STRATA_ADMIN_ENDPOINT");
      ep = env != nullptr && *env ? env : "http://127.0.0.1:9001";
    }
    http::ClientRequest req;
    std::string rest = ep;
    if (StartsWith(rest, "http://")) {
      rest = rest.substr(7);
    } else if (StartsWith(rest, "https://")) {
      req.scheme = "https";
      rest = rest.substr(8);
    }
    while (!rest.empty() && rest.back() == '/') rest.pop_back();
    size_t colon = rest.rfind(':');
    if (colon == std::string::npos || rest.find('/') != std::string::npos) {
      fmt::print(stderr,
                 "strata user {}: --endpoint must be http://HOST:PORT (the admin port), got {}\n",
                 cmd_, ep);
      *rc = kExitUsage;
      return std::nullopt;
    }
    req.host = rest.substr(0, colon);
    if (req.host.size() >= 2 && req.host.front() == '[')
      req.host = req.host.substr(1, req.host.size() - 2);
    auto port = ParseUint64(rest.substr(colon + 1));
    if (!port || *port == 0 || *port > 65535) {
      fmt::print(stderr, "strata user {}: bad port in --endpoint {}\n", cmd_, ep);
      *rc = kExitUsage;
      return std::nullopt;
    }
    req.port = static_cast<uint16_t>(*port);
    req.method = std::move(method);
    req.target = std::move(target);
    req.headers.emplace_back("Authorization", "Bearer " + *secret);
    if (!body.empty()) req.headers.emplace_back("Content-Type", "application/json");
    req.body = body;
    req.content_length = body.size();
    req.idempotent = req.method != "POST";
    http::ClientOptions co;
    co.connect_timeout_ms = 5'000;
    co.io_timeout_ms = 30'000;
    http::HttpClient client(co);
    auto resp = client.Send(req);
    if (!resp.ok()) {
      fmt::print(stderr,
                 "strata user {}: cannot reach the Strata admin API at {} ({}); is `strata server` "
                 "running? (--endpoint or STRATA_ADMIN_ENDPOINT names its admin address)\n",
                 cmd_, ep, resp.error().message());
      *rc = kExitUnavailable;
      return std::nullopt;
    }
    Reply r;
    r.status = (*resp)->status();
    auto all = (*resp)->ReadAll(1 << 20);
    if (all.ok()) r.body = std::move(*all);
    if (r.status >= 300) {
      auto j = nlohmann::json::parse(r.body, nullptr, false);
      std::string msg = r.body;
      if (!j.is_discarded() && j.is_object() && j.contains("message") && j["message"].is_string())
        msg = (j.contains("error") && j["error"].is_string() ? j["error"].get<std::string>() + ": "
                                                             : "") +
              j["message"].get<std::string>();
      fmt::print(stderr, "strata user {}: {} (HTTP {})\n", cmd_, Trim(msg), r.status);
      *rc = ExitFor(r.status);
      return std::nullopt;
    }
    return r;
  }

 private:
  std::string cmd_;
  const UserArgs& a_;
};

std::string UserPath(const std::string& name) {
  return "/admin/v1/users/" + UriEncode(name, false);
}

int CmdAdd(CLI::App* app, const UserArgs& a) {
  int rc = kExitOk;
  nlohmann::json req = {{"name", a.name}};
  if (!a.access_key.empty()) req["access_key"] = a.access_key;
  if (!a.secret_key.empty()) req["secret_key"] = a.secret_key;
  auto r = Admin("add", a).Call(app, "POST", "/admin/v1/users", req.dump(), &rc);
  if (!r) return rc;
  auto j = nlohmann::json::parse(r->body, nullptr, false);
  if (j.is_discarded() || !j.contains("access_key")) {
    fmt::print(stderr, "strata user add: unexpected reply: {}\n", r->body);
    return kExitSomeFailed;
  }
  fmt::print("user {} created\n  AccessKey: {}\n  SecretKey: {}\n", j["name"].get<std::string>(),
             j["access_key"].get<std::string>(), j["secret_key"].get<std::string>());
  return kExitOk;
}

int CmdRm(CLI::App* app, const UserArgs& a) {
  int rc = kExitOk;
  auto r = Admin("rm", a).Call(app, "DELETE", UserPath(a.name), "", &rc);
  if (!r) return rc;
  fmt::print("user {} removed\n", a.name);
  return kExitOk;
}

int CmdLs(CLI::App* app, const UserArgs& a) {
  int rc = kExitOk;
  auto r = Admin("ls", a).Call(app, "GET", "/admin/v1/users", "", &rc);
  if (!r) return rc;
  if (a.json) {
    fmt::print("{}", r->body);
    return kExitOk;
  }
  auto j = nlohmann::json::parse(r->body, nullptr, false);
  if (j.is_discarded() || !j.contains("users")) {
    fmt::print(stderr, "strata user ls: unexpected reply: {}\n", r->body);
    return kExitSomeFailed;
  }
  fmt::print("{:<24} {:<24} {}\n", "NAME", "ACCESS KEY", "POLICY");
  for (const auto& u : j["users"]) {
    std::string pol = u.value("admin", false)        ? "(root: everything)"
                      : u.value("has_policy", false) ? "yes"
                                                     : "-";
    fmt::print("{:<24} {:<24} {}\n", u.value("name", ""), u.value("access_key", ""), pol);
  }
  return kExitOk;
}

int CmdPolicy(CLI::App* app, const UserArgs& a) {
  int rc = kExitOk;
  const int modes = (a.show ? 1 : 0) + (a.remove ? 1 : 0) + (a.policy_file.empty() ? 0 : 1);
  if (modes != 1) {
    fmt::print(stderr, "strata user policy: give one of FILE (or - for stdin), --show, --delete\n");
    return kExitUsage;
  }
  Admin admin("policy", a);
  if (a.show) {
    auto r = admin.Call(app, "GET", UserPath(a.name) + "/policy", "", &rc);
    if (!r) return rc;
    fmt::print("{}\n", Trim(r->body));
    return kExitOk;
  }
  if (a.remove) {
    auto r = admin.Call(app, "DELETE", UserPath(a.name) + "/policy", "", &rc);
    if (!r) return rc;
    fmt::print("policy of user {} removed\n", a.name);
    return kExitOk;
  }
  std::string doc;
  if (a.policy_file == "-") {
    doc.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(a.policy_file, std::ios::binary);
    if (!in) {
      fmt::print(stderr, "strata user policy: cannot read {}\n", a.policy_file);
      return kExitNotFound;
    }
    doc.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto r = admin.Call(app, "PUT", UserPath(a.name) + "/policy", doc, &rc);
  if (!r) return rc;
  fmt::print("policy of user {} set\n", a.name);
  return kExitOk;
}

}  // namespace

void RegisterUserCommands(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<UserArgs>();
  auto* user = app.add_subcommand(
      "user", "Manage the S3 users of a running strata server (through its admin port)");
  user->require_subcommand(1);
  auto common = [a](CLI::App* c) {
    c->add_option(
        "--endpoint", a->endpoint,
        "Admin API of the server (default STRATA_ADMIN_ENDPOINT or http://127.0.0.1:9001)");
    c->add_option("--data", a->data,
                  "The server's data directory, for the root secret in its credentials file "
                  "(STRATA_ROOT_PASSWORD takes precedence)")
        ->capture_default_str();
  };
  auto wrap = [exit_code](CLI::App* c, std::function<int(CLI::App*)> fn) {
    c->callback([exit_code, c, fn = std::move(fn)] {
      try {
        *exit_code = fn(c);
      } catch (const std::exception& e) {
        fmt::print(stderr, "strata: internal error: {}\n", e.what());
        *exit_code = kExitSomeFailed;
      }
    });
  };
  auto* add =
      user->add_subcommand("add", "Create a user (keys generated unless given); works at once");
  add->add_option("name", a->name, "User name (1-64 of A-Z a-z 0-9 +=,.@_-)")->required();
  add->add_option("--access-key", a->access_key, "Access key to use instead of a generated one");
  add->add_option("--secret-key", a->secret_key, "Secret key to use instead of a generated one");
  common(add);
  wrap(add, [a](CLI::App* c) { return CmdAdd(c, *a); });
  auto* rm = user->add_subcommand("rm", "Remove a user; its keys stop working at once");
  rm->add_option("name", a->name, "User name")->required();
  common(rm);
  wrap(rm, [a](CLI::App* c) { return CmdRm(c, *a); });
  auto* ls =
      user->add_subcommand("ls", "List users (names, access keys, whether they have a policy)");
  ls->add_flag("--json", a->json, "Print the admin API's JSON");
  common(ls);
  wrap(ls, [a](CLI::App* c) { return CmdLs(c, *a); });
  auto* pol = user->add_subcommand(
      "policy", "Set (FILE, or - for stdin), --show or --delete a user's IAM-style policy");
  pol->add_option("name", a->name, "User name")->required();
  pol->add_option("file", a->policy_file, "Policy document (JSON), - for stdin");
  pol->add_flag("--show", a->show, "Print the user's policy");
  pol->add_flag("--delete", a->remove, "Remove the user's policy");
  common(pol);
  wrap(pol, [a](CLI::App* c) { return CmdPolicy(c, *a); });
}

}  // namespace strata::cli
