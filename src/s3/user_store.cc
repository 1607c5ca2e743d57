// The runtime user table (see include/strata/s3/user_store.h). File format:
// {"users": [{"name", "access_key", "secret_key", "policy"?}]}, policy being
// the document text as the admin set it.
#include <sys/stat.h>

#include <algorithm>
#include <random>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/file_util.h>
#include <strata/core/strings.h>
#include <strata/s3/user_store.h>

#include "s3/policy.h"

namespace strata::s3 {

namespace {

std::string RandomString(size_t n, std::string_view alphabet) {
  std::random_device rd;
  std::uniform_int_distribution<size_t> dist(0, alphabet.size() - 1);
  std::string s(n, ' ');
  for (char& c : s) c = alphabet[dist(rd)];
  return s;
}

}  // namespace

std::string NewAccessKey() {
  return "STRATA" + RandomString(14, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
}

std::string NewSecretKey() {
  return RandomString(40, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
}

namespace {

bool ValidName(std::string_view n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          std::string_view("+=,.@_-").find(c) != std::string_view::npos))
      return false;
  }
  return true;
}

bool ValidKey(std::string_view k, size_t min) {
  if (k.size() < min || k.size() > 128) return false;
  for (char c : k)
    if (c <= ' ' || c > '~') return false;
  return true;
}

Result<std::shared_ptr<const UserStore::Entry>> MakeEntry(User u) {
  auto e = std::make_shared<UserStore::Entry>();
  if (!u.policy.empty()) {
    STRATA_ASSIGN_OR_RETURN(e->policy, Policy::Parse(u.policy, PolicyKind::kIdentity));
  }
  e->user = std::move(u);
  return std::shared_ptr<const UserStore::Entry>(std::move(e));
}

Result<std::vector<User>> ParseUsers(const std::string& path, const std::string& text) {
  std::vector<User> users;
  std::string_view t = Trim(text);
  if (!t.empty() && t.front() == '{') {
    auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("users") || !j["users"].is_array())
      return Status::Corruption(path + ": expected {\"users\": [...]}");
    for (const auto& x : j["users"]) {
      if (!x.is_object() || !x.contains("name") || !x["name"].is_string() ||
          !x.contains("access_key") || !x["access_key"].is_string() || !x.contains("secret_key") ||
          !x["secret_key"].is_string())
        return Status::Corruption(path + ": each user needs name, access_key and secret_key");
      User u;
      u.name = x["name"].get<std::string>();
      u.access_key = x["access_key"].get<std::string>();
      u.secret_key = x["secret_key"].get<std::string>();
      if (x.contains("policy") && x["policy"].is_string())
        u.policy = x["policy"].get<std::string>();
      users.push_back(std::move(u));
    }
    return users;
  }
  // Legacy: "name access_key secret_key" per line, '#' comments.
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (Trim(line).empty() || Trim(line)[0] == '#') continue;
    std::istringstream ls(line);
    User u;
    if (!(ls >> u.name >> u.access_key >> u.secret_key))
      return Status::Corruption(
          fmt::format("{}:{}: expected \"name access_key secret_key\"", path, n));
    users.push_back(std::move(u));
  }
  return users;
}

}  // namespace

UserStore::~UserStore() = default;

Result<std::unique_ptr<UserStore>> UserStore::Open(std::vector<User> fixed, std::string path) {
  std::unique_ptr<UserStore> s(new UserStore());
  s->path_ = std::move(path);
  auto t = std::make_shared<Table>();
  auto add = [&t](User u) -> Status {
    if (t->by_key.count(u.access_key)) return Status::Ok();  // first one wins (root)
    STRATA_ASSIGN_OR_RETURN(auto e, MakeEntry(std::move(u)));
    t->by_key.emplace(e->user.access_key, e);
    t->ordered.push_back(std::move(e));
    return Status::Ok();
  };
  for (User& u : fixed) {
    s->fixed_keys_.push_back(u.access_key);
    STRATA_RETURN_IF_ERROR(add(std::move(u)));
  }
  if (!s->path_.empty()) {
    struct stat st;
    if (::stat(s->path_.c_str(), &st) == 0) {
      STRATA_ASSIGN_OR_RETURN(std::string text, ReadFileToString(s->path_));
      STRATA_ASSIGN_OR_RETURN(auto users, ParseUsers(s->path_, text));
      for (User& u : users) {
        u.admin = false;
        Status st2 = add(std::move(u));
        if (!st2.ok()) return st2.WithContext(s->path_);
      }
    }
  }
  s->table_ = std::move(t);
  return s;
}

Status UserStore::Publish(std::shared_ptr<Table> next) {
  if (!path_.empty()) {
    nlohmann::json users = nlohmann::json::array();
    for (const auto& e : next->ordered) {
      if (std::find(fixed_keys_.begin(), fixed_keys_.end(), e->user.access_key) !=
          fixed_keys_.end())
        continue;
      nlohmann::json u = {{"name", e->user.name},
                          {"access_key", e->user.access_key},
                          {"secret_key", e->user.secret_key}};
      if (!e->user.policy.empty()) u["policy"] = e->user.policy;
      users.push_back(std::move(u));
    }
    nlohmann::json doc = {{"users", std::move(users)}};
    // Secrets: readable by the owner alone.
    STRATA_RETURN_IF_ERROR(WriteFileAtomic(path_, doc.dump(2) + "\n", {.mode = 0600}));
  }
  std::unique_lock lock(mu_);
  table_ = std::move(next);
  return Status::Ok();
}

Result<User> UserStore::Add(User u) {
  if (!ValidName(u.name))
    return Status::InvalidArgument("user name \"" + u.name +
                                   "\" is invalid: 1-64 characters of A-Z a-z 0-9 +=,.@_-");
  if (u.access_key.empty()) u.access_key = NewAccessKey();
  if (u.secret_key.empty()) u.secret_key = NewSecretKey();
  if (!ValidKey(u.access_key, 3))
    return Status::InvalidArgument("an access key is 3-128 printable characters without spaces");
  if (!ValidKey(u.secret_key, 8))
    return Status::InvalidArgument("a secret key is 8-128 printable characters without spaces");
  u.admin = false;
  std::lock_guard w(write_mu_);
  auto cur = Snapshot();
  for (const auto& e : cur->ordered) {
    if (e->user.name == u.name)
      return Status::AlreadyExists("user \"" + u.name + "\" already exists");
    if (e->user.access_key == u.access_key)
      return Status::AlreadyExists("access key \"" + u.access_key + "\" is taken");
  }
  STRATA_ASSIGN_OR_RETURN(auto entry, MakeEntry(u));
  auto next = std::make_shared<Table>(*cur);
  next->by_key.emplace(u.access_key, entry);
  next->ordered.push_back(std::move(entry));
  STRATA_RETURN_IF_ERROR(Publish(std::move(next)));
  return u;
}

Status UserStore::Remove(std::string_view name) {
  std::lock_guard w(write_mu_);
  auto cur = Snapshot();
  auto next = std::make_shared<Table>(*cur);
  auto it = std::find_if(next->ordered.begin(), next->ordered.end(),
                         [&](const auto& e) { return e->user.name == name; });
  if (it == next->ordered.end())
    return Status::NotFound("user \"" + std::string(name) + "\" does not exist");
  if (std::find(fixed_keys_.begin(), fixed_keys_.end(), (*it)->user.access_key) !=
      fixed_keys_.end())
    return Status::InvalidArgument("user \"" + std::string(name) +
                                   "\" is the root user of this server and cannot be removed");
  next->by_key.erase((*it)->user.access_key);
  next->ordered.erase(it);
  return Publish(std::move(next));
}

Status UserStore::SetPolicy(std::string_view name, std::optional<std::string> policy) {
  std::lock_guard w(write_mu_);
  auto cur = Snapshot();
  auto next = std::make_shared<Table>(*cur);
  for (auto& e : next->ordered) {
    if (e->user.name != name) continue;
    if (std::find(fixed_keys_.begin(), fixed_keys_.end(), e->user.access_key) != fixed_keys_.end())
      return Status::InvalidArgument("the root user is allowed everything; it takes no policy");
    User u = e->user;
    u.policy = policy.value_or("");
    STRATA_ASSIGN_OR_RETURN(auto entry, MakeEntry(std::move(u)));
    e = entry;
    next->by_key[entry->user.access_key] = entry;
    return Publish(std::move(next));
  }
  return Status::NotFound("user \"" + std::string(name) + "\" does not exist");
}

std::optional<User> UserStore::Find(std::string_view name) const {
  auto t = Snapshot();
  for (const auto& e : t->ordered)
    if (e->user.name == name) return e->user;
  return std::nullopt;
}

std::vector<User> UserStore::List() const {
  auto t = Snapshot();
  std::vector<User> out;
  out.reserve(t->ordered.size());
  for (const auto& e : t->ordered) out.push_back(e->user);
  return out;
}

}  // namespace strata::s3
